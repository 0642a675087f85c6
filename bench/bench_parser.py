"""Benchmark: the bounded JSON decoder on the body that made the old depth check quadratic (issue 25).

    .venv/bin/python bench/bench_parser.py [--repeat 5]

The body is an unterminated string of escaped quotes, `"` then `\\"` repeated, as an anonymous client could
send to POST /api/auth/token/. It times `dynabench_site.parsers.loads_bounded` (UTF-8 decoding, the depth
scan and json.loads, which refuses the body) at 16 KB, 1 MB and 20 MB, the old check (a regular expression
that strips strings, then counts brackets) at 16 KB and 24 KB beside it, and a few other shapes at 1 MB for
scale (bracket-dense bodies are the depth scan's slowest; json.loads alone on a realistic body). Best of
--repeat runs. No database.

Exits 1 when 1 MB of the adversarial body takes over 50 ms, or when 20 MB is not linear: its time must lie
within 2x of 20 times the 1 MB time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")

KB, MB = 1024, 1024 * 1024
GOAL_MS_PER_MB = 50.0

# The check this replaces (dynabench_site/parsers.py before issue 25), copied to measure it.
OLD_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
OLD_BRACKETS = re.compile(r"[\[\]{}]")


def old_check(raw: bytes) -> None:
    text = raw.decode("utf-8")
    depth = deepest = 0
    for match in OLD_BRACKETS.finditer(OLD_STRINGS.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    json.loads(text)


def adversarial(size: int) -> bytes:
    return b'"' + b'\\"' * ((size - 1) // 2)


def best_ms(run: Callable[[bytes], object], body: bytes, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.suppress(ValueError):  # the refusal is the expected outcome
            run(body)
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import django

    django.setup()
    from dynabench_site.parsers import loads_bounded

    rows: list[tuple[str, int, float]] = []
    for label, size, run, repeat in [
        ("new: loads_bounded", 16 * KB, loads_bounded, args.repeat),
        ("new: loads_bounded", MB, loads_bounded, args.repeat),
        ("new: loads_bounded", 20 * MB, loads_bounded, max(1, args.repeat // 2)),
        ("old: regex check + json.loads", 16 * KB, old_check, 1),
        ("old: regex check + json.loads", 24 * KB, old_check, 1),
    ]:
        rows.append((label, size, best_ms(run, adversarial(size), repeat)))
    print("adversarial body: '\"' + '\\\\\"' * m (an unterminated string)")
    print(f"{'check':32} {'size':>8} {'ms':>10} {'ms per MB':>10}")
    for label, size, ms in rows:
        print(f"{label:32} {human(size):>8} {ms:10.2f} {ms / (size / MB):10.1f}")

    other = {
        "empty arrays `[[],[],…]`": b"[" + b"[]," * (MB // 3) + b"[]]",
        "20 deep, repeated": b"[" + b",".join([b"[" * 19 + b"1" + b"]" * 19] * (MB // 40)) + b"]",
        "realistic objects": json.dumps([{"input": {"text": "a \"quoted\" word"}, "target": "positive"}] * (MB // 60)).encode(),
    }
    print("\nother shapes at about 1 MB (loads_bounded vs json.loads alone)")
    for label, body in other.items():
        ours, plain = best_ms(loads_bounded, body, args.repeat), best_ms(json.loads, body, args.repeat)
        print(f"{label:32} {human(len(body)):>8} {ours:10.2f} {plain:10.2f}")

    one, twenty = rows[1][2], rows[2][2]
    ratio = twenty / (20 * one)
    print(f"\n20 MB / (20 x 1 MB) = {ratio:.2f} (linear: 1)")
    failures = []
    if one > GOAL_MS_PER_MB:
        failures.append(f"1 MB took {one:.1f} ms (goal <= {GOAL_MS_PER_MB:.0f} ms)")
    if not 0.5 <= ratio <= 2.0:
        failures.append(f"20 MB took {twenty:.1f} ms, {ratio:.2f}x 20 times the 1 MB time: not linear")
    if failures:
        sys.exit("bench_parser: FAILED: " + "; ".join(failures))
    print(f"bench_parser: ok (1 MB in {one:.1f} ms <= {GOAL_MS_PER_MB:.0f} ms; linear within 2x)")


def human(size: int) -> str:
    return f"{size // MB} MB" if size >= MB else f"{size // KB} KB"


if __name__ == "__main__":
    main()
