"""Benchmark: what recording training dynamics costs, and whether the data map finds label errors.

    nice -n 10 .venv/bin/python bench/bench_datamaps.py [--n 1000] [--flip 0.1] [--epochs 4] [--threads 2]

The round pipeline's default recipe (cached-top, `zoo.recipes.train_ensemble`) with the real encoder
(all-MiniLM-L6-v2, top 3 blocks trained) on the first `--n` rows of SST-2 train (DATA_DIR, default ../shared/data),
a stable `--flip` share of them with the label flipped (planted label errors); no dev set (every row is trained
on, no early stopping), `--epochs` passes. Trains the same member (seed 0) twice, dynamics off and on, alternately
(`--repeats` pairs: machine load hits both sides), and reports:

1. the seconds of the member's updates with and without recording, side by side (their ratio moves with the
   machine's load: on a shared machine read it with care), and — robust to load — the seconds spent inside the
   recorder itself (`TrainingDynamics.record` and `end_pass`, timed in the same run) as a share of the member's
   updates (goal: at most 5 %);
2. the data map: checkpoints, examples per region, and the share of planted label errors in each region — the
   paper's observation is that hard-to-learn examples are often mislabelled, so the flipped rows should be
   concentrated there (with a 95 % Wilson interval of that share).

Exits non-zero when it cannot run (no data, no encoder) or when the recorder takes more than 5 % of the updates.
`--map-out FILE`: a copy of the data map (dynamics.json) of the last run with dynamics on.
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

import torch  # noqa: E402

from zoo import dynamics, recipes  # noqa: E402
from zoo.training import TrainExample, TrainingDynamics  # noqa: E402

INSIDE = [0.0]  # seconds spent in the recorder


class TimedDynamics(TrainingDynamics):
    """The recorder the recipe uses, timing its own work (GPU: synchronised, so the time is the recorder's)."""

    def record(self, ids, output, batch) -> None:
        t = time.perf_counter()
        super().record(ids, output, batch)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        INSIDE[0] += time.perf_counter() - t

    def end_pass(self) -> None:
        t = time.perf_counter()
        super().end_pass()
        INSIDE[0] += time.perf_counter() - t

LABELS = ["negative", "positive"]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    if n == 0:
        return 0.0, 0.0, 0.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def flipped(key: str, share: float) -> bool:
    return int(hashlib.sha256(f"flip:{key}".encode()).hexdigest()[:8], 16) / 16 ** 8 < share


def load(n: int, share: float, data_dir: Path) -> tuple[list[TrainExample], set[str]]:
    path = data_dir / "sst2" / "train.jsonl"
    if not path.is_file():
        sys.exit(f"no SST-2 train at {path}: set DATA_DIR")
    rows, planted = [], set()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if len(rows) >= n:
                break
            row = json.loads(line)
            key = f"sst2-{row['idx']}"
            label = LABELS[int(row["label"])]
            if flipped(key, share):
                label = LABELS[1 - int(row["label"])]
                planted.add(key)
            rows.append(TrainExample({"text": row["sentence"]}, label, key))
    return rows, planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--flip", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--map-out", type=Path, default=None)
    args = parser.parse_args()
    recipes.TrainingDynamics = TimedDynamics  # the recipe builds its recorders from this name
    torch.set_num_threads(args.threads)
    rows, planted = load(args.n, args.flip, Path(os.environ.get("DATA_DIR", ROOT.parent / "shared" / "data")))
    spec = recipes.RecipeSpec(head="classification", labels=LABELS, max_length=64, epochs=args.epochs,
                              min_steps=1, max_steps=100_000)
    keys = [r.key for r in rows]
    seconds: dict[bool, list[float]] = {False: [], True: []}
    inside: list[float] = []
    made = None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for on in (False, True) if i % 2 == 0 else (True, False):
                out = Path(tmp) / f"{'on' if on else 'off'}-{i}"
                INSIDE[0] = 0.0
                metrics = recipes.train_ensemble(rows, spec, [out], [0], dev=[], keys=keys, dynamics=on)
                seconds[on].append(metrics[0]["seconds"])
                if on:
                    made = dynamics.read(out)
                    inside.append(INSIDE[0] / metrics[0]["seconds"])
                    if args.map_out:
                        shutil.copyfile(out / dynamics.DYNAMICS_FILE, args.map_out)
    total = time.perf_counter() - started
    off, on = min(seconds[False]), min(seconds[True])
    ratio = on / off
    print("# Training dynamics: cost and label errors (bench/bench_datamaps.py)\n")
    print(f"SST-2 train, first {len(rows)} rows, {len(planted)} labels flipped ({args.flip:.0%}, stable by key); "
          f"cached-top recipe, all-MiniLM-L6-v2, top {spec.top_layers} blocks, {args.epochs} passes, batch "
          f"{spec.batch_size}, seed 0, no dev set; {args.threads} threads; wall time {total:.0f} s.\n")
    share = max(inside)
    print("| member updates | seconds (best of " + str(args.repeats) + ") |\n|---|---:|")
    print(f"| dynamics off | {off:.1f} |\n| dynamics on | {on:.1f} |\n| ratio on/off | {ratio:.3f} |")
    print(f"| inside the recorder, share of the updates (worst run) | {share:.2%} |\n")
    assert made is not None and not made.reason, made.reason if made else "no data map written"
    print(f"Data map: {made.checkpoints} checkpoints; {made.settings['rule']}.\n")
    print("| region | examples | planted label errors in it | share of the region (95 % CI) | "
          "share of all planted errors |\n|---|---:|---:|---:|---:|")
    for region in dynamics.REGIONS:
        members = [e for e in made.entries if e["region"] == region]
        k = sum(1 for e in members if e["key"] in planted)
        p, low, high = wilson(k, len(members))
        print(f"| {region} | {len(members)} | {k} | {p:.1%} ({low:.1%}–{high:.1%}) | "
              f"{k / max(len(planted), 1):.1%} |")
    print(f"| all | {len(made.entries)} | {len(planted)} | {len(planted) / len(made.entries):.1%} | 100% |")
    if share > 0.05:
        sys.exit(f"the recorder took {share:.1%} of the member's updates (goal: at most 5 %)")


if __name__ == "__main__":
    main()
