"""Benchmark: how many pairwise comparisons the arena (chat/arena.py) needs to recover the true order of K models.

    nice -n 10 .venv/bin/python bench/bench_arena_recovery.py                 # the curve for 8 models
    nice -n 10 .venv/bin/python bench/bench_arena_recovery.py --sweep         # comparisons needed for 2..20 models
    nice -n 10 .venv/bin/python bench/bench_arena_recovery.py --json out.json # also write the figures

Simulates writers' choices from K models of known strength: true BT logits evenly spaced over [-SPREAD/2,
SPREAD/2] (by default [-1, 1]: the best beats the worst 88 % of the time, neighbours of 8 models 57 %), each
comparison a pair drawn uniformly at random, a tie with probability --ties (0.2 by default; a tie counts half
to each, as in the arena), else the BT outcome. For each number of comparisons and each seed, the arena's fit
(`chat.arena.bradley_terry`, without its bootstrap) recovers the strengths; the Spearman correlation between
recovered and true ranks is reported as its mean over the seeds, the 95 % interval of that mean (t), the
2.5–97.5 % spread of single runs, and the share of runs reaching 0.9. The goal: the smallest count whose mean
Spearman reaches 0.9 (`--goal`). No Django, no database: pure numpy/scipy, a few seconds on one core.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from chat.arena import GOAL_SPEARMAN, Comparison, bradley_terry  # noqa: E402

COUNTS = (25, 50, 100, 200, 400, 800, 1600)
SWEEP_COUNTS = (15, 25, 35, 50, 70, 100, 140, 200, 280, 400, 560, 800, 1120, 1600, 2240, 3200)
SWEEP_MODELS = (2, 3, 4, 6, 8, 12, 16, 20)


def true_logits(models: int, spread: float) -> np.ndarray:
    return np.linspace(spread / 2, -spread / 2, models)


def simulate(logits: np.ndarray, count: int, ties: float, rng: np.random.Generator) -> list[Comparison]:
    k = len(logits)
    first = rng.integers(0, k, size=count)
    second = (first + rng.integers(1, k, size=count)) % k  # uniform over the other models
    p_first = 1.0 / (1.0 + np.exp(-(logits[first] - logits[second])))
    tied = rng.random(count) < ties
    won = rng.random(count) < p_first
    outcome = np.where(tied, 0.5, won.astype(float))
    return [Comparison(f"m{a}", f"m{b}", float(o)) for a, b, o in zip(first, second, outcome, strict=True)]


def spearman(logits: np.ndarray, count: int, ties: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(len(logits))]
    fit = bradley_terry(names, simulate(logits, count, ties, rng), resamples=0)
    recovered = np.array([fit[name]["strength"] for name in names])
    rho = stats.spearmanr(recovered, logits).statistic
    return 0.0 if math.isnan(rho) else float(rho)


def curve(models: int, counts, seeds: int, spread: float, ties: float) -> list[dict]:
    logits = true_logits(models, spread)
    rows = []
    for count in counts:
        values = np.array([spearman(logits, count, ties, seed) for seed in range(seeds)])
        half = stats.t.ppf(0.975, seeds - 1) * values.std(ddof=1) / math.sqrt(seeds) if seeds > 1 else 0.0
        rows.append({"comparisons": count, "mean": float(values.mean()),
                     "mean_low": float(values.mean() - half), "mean_high": float(values.mean() + half),
                     "p2_5": float(np.percentile(values, 2.5)), "p97_5": float(np.percentile(values, 97.5)),
                     "share_at_goal": float((values >= GOAL_SPEARMAN).mean())})
    return rows


def needed(rows: list[dict], goal: float) -> int | None:
    return next((r["comparisons"] for r in rows if r["mean"] >= goal), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS))
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--spread", type=float, default=2.0, help="logits between the best and the worst model")
    parser.add_argument("--ties", type=float, default=0.2, help="share of comparisons that end in a tie")
    parser.add_argument("--goal", type=float, default=GOAL_SPEARMAN)
    parser.add_argument("--sweep", action="store_true", help="comparisons needed for each number of models")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    report: dict = {"spread": args.spread, "ties": args.ties, "seeds": args.seeds, "goal": args.goal}
    if args.sweep:
        print(f"spread {args.spread} logits, ties {args.ties:.0%}, {args.seeds} seeds; goal: mean Spearman >= "
              f"{args.goal}\n\n| models | comparisons needed | per model |\n|---:|---:|---:|")
        report["needed"] = {}
        for models in SWEEP_MODELS:
            rows = curve(models, SWEEP_COUNTS, args.seeds, args.spread, args.ties)
            n = needed(rows, args.goal)
            report["needed"][models] = n
            per = f"{2 * n / models:.0f}" if n else "—"
            print(f"| {models} | {n if n else f'> {SWEEP_COUNTS[-1]}'} | {per} |", flush=True)
    else:
        rows = curve(args.models, args.counts, args.seeds, args.spread, args.ties)
        report.update(models=args.models, curve=rows, needed=needed(rows, args.goal))
        print(f"{args.models} models, spread {args.spread} logits, ties {args.ties:.0%}, {args.seeds} seeds\n\n"
              "| comparisons | mean Spearman | 95 % interval of the mean | 2.5–97.5 % of runs | runs >= goal |\n"
              "|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['comparisons']} | {r['mean']:.3f} | {r['mean_low']:.3f}–{r['mean_high']:.3f} | "
                  f"{r['p2_5']:.3f}–{r['p97_5']:.3f} | {r['share_at_goal']:.0%} |")
        n = report["needed"]
        print(f"\ngoal (mean Spearman >= {args.goal}): {n if n else 'not reached'} comparisons")
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(f"({report['seconds']} s)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
