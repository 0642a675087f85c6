"""Rebuild the vendored samples in this folder from the shared datasets (see NOTICE.md).

    python tasks/demo/samples/make_samples.py /path/to/shared/data

Deterministic: the same input files give byte-identical samples.
- squad_train.json: every question of the 17 SQuAD v1.1 TRAIN articles in squad_subset (the 3 official dev
  articles Genghis_Khan, Huguenot and Immune_system are held out for evaluation and not copied), grouped by
  article and paragraph: [{"title", "paragraphs": [{"context", "qas": [[id, question, answer, answer_start]]}]}].
- davidson_train.jsonl: a training slice of Davidson et al.'s tweets: ids whose hash is outside the held-out
  slice (`held_out` below), at most 1,000 hate_speech and 2,000 other rows (1,560 offensive_language + 440
  neither, the source's proportion), fields id/text/label as in the source (0 hate, 1 offensive, 2 neither).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import OrderedDict
from pathlib import Path

HERE = Path(__file__).resolve().parent
HELD_OUT_SQUAD = {"Genghis_Khan", "Huguenot", "Immune_system"}
DAVIDSON_HELD_OUT = 0.2  # ids hashing below this fraction are the held-out slice (never vendored, never trained)


def fraction(key: str) -> float:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16 ** 12


def davidson_held_out(row_id) -> bool:
    return fraction(f"davidson:{row_id}") < DAVIDSON_HELD_OUT


def squad(data_dir: Path) -> None:
    articles: OrderedDict[str, OrderedDict[int, dict]] = OrderedDict()
    with open(data_dir / "squad_subset" / "squad_subset.jsonl", encoding="utf-8") as handle:
        for line in handle:
            r = json.loads(line)
            if r["source_split"] != "squad_v1.1_train" or r["title"] in HELD_OUT_SQUAD:
                continue
            paragraph = articles.setdefault(r["title"], OrderedDict()).setdefault(
                r["paragraph_index"], {"context": r["context"], "qas": []})
            paragraph["qas"].append([r["id"], r["question"], r["answers"]["text"][0], r["answers"]["answer_start"][0]])
    out = [{"title": t, "paragraphs": list(ps.values())} for t, ps in articles.items()]
    (HERE / "squad_train.json").write_text(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n",
                                          encoding="utf-8")


def davidson(data_dir: Path) -> None:
    quota = {0: 1000, 1: 1560, 2: 440}
    rows = []
    with open(data_dir / "davidson_hate" / "labeled_data.jsonl", encoding="utf-8") as handle:
        candidates = [json.loads(line) for line in handle]
    candidates = [r for r in candidates if not davidson_held_out(r["id"])]
    candidates.sort(key=lambda r: fraction(f"davidson-sample:{r['id']}"))
    for r in candidates:
        if quota[r["label"]] > 0:
            quota[r["label"]] -= 1
            rows.append({"id": r["id"], "text": r["text"], "label": r["label"]})
    rows.sort(key=lambda r: r["id"])
    (HERE / "davidson_train.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                              encoding="utf-8")


if __name__ == "__main__":
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data")
    squad(source)
    davidson(source)
