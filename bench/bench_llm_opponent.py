"""Benchmark: the language model opponent (docs/llm-opponent.md) on held-out data — its accuracy before and after
the per-label offsets, and its verdict latency.

    nice -n 10 .venv/bin/python bench/bench_llm_opponent.py [--fit-rows 300] [--test-rows 0] [--threads 1]
        [--out docs/benchmarks/llm-opponent.json]

The packaged SmolLM2-135M-Instruct (local provider, llama.cpp in process), prompted as the platform prompts it
(`zoo.llm.prompts.opponent_prompt`, the demo tasks' descriptions as instructions, the platform's label words):

  SST-2     offsets fitted on a stable sample of --fit-rows SST-2 *train* rows (even across labels);
            held out: SST-2 dev, all 872 rows (binary: positive / negative)
  SNLI      offsets fitted on --fit-rows SNLI *dev* rows (the one NLI split here that may be fitted on);
            held out: SNLI test, a stable sample of --snli-test rows (3-way)

Accuracy is reported zero-shot (no offsets), with the offsets, the majority-class baseline and the predicted
label shares (a classifier that answers one label for everything is not a result). Latency: one provider call per
verdict (the opponent scores all label words in one call), p50 / p95 over the held-out rows. Needs DATA_DIR (default
../shared/data); fails (exit 1) when the data or the model package is missing. No Django: the model library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from zoo.llm.local import LocalProvider  # noqa: E402
from zoo.llm.opponent import LLMClassifier, accuracy, fit_offsets  # noqa: E402


def fraction(key: str) -> float:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def balanced(rows: list[tuple[dict, str]], limit: int, salt: str) -> list[tuple[dict, str]]:
    """A stable sample (hash order), one label at a time in turn."""
    by_label: dict[str, list[tuple[dict, str]]] = {}
    for i, row in enumerate(rows):
        by_label.setdefault(row[1], []).append((fraction(f"{salt}|{i}"), row))
    queues = [sorted(v, key=lambda p: p[0]) for _, v in sorted(by_label.items())]
    out: list[tuple[dict, str]] = []
    while len(out) < limit and any(queues):
        for q in queues:
            if q and len(out) < limit:
                out.append(q.pop(0)[1])
    return out


def sample(rows: list[tuple[dict, str]], limit: int, salt: str) -> list[tuple[dict, str]]:
    if not limit or limit >= len(rows):
        return rows
    order = sorted(range(len(rows)), key=lambda i: fraction(f"{salt}|{i}"))[:limit]
    return [rows[i] for i in sorted(order)]


def sst2(data: Path) -> tuple[list, list]:
    name = {0: "negative", 1: "positive"}
    train = [({"text": r["sentence"]}, name[r["label"]]) for r in jsonl(data / "sst2" / "train.jsonl")]
    dev = [({"text": r["sentence"]}, name[r["label"]]) for r in jsonl(data / "sst2" / "dev.jsonl")]
    return train, dev


def snli(data: Path) -> tuple[list, list]:
    def rows(split: str) -> list:
        return [({"text": r["premise"], "text_pair": r["hypothesis"]}, r["label"])
                for r in jsonl(data / "snli" / f"{split}.jsonl")]
    return rows("dev"), rows("test")


def description(slug: str) -> str:
    return json.loads((ROOT / "tasks" / "demo" / f"{slug}.json").read_text())["description"]


def run(name: str, provider, labels: list[str], instructions: str, field_names: tuple[str, str],
        fit_rows: list, test_rows: list) -> dict:
    classifier = LLMClassifier(provider, labels, instructions, field_names=field_names)
    t0 = time.perf_counter()
    fit_raw = classifier.raw_scores([r[0] for r in fit_rows])
    fit_s = time.perf_counter() - t0
    offsets = fit_offsets(fit_raw, [r[1] for r in fit_rows], labels)
    raw, seconds = [], []
    for model_input, _ in test_rows:
        started = time.perf_counter()
        raw.extend(classifier.raw_scores([model_input]))
        seconds.append(time.perf_counter() - started)
    gold = [r[1] for r in test_rows]

    def shares(offs: dict) -> dict:
        counts = Counter(max(labels, key=lambda lab: row[lab] + offs.get(lab, 0.0)) for row in raw)
        return {lab: round(counts[lab] / len(raw), 3) for lab in labels}

    ordered = sorted(seconds)
    report = {
        "task": name, "fitted_on": f"{len(fit_rows)} rows", "held_out": f"{len(test_rows)} rows",
        "accuracy_zero_shot": round(accuracy(raw, gold, {}, labels), 4),
        "accuracy_with_offsets": round(accuracy(raw, gold, offsets, labels), 4),
        "accuracy_on_fit_rows_before_after": [round(accuracy(fit_raw, [r[1] for r in fit_rows], {}, labels), 4),
                                              round(accuracy(fit_raw, [r[1] for r in fit_rows], offsets, labels), 4)],
        "majority_baseline": round(max(Counter(gold).values()) / len(gold), 4),
        "offsets": offsets, "predicted_shares_zero_shot": shares({}), "predicted_shares_with_offsets": shares(offsets),
        "verdict_latency_p50_ms": round(1000 * statistics.median(seconds), 1),
        "verdict_latency_p95_ms": round(1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
        "fit_seconds": round(fit_s, 1),
    }
    print(json.dumps(report, indent=1), flush=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit-rows", type=int, default=300)
    parser.add_argument("--sst2-test", type=int, default=0, help="SST-2 dev rows held out (0 = all 872)")
    parser.add_argument("--snli-test", type=int, default=600, help="SNLI test rows held out (a stable sample)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "llm-opponent.json"))
    args = parser.parse_args()
    data = Path(os.environ.get("DATA_DIR", ROOT.parent / "shared" / "data"))
    if not (data / "sst2" / "dev.jsonl").is_file() or not (data / "snli" / "test.jsonl").is_file():
        print(f"bench_llm_opponent: SST-2 / SNLI not found under {data} (set DATA_DIR): cannot run", file=sys.stderr)
        return 1
    provider = LocalProvider(threads=args.threads)
    t0 = time.perf_counter()
    provider.score("Text: \"fine\"\nLabel (positive or negative):", ["positive", "negative"])
    load_s = time.perf_counter() - t0

    sst_train, sst_dev = sst2(data)
    snli_dev, snli_test = snli(data)
    results = [
        run("SST-2 (fit: train sample; held out: dev)", provider, ["positive", "negative"], description("sentiment"),
            ("Text", "Second text"), balanced(sst_train, args.fit_rows, "sst2-fit"),
            sample(sst_dev, args.sst2_test, "sst2-dev")),
        run("SNLI (fit: dev sample; held out: test sample)", provider, ["entailment", "neutral", "contradiction"],
            description("nli"), ("Premise", "Hypothesis"), balanced(snli_dev, args.fit_rows, "snli-fit"),
            sample(snli_test, args.snli_test, "snli-test")),
    ]
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
              "machine": platform.processor() or platform.machine(), "model": provider.model,
              "threads": args.threads, "first_call_s (model load included)": round(load_s, 2), "results": results}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
