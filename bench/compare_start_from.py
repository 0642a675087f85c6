"""Pair two `python -m research.simulate_rounds` reports that differ by one setting (e.g. retraining.start_from),
example by example.

Both runs replay the same writers and held-out samples (same files, sizes and seed), so each ensemble row's
per-example errors ("wrong", in sample order) line up: for each round's ensemble and held-out file, the error of
each arm with its Wilson interval, the exact McNemar test on the discordant examples, and the difference (B - A)
with a 95 % paired bootstrap interval. Usage: compare_start_from.py A.json B.json [--names A B]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def mcnemar(b: int, c: int) -> float:
    """Exact two-sided binomial test on the discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap(a: list[int], b: list[int], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    n, diffs = len(a), []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        diffs.append(sum(b[i] - a[i] for i in idx) / n)
    diffs.sort()
    return diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--names", nargs=2, default=["pretrained", "live"])
    args = parser.parse_args()
    ra, rb = (json.loads(Path(p).read_text(encoding="utf-8")) for p in (args.a, args.b))
    na, nb = args.names
    print(f"| ensemble | held-out file | {na} error | {nb} error | {nb} − {na} [95 % paired bootstrap] | "
          f"wrong in {na} only | wrong in {nb} only | McNemar p |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for ea, eb in zip(ra["ensembles"], rb["ensembles"], strict=True):
        for heldout, wa in ea["wrong"].items():
            wb = eb["wrong"][heldout]
            if len(wa) != len(wb):
                raise SystemExit(f"{heldout}: {len(wa)} vs {len(wb)} examples: the runs did not replay the same rows")
            n = len(wa)
            only_a = sum(1 for x, y in zip(wa, wb, strict=True) if x and not y)
            only_b = sum(1 for x, y in zip(wa, wb, strict=True) if y and not x)
            la, ha = wilson(sum(wa), n)
            lb, hb = wilson(sum(wb), n)
            lo, hi = bootstrap(wa, wb)
            print(f"| {ea['label']} | `{heldout}` (n = {n}) | {100 * sum(wa) / n:.1f} % ({100 * la:.1f}–{100 * ha:.1f}) | "
                  f"{100 * sum(wb) / n:.1f} % ({100 * lb:.1f}–{100 * hb:.1f}) | "
                  f"{100 * (sum(wb) - sum(wa)) / n:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}] | {only_a} | {only_b} | "
                  f"{mcnemar(only_a, only_b):.3g} |")


if __name__ == "__main__":
    main()
