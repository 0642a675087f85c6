"""What the base held-out slice costs a demo task: its ensemble trained with the slice held out vs trained on, same seeds.

    DATA_DIR=../shared/data .venv/bin/python bench/holdout_cost.py [--task hate-speech] [--members 6] [--limit 1000]
        [--workdir /tmp/holdout-cost]

Issue 23 holds a stable 5 % of every imported train collection out of training (split "heldout", the retraining
gate's "base held-out" set). A single run per variant put the hate-speech demo 1.3 macro-F1 points lower with
the slice held out; this asks how much of that is the slice and how much the seeds. For each variant — `held`
(the importer's slice kept out, as `load_demo` leaves it) and `trained` (the same rows moved back into training)
— it builds a scratch SQLite database (`migrate`, `load_demo`), trains `--members` members (seeds 0..n-1, the demo
recipe, `demo_models --members`), and scores on the task's demo held-out set (`evaluate_demo`'s, `--limit`
rows): every member, and the ensembles of seeds {0,1,2} and {3,4,5} (mean probabilities). Same seeds, same
everything but the slice. Prints one Markdown table and writes JSON next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(env: dict, *args: str) -> str:
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"holdout_cost: manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


SCORE = r"""
import json, sys
from tasks.models import LabeledItem, Task
from modelzoo import demo, services
task = Task.objects.get(slug=sys.argv[1])
members = services.active_ensemble(task.current_round).ordered_members()
[held] = demo.held_out_sets(task, int(sys.argv[2]))[:1]
per = [services.predict_with([m], held.labelled.inputs) for m in members]
out = {"dataset": held.labelled.name, "size": len(held.labelled.inputs),
       "train_rows": LabeledItem.objects.filter(task=task, split="train").count(),
       "heldout_rows": LabeledItem.objects.filter(task=task, split="heldout").count(),
       "members": [demo.score(task, held, p) for p in per]}
def mean_probs(group):
    return services.predict_with([members[i] for i in group], held.labelled.inputs)
out["ensembles"] = {str(g): demo.score(task, held, mean_probs(g)) for g in ([0, 1, 2], [3, 4, 5]) if len(members) > max(g)}
print("RESULT " + json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="hate-speech")
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--workdir", default="/tmp/holdout-cost")
    args = parser.parse_args()
    results = {}
    for variant in ("held", "trained"):
        folder = Path(args.workdir) / variant
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("db.sqlite3*"):
            old.unlink()
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder}/db.sqlite3", "MODEL_STORE": str(folder / "models")}
        started = time.perf_counter()
        manage(env, "migrate", "-v0")
        manage(env, "load_demo")
        if variant == "trained":
            manage(env, "shell", "-c", "from tasks.models import LabeledItem as L; "
                                        f"print(L.objects.filter(task__slug='{args.task}', split='heldout')"
                                        ".update(split='train'))")
        manage(env, "demo_models", "--tasks", args.task, "--members", str(args.members), "--no-progress", "--force")
        trained = time.perf_counter() - started
        line = [x for x in manage(env, "shell", "-c", f"import sys; sys.argv = ['', '{args.task}', '{args.limit}']\n"
                                  + SCORE).splitlines() if x.startswith("RESULT ")][-1]
        results[variant] = {**json.loads(line[7:]), "train_s": round(trained, 1)}
        print(f"{variant}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    metric = "macro_f1" if "macro_f1" in results["held"]["members"][0] else next(iter(results["held"]["members"][0]))
    print(f"\n{args.task}: {metric} on {results['held']['dataset']} (n = {results['held']['size']}), "
          f"seeds 0..{args.members - 1}\n")
    print("| variant | train rows | held out | members (seed 0, 1, …) | members' mean ± sd | ensemble {0,1,2} "
          "| ensemble {3,4,5} |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for variant, r in results.items():
        values = [m[metric] for m in r["members"]]
        ens = [r["ensembles"].get(str(g), {}).get(metric) for g in ([0, 1, 2], [3, 4, 5])]
        print(f"| {variant} | {r['train_rows']} | {r['heldout_rows']} | {', '.join(f'{v:.3f}' for v in values)} | "
              f"{statistics.mean(values):.3f} ± {statistics.stdev(values) if len(values) > 1 else 0:.3f} | "
              + " | ".join("–" if e is None else f"{e:.3f}" for e in ens) + " |")
    pairs = [a[metric] - b[metric] for a, b in zip(results["held"]["members"], results["trained"]["members"],
                                                    strict=True)]
    print(f"\nheld − trained, same seed: {', '.join(f'{d:+.3f}' for d in pairs)}; mean {statistics.mean(pairs):+.3f}")
    out = Path(args.workdir) / "holdout_cost.json"
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
