"""Benchmark: how good the demo NLI ensemble gets on SNLI test when it trains on SNLI dev, and how long it takes.

    .venv/bin/python bench/bench_nli_demo.py [--members 3] [--top-layers 3] [--lr 1e-4] [--epochs 2]
        [--max-steps 2000] [--min-steps 150] [--batch-size 16] [--max-length 128] [--select-on error]
        [--train N] [--eval 1000] [--no-demo-items] [--json out.json]

Training data, as the demo's NLI task has it once `load_demo --base-data` imported SNLI dev (collection
"snli-dev"): the NLI demo's own 60 train items (tasks/demo/nli.json) repeated 5x (modelzoo.demo.DEMO_REPEAT) and
SNLI **dev** (DATA_DIR/snli/dev.jsonl, 9,842 pairs) less the held-out slice the importer carves from an import of
train rows (tasks.importing.held_out_keys: the keys whose hash of "heldout:<key>" is below 0.05, at most 500), optionally
cut to a stable --train rows. Model inputs have the NLI kind's shape ({"text": premise, "text_pair":
hypothesis}, tasks/kinds/nli.py through ClassificationKind.model_input). The recipe is the cached-top recipe of
zoo/recipes.py (real all-MiniLM-L6-v2), one member per seed 0..members-1, with the settings given (defaults: the
classification head's recipe defaults on RecipeSpec).

Scored on the stable 1,000-pair sample of SNLI **test** that `evaluate_demo` uses (modelzoo.demo.held_out_sets:
the pairs whose hash of "snli-test:<idx>" is lowest), with each member loaded by zoo.runtime.Predictor and the
ensemble's mean probabilities (mean_probs). Prints the ensemble's and each member's accuracy, the training wall and
CPU seconds, and the members' steps. No database. Exits non-zero when the data is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LABELS = ["entailment", "neutral", "contradiction"]  # NLIConfig's labels, in id order
DEMO_REPEAT = 5  # modelzoo.demo.DEMO_REPEAT
HELDOUT_FRACTION, HELDOUT_MAX = 0.05, 500  # the importer's held-out slice of an import of train rows


def fraction(key: str) -> float:
    """modelzoo.demo.fraction / zoo.recipes.stable_fraction."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16 ** 12


