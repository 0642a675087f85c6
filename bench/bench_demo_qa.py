"""Benchmark: how good a cached-top QA member gets on held-out SQuAD questions, and how long it takes.

    nice -n 10 .venv/bin/python bench/bench_demo_qa.py [--train 3939] [--top-layers 2] [--epochs 1]
        [--eval 150] [--max-length 256] [--lr 2e-4] [--members 1] [--bf16]

Trains on questions of the vendored SQuAD v1.1 TRAIN articles (tasks/demo/samples/squad_train.json, the demo's
QA training data; a shuffled subset of --train), with the demo's recipe (zoo.recipes, real
all-MiniLM-L6-v2), and scores F1 / exact match (SQuAD normalisation, best over the reference answers) on a fixed
random sample of --eval questions of the 3 held-out SQuAD v1.1 DEV articles in DATA_DIR/squad_subset
(Genghis_Khan, Huguenot, Immune_system; never trained on). Prints wall and CPU seconds. No database. Exits
non-zero when the data is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=3939)
    parser.add_argument("--top-layers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--min-steps", type=int, default=150)
    parser.add_argument("--eval", type=int, default=150)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--bf16", action="store_true", help="train in bfloat16 autocast (where the CPU has it)")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("DATA_DIR", ROOT.parent / "shared" / "data"))
    held_out_file = data_dir / "squad_subset" / "squad_subset.jsonl"
    if not held_out_file.is_file():
        sys.exit(f"bench_demo_qa: {held_out_file} not found (set DATA_DIR): cannot run")

    from tasks.kinds.qa import exact_match, f1_score
    from zoo import recipes
    from zoo.runtime import Predictor
    from zoo.training import TrainExample

    rows = []
    for article in json.loads((ROOT / "tasks/demo/samples/squad_train.json").read_text(encoding="utf-8")):
        for p in article["paragraphs"]:
            rows += [(qid, q, p["context"], a, s) for qid, q, a, s in p["qas"]]
    random.Random(0).shuffle(rows)
    rows = rows[:args.train]
    held = [json.loads(line) for line in held_out_file.open(encoding="utf-8")]
    held = [r for r in held if r["title"] in ("Genghis_Khan", "Huguenot", "Immune_system")]
    random.Random(1).shuffle(held)
    held = held[:args.eval]

    examples = [TrainExample({"question": q, "context": c}, {"text": a, "start": s}) for _, q, c, a, s in rows]
    spec = recipes.RecipeSpec(head="qa", labels=[], max_length=args.max_length, top_layers=args.top_layers,
                              epochs=args.epochs, lr=args.lr, min_steps=args.min_steps, bf16=args.bf16)
    out = Path(tempfile.mkdtemp(prefix="bench-demo-qa-"))
    seeds = list(range(args.members))
    wall, cpu = time.perf_counter(), time.process_time()
    metrics = recipes.train_ensemble(examples, spec, [out / f"m{s}" for s in seeds], seeds, keys=[r[0] for r in rows])
    train_wall, train_cpu = time.perf_counter() - wall, time.process_time() - cpu
    from zoo.aggregation import get_strategy

    predictors = [Predictor.load(out / f"m{s}") for s in seeds]
    aggregate = get_strategy("best_mean_span")
    wall = time.perf_counter()
    f1 = em = 0.0
    for start in range(0, len(held), 16):
        batch = held[start:start + 16]
        inputs = [{"question": r["question"], "context": r["context"]} for r in batch]
        per_model = [p.predict(inputs) for p in predictors]
        for i, r in enumerate(batch):
            text = aggregate([m[i] for m in per_model]).get("text", "")
            f1 += max(f1_score(text, g) for g in r["answers"]["text"])
            em += max(exact_match(text, g) for g in r["answers"]["text"])
    print("| train questions | top layers | training precision | updates/member | members | held-out n | F1 | EM | train wall s | train CPU s |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    steps = "/".join(str(m["steps"]) for m in metrics)
    precision = "bfloat16" if recipes.training_dtype(spec) is not None else "float32"
    print(f"| {len(rows)} | {args.top_layers} | {precision} | {steps} | {len(seeds)} | {len(held)} | {f1 / len(held):.3f} | "
          f"{em / len(held):.3f} | {train_wall:.0f} | {train_cpu:.0f} |")
    print(f"evaluation {time.perf_counter() - wall:.0f} s; member metrics: {json.dumps(metrics)[:600]}")


if __name__ == "__main__":
    main()
