"""The summary table of bench/compare_round_recipes.sh: one row per recipe, from each run's
`python -m research.simulate_rounds --json`.

    .venv/bin/python bench/round_recipes_table.py OUT/old OUT/new

Columns: each held-out file's error before → after the round (the exact McNemar p between the two ensembles),
then the pipeline's own comparison (accuracy × 100, live → new) on the round's test split, the base test and the
base held-out slice where the task has one, the gate's decision and the wall time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(folder: Path) -> dict:
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    wall = folder / "wall.json"
    report["wall"] = json.loads(wall.read_text()) if wall.is_file() else {}
    return report


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def main(folders: list[str]) -> None:
    if not folders:
        sys.exit("usage: round_recipes_table.py RUN_FOLDER [RUN_FOLDER ...]")
    runs = [(Path(f).name, load(Path(f))) for f in folders]
    held = runs[0][1]["heldouts"]
    sets = ["round 1 test", "base test", "base held-out"]
    head = (["recipe"] + [f"`{h}` error, round 1 → 2 (McNemar p)" for h in held]
            + [f"{s}: live → new (n)" for s in sets] + ["gate", "training rows", "wall (min)"])
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for name, r in runs:
        first, second = r["ensembles"][0], r["ensembles"][-1]
        cells = [name]
        for h in held:
            test = next((t for t in r["tests"] if t["heldout"] == h and t["before"] == 0
                         and t["after"] == len(r["ensembles"]) - 1), None)
            p = f" (p = {test['p_value']:.2g})" if test else ""
            cells.append(f"{pct(first['errors'][h]['value'])} → {pct(second['errors'][h]['value'])}{p}")
        round1 = r["rounds"][0]
        rows = {row["label"]: row for row in (round1["pipeline"].get("comparison") or {}).get("rows", [])}
        for s in sets:
            row = rows.get(s)
            cells.append("–" if row is None else
                         f"{row['live'] if row['live'] is not None else '–'} → {row['new']} ({row['size']})")
        cells.append(round1["pipeline"].get("decision") or "none needed")
        cells.append(str(round1["pipeline"].get("retrain_log", "")).split(";")[0])
        total = r["wall"].get("total_s")
        cells.append(f"{total / 60:.1f}" if total else "–")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
