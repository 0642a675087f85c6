#!/usr/bin/env python
"""MiniLM (all-MiniLM-L6-v2, the default) against mpnet (all-mpnet-base-v2, opt-in: `make mpnet`) as the model in
the loop, on the same data, subsamples and seeds (issue 40, item 6; docs/benchmarks/encoders.md).

Three rounds, each trained with `zoo.training.train(TrainSpec(encoder=...))` and measured with
`zoo.runtime.Predictor`:

- nli-r1: round-1 NLI, trained on SNLI dev, measured on SNLI test (and, as a before-figure, on ANLI R1 test);
- sentiment: trained on SST-2 train, measured on SST-2 dev and on the positive/negative rows of DynaSent R1 and R2
  test (the model is binary, as SST-2 is; DynaSent's train splits are not in DATA_DIR);
- anli-r2: the round written from ANLI R1 dev: the round-1 NLI model continued on ANLI R1 dev (its folder is
  given as the encoder, so its head is kept), measured on ANLI R1 test.

Accuracy with a 95 % Wilson interval; mpnet - MiniLM with a 95 % paired bootstrap interval (same test rows).
Sizes are arguments: the defaults are a reduced-size CPU run. Library only (no Django); DATA_DIR holds the data
(/work/shared/data layout: sst2/, dynasent/, anli/, snli/). Writes JSON after every measurement (a run cut short
still leaves what finished) and a Markdown table at the end.

    nice -n 10 python bench/bench_encoders.py --train 1000 --test 500 --out var/bench/encoders
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NLI = ["entailment", "neutral", "contradiction"]
SENT = ["negative", "positive"]


def read(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def sample(rows: list[dict], n: int, seed: int) -> list[dict]:
    if n <= 0 or n >= len(rows):
        return list(rows)
    return random.Random(seed).sample(rows, n)


def nli_rows(rows: list[dict]) -> list[tuple[dict, str]]:
    return [({"text": r["premise"], "text_pair": r["hypothesis"]}, r["label"]) for r in rows if r["label"] in NLI]


def sst_rows(rows: list[dict]) -> list[tuple[dict, str]]:
    return [({"text": r["sentence"]}, SENT[int(r["label"])]) for r in rows]


def dynasent_rows(rows: list[dict]) -> list[tuple[dict, str]]:
    return [({"text": r["sentence"]}, r["label"]) for r in rows if r.get("label") in SENT]


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (float("nan"), float("nan"))
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def paired_bootstrap(a: list[int], b: list[int], seed: int, rounds: int = 2000) -> tuple[float, float]:
    """95 % interval of mean(b) - mean(a) over the same rows."""
    rng = random.Random(seed)
    n = len(a)
    diffs = sorted(sum(b[i] - a[i] for i in (rng.randrange(n) for _ in range(n))) / n for _ in range(rounds))
    return (diffs[int(0.025 * rounds)], diffs[int(0.975 * rounds) - 1])


def evaluate(folder: Path, rows: list[tuple[dict, str]], batch: int = 32) -> tuple[list[int], float]:
    from zoo.runtime import Predictor

    predictor = Predictor.load(folder)
    started = time.perf_counter()
    hits = []
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        predictions = predictor.predict([x for x, _ in chunk])
        hits += [int(p["label"] == y) for p, (_, y) in zip(predictions, chunk, strict=True)]
    return hits, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoders", default="all-MiniLM-L6-v2,all-mpnet-base-v2")
    parser.add_argument("--train", type=int, default=1000, help="training rows per round (subsample; 0 = all)")
    parser.add_argument("--test", type=int, default=500, help="test rows per test set (subsample; 0 = all)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--anli-train", type=int, default=None, help="ANLI R1 dev rows for anli-r2 (default: --train)")
    parser.add_argument("--anli-before", action="store_true",
                        help="also measure the round-1 NLI model on ANLI R1 test (the before-figure)")
    parser.add_argument("--rounds", default="nli-r1,sentiment,anli-r2")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("DATA_DIR", "/work/shared/data")))
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench" / "encoders")
    args = parser.parse_args(argv)

    import torch

    from zoo import encoders
    from zoo.runtime import configure_threads
    from zoo.training import TrainExample, TrainSpec, train

    names = [n.strip() for n in args.encoders.split(",") if n.strip()]
    for name in names:
        encoders.resolve(name)  # refuse at start (e.g. mpnet not installed: run `make mpnet`)
    wanted = [r.strip() for r in args.rounds.split(",") if r.strip()]
    data = args.data
    seed = args.seed

    train_sets = {
        "nli-r1": (NLI, nli_rows(sample(read(data / "snli/dev.jsonl"), args.train, seed)), "SNLI dev"),
        "sentiment": (SENT, sst_rows(sample(read(data / "sst2/train.jsonl"), args.train, seed)), "SST-2 train"),
        "anli-r2": (NLI, nli_rows(sample(read(data / "anli/r1_dev.jsonl"),
                                         args.train if args.anli_train is None else args.anli_train, seed)), "ANLI R1 dev"),
    }
    test_sets = {
        "nli-r1": {"SNLI test": nli_rows(sample(read(data / "snli/test.jsonl"), args.test, seed + 1)),
                   **({"ANLI R1 test": nli_rows(sample(read(data / "anli/r1_test.jsonl"), args.test, seed + 1))}
                      if args.anli_before else {})},
        "sentiment": {"SST-2 dev": sst_rows(sample(read(data / "sst2/dev.jsonl"), args.test, seed + 1)),
                      "DynaSent R1 test (pos/neg)": sample(dynasent_rows(read(data / "dynasent/r1_test.jsonl")),
                                                           args.test, seed + 1),
                      "DynaSent R2 test (pos/neg)": sample(dynasent_rows(read(data / "dynasent/r2_test.jsonl")),
                                                           args.test, seed + 1)},
        "anli-r2": {"ANLI R1 test": nli_rows(sample(read(data / "anli/r1_test.jsonl"), args.test, seed + 1))},
    }

    args.out.mkdir(parents=True, exist_ok=True)
    report = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "args": {k: str(v) for k, v in vars(args).items()},
              "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "torch": torch.__version__,
                       "threads": configure_threads()},
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": [], "hits": {}}
    out_json = args.out / "encoders.json"

    def save() -> None:
        out_json.write_text(json.dumps(report, indent=1), encoding="utf-8")

    wall = time.perf_counter()
    for round_name in wanted:  # each round for every encoder before the next: a run cut short leaves pairs
        for name in names:
            labels, rows, source = train_sets[round_name]
            spec_encoder = name
            if round_name == "anli-r2":  # continue the round-1 model (a trained folder is an encoder too)
                previous = args.out / f"{name}-nli-r1"
                spec_encoder = str(previous) if (previous / "config.json").is_file() else name
            spec = TrainSpec(head="classification", labels=labels, epochs=args.epochs, lr=args.lr,
                             batch_size=args.batch_size, max_length=args.max_length, seed=seed, encoder=spec_encoder)
            folder = args.out / f"{name}-{round_name}"
            started = time.perf_counter()
            metrics = train([TrainExample(x, y) for x, y in rows], spec, folder)
            train_s = time.perf_counter() - started
            print(f"[{name}] {round_name}: trained on {len(rows)} rows of {source} in {train_s:.0f} s", flush=True)
            for test_name, test_rows in test_sets[round_name].items():
                hits, eval_s = evaluate(folder, test_rows)
                acc = sum(hits) / len(hits)
                low, high = wilson(sum(hits), len(hits))
                report["hits"][f"{name}|{round_name}|{test_name}"] = hits
                report["results"].append({
                    "encoder": name, "round": round_name, "trained_on": f"{source} ({len(rows)} rows)",
                    "continued_from": spec_encoder if spec_encoder != name else None, "test": test_name,
                    "n": len(hits), "accuracy": round(acc, 4), "ci95": [round(low, 4), round(high, 4)],
                    "train_s": round(train_s, 1), "train_examples_per_s": metrics.get("examples_per_s"),
                    "eval_s": round(eval_s, 1)})
                print(f"[{name}] {round_name} / {test_name}: {acc:.3f} [{low:.3f}, {high:.3f}] n={len(hits)} "
                      f"({eval_s:.0f} s)", flush=True)
                report["wall_s"] = round(time.perf_counter() - wall, 1)
                save()
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report["wall_s"] = round(time.perf_counter() - wall, 1)
    save()
    (args.out / "encoders.md").write_text(markdown(report, names, seed), encoding="utf-8")
    print(f"wrote {out_json} and {args.out / 'encoders.md'} ({report['wall_s']:.0f} s)")
    return 0


def markdown(report: dict, names: list[str], seed: int) -> str:
    rows = report["results"]
    keys = []
    for r in rows:
        if (r["round"], r["test"]) not in keys:
            keys.append((r["round"], r["test"]))
    lines = ["| round | trained on | test | " + " | ".join(f"{n} acc [95 % CI]" for n in names)
             + " | difference (last - first) [95 % paired bootstrap] |", "|---" * (4 + len(names)) + "|"]
    for round_name, test in keys:
        cells, trained = [], ""
        for name in names:
            hit = next((r for r in rows if r["encoder"] == name and r["round"] == round_name and r["test"] == test), None)
            trained = trained or (hit or {}).get("trained_on", "")
            cells.append(f"{hit['accuracy']:.3f} [{hit['ci95'][0]:.3f}, {hit['ci95'][1]:.3f}] (n={hit['n']})"
                         if hit else "not run")
        diff = "—"
        first, last = (report["hits"].get(f"{n}|{round_name}|{test}") for n in (names[0], names[-1]))
        if first and last and len(names) > 1:
            low, high = paired_bootstrap(first, last, seed)
            diff = f"{(sum(last) - sum(first)) / len(first):+.3f} [{low:+.3f}, {high:+.3f}]"
        lines.append(f"| {round_name} | {trained} | {test} | " + " | ".join(cells) + f" | {diff} |")
    lines += ["", "| encoder | round | train s | train examples/s | eval s (per test set) |", "|---|---|---|---|---|"]
    seen = set()
    for r in rows:
        if (r["encoder"], r["round"]) in seen:
            continue
        seen.add((r["encoder"], r["round"]))
        evals = ", ".join(f"{x['test']}: {x['eval_s']}" for x in rows
                          if x["encoder"] == r["encoder"] and x["round"] == r["round"])
        lines.append(f"| {r['encoder']} | {r['round']} | {r['train_s']} | {r['train_examples_per_s']} | {evals} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