def payload_hash(*parts) -> str:
    """tasks.models.payload_hash: an imported row's key."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def row(premise: str, hypothesis: str, label: str) -> tuple[dict, str, str]:
    """(model input, target, item key) as the NLI kind and the importer form them."""
    context, inputs = {"premise": premise}, {"hypothesis": hypothesis.strip()}
    return {"text": premise, "text_pair": inputs["hypothesis"]}, label, payload_hash(context, inputs, label)


def training_rows(data_dir: Path, limit: int | None, demo_items: bool) -> tuple[list, int]:
    rows, seen = [], set()
    for r in jsonl(data_dir / "snli" / "dev.jsonl"):
        item = row(r["premise"], r["hypothesis"], r["label"])
        if item[2] not in seen:  # the importer keeps one row per key
            seen.add(item[2])
            rows.append(item)
    ranked = sorted(range(len(rows)), key=lambda i: fraction("heldout:" + rows[i][2]))  # tasks.importing
    held = {i for i in ranked[:HELDOUT_MAX] if fraction("heldout:" + rows[i][2]) < HELDOUT_FRACTION}
    rows = [r for i, r in enumerate(rows) if i not in held]
    if limit is not None and limit < len(rows):
        rows = sorted(rows, key=lambda r: fraction("bench:" + r[2]))[:limit]
    if demo_items:
        demo = json.loads((ROOT / "tasks" / "demo" / "nli.json").read_text(encoding="utf-8"))["train"]
        own = [row(i["context"]["premise"], i["input"]["hypothesis"], i["target"]) for i in demo]
        rows = own * DEMO_REPEAT + rows
    return rows, len(held)


def test_sample(data_dir: Path, limit: int) -> list[dict]:
    """modelzoo.demo.held_out_sets for NLI: `_stable_sample(rows, "snli-test", limit)`."""
    rows = jsonl(data_dir / "snli" / "test.jsonl")
    if len(rows) <= limit:
        return rows
    return sorted(rows, key=lambda r: fraction(f"snli-test:{r.get('id', r.get('idx'))}"))[:limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--top-layers", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--min-steps", type=int, default=150)
    parser.add_argument("--max-steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--select-on", choices=("loss", "error"), default="error")
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--evals", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--train", type=int, default=None, help="at most this many SNLI dev rows (a stable sample)")
    parser.add_argument("--eval", type=int, default=1000, help="SNLI test pairs (the stable sample of evaluate_demo)")
    parser.add_argument("--no-demo-items", action="store_true", help="leave out the NLI demo's own 60 rows x5")
    parser.add_argument("--keep", default=None, help="keep the members in this folder (default: a temp folder)")
    parser.add_argument("--json", default=None, help="append the result as one JSON line to this file")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("DATA_DIR", ROOT.parent / "shared" / "data"))
    if not (data_dir / "snli" / "dev.jsonl").is_file() or not (data_dir / "snli" / "test.jsonl").is_file():
        sys.exit(f"bench_nli_demo: {data_dir}/snli/{{dev,test}}.jsonl not found (set DATA_DIR): cannot run")

    from zoo import recipes
    from zoo.aggregation import get_strategy
    from zoo.runtime import Predictor
    from zoo.training import TrainExample

    rows, held = training_rows(data_dir, args.train, not args.no_demo_items)
    test = test_sample(data_dir, args.eval)
    spec = recipes.RecipeSpec(head="classification", labels=LABELS, top_layers=args.top_layers, lr=args.lr,
                              epochs=args.epochs, min_steps=args.min_steps, max_steps=args.max_steps,
                              batch_size=args.batch_size, max_length=args.max_length, select_on=args.select_on,
                              patience=args.patience, evals=args.evals, warmup=args.warmup)
    examples = [TrainExample(m, t) for m, t, _ in rows]
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-nli-demo-"))
    seeds = list(range(args.members))
    wall, cpu = time.perf_counter(), time.process_time()
    metrics = recipes.train_ensemble(examples, spec, [out / f"m{s}" for s in seeds], seeds, keys=[k for *_, k in rows])
    train_wall, train_cpu = time.perf_counter() - wall, time.process_time() - cpu

    wall = time.perf_counter()
    predictors = [Predictor.load(out / f"m{s}") for s in seeds]
    aggregate = get_strategy("mean_probs")
    inputs = [{"text": r["premise"], "text_pair": r["hypothesis"].strip()} for r in test]
    gold = [r["label"] for r in test]
    per_model: list[list[dict]] = [[] for _ in predictors]
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]["text"]) + len(inputs[i]["text_pair"]))
    for start in range(0, len(order), 64):
        batch = [inputs[i] for i in order[start:start + 64]]
        for m, p in enumerate(predictors):
            per_model[m] += p.predict(batch)
    position = {i: n for n, i in enumerate(order)}
    per_model = [[preds[position[i]] for i in range(len(inputs))] for preds in per_model]
    ensemble = [aggregate([m[i] for m in per_model]) for i in range(len(inputs))]
    eval_wall = time.perf_counter() - wall

    def accuracy(predictions: list[dict]) -> float:
        return sum(p["label"] == g for p, g in zip(predictions, gold, strict=True)) / len(gold)

    result = {
        "train_rows": len(rows), "heldout_slice": held, "test_pairs": len(test), "members": len(seeds),
        "spec": {k: getattr(spec, k) for k in ("top_layers", "lr", "epochs", "min_steps", "max_steps", "batch_size",
                                               "max_length", "select_on", "patience", "evals", "warmup")},
        "accuracy": round(accuracy(ensemble), 4), "member_accuracy": [round(accuracy(m), 4) for m in per_model],
        "train_wall_s": round(train_wall, 1), "train_cpu_s": round(train_cpu, 1), "eval_wall_s": round(eval_wall, 1),
        "cache_s": metrics[0]["cache_seconds"], "steps": [m["steps"] for m in metrics],
        "member_s": [m["seconds"] for m in metrics], "stopped_early": [m["stopped_early"] for m in metrics],
        "dev_errors": [m.get("dev_errors") for m in metrics],
    }
    print("| train rows | members | top layers | lr | epochs | max steps | batch | max len | select | updates/member "
          "| SNLI test n | accuracy | members' accuracy | train wall s | train CPU s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|---:|---:|")
    print(f"| {len(rows)} | {len(seeds)} | {spec.top_layers} | {spec.lr:g} | {spec.epochs} | {spec.max_steps} | "
          f"{spec.batch_size} | {spec.max_length} | {spec.select_on} | {'/'.join(str(s) for s in result['steps'])} | "
          f"{len(test)} | **{result['accuracy']:.3f}** | {' / '.join(f'{a:.3f}' for a in result['member_accuracy'])} | "
          f"{train_wall:.0f} | {train_cpu:.0f} |")
    print(json.dumps(result))
    if args.json:
        with open(args.json, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(result) + "\n")
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
