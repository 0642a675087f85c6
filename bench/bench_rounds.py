"""Benchmark: close a round (freeze → … → next round open) with each training recipe, in the same run.

    nice -n 10 .venv/bin/python bench/bench_rounds.py [--examples 2000] [--recipe both|cached-top|full]
        [--pool 2000] [--seeds 0 1 2] [--epochs 2] [--recipe-settings '{"top_layers": 3}']

Builds a throw-away SQLite database and model store under var/bench/rounds with one sentiment task (SST-2
labels) per recipe, each identical: a seed pool from SST-2 train, the SST-2 dev set as the base test set,
round 1 with N collected examples (a third fooled; 90% verified). Then it closes round 1 of each task in this
process (the whole pipeline) and prints one Markdown row per step, the close → next-round-open time, and the
new ensemble's held-out figures (SST-2 dev) as the pipeline's evaluate step stored them, with the CPU seconds the
process used (one torch thread: on a shared machine wall time above CPU time is waiting for a core): the same data for
both recipes, so their speed and accuracy compare. Goal (issue 13): ≤ 5 minutes for 2,000 examples on 2
cores with no loss of held-out accuracy. Needs DATA_DIR (the shared datasets) and the offline
all-MiniLM-L6-v2 package; exits non-zero when it cannot run or a pipeline fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(workdir: Path) -> None:
    os.environ["VAR_DIR"] = str(workdir)
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MODEL_STORE"] = str(workdir / "models")
    os.environ["MODEL_BACKEND"] = "inprocess"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def sst2_lines(path: Path, start: int, count: int) -> list[tuple[int, str]]:
    with open(path, encoding="utf-8") as handle:
        return [(n, line) for n, line in enumerate(handle, start=1) if start < n <= start + count]


def build(data_dir: Path, n_examples: int, n_pool: int, slug: str = "bench"):
    from django.contrib.auth.models import User

    from annotation.models import Example
    from tasks.importing import ImportSpec, import_lines
    from tasks.services import create_task, open_next_round

    owner = User.objects.filter(username="owner").first() or User.objects.create_superuser("owner", "owner@example.org", "x")
    task = create_task(slug=slug, name=f"Bench {slug}", kind="sentiment", owners=[owner],
                       config={"labels": ["negative", "positive"], "validation": {"scope": "all"}})
    import_lines(task, sst2_lines(data_dir / "sst2/train.jsonl", 0, n_pool),
                 ImportSpec.from_preset("sst2", target="pool", collection="sst2"))
    import_lines(task, sst2_lines(data_dir / "sst2/dev.jsonl", 0, 10**6),
                 ImportSpec.from_preset("sst2", target="eval", collection="sst2", split="test"))
    round1 = open_next_round(task)
    writers = [User.objects.get_or_create(username=f"writer{i}")[0] for i in range(20)]
    rows = [json.loads(line) for _, line in sst2_lines(data_dir / "sst2/train.jsonl", 20000, n_examples)]
    Example.objects.bulk_create([
        Example(round=round1, author=writers[i % 20], input={"text": r["sentence"]},
                target=["negative", "positive"][r["label"]], scoring_state="scored", fooled=i % 3 == 0,
                consensus="verified" if i % 10 else "unvalidated")
        for i, r in enumerate(rows)
    ])
    return task, owner


def run_pipeline(task, owner, recipe: str, args) -> dict:
    from modelzoo.models import EnsembleScore
    from rounds import services
    from rounds.models import PipelineStep

    started, cpu_started = time.perf_counter(), time.process_time()
    run = services.start_pipeline(task, owner, {"seeds": args.seeds, "epochs": args.epochs, "recipe": recipe})
    total, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    load = os.getloadavg()[0]
    run.refresh_from_db()
    print(f"\n### recipe {recipe}: status {run.status} {run.error}\n")
    print("| step | seconds | result |\n|---|---:|---|")
    for step in PipelineStep.objects.filter(run=run).order_by("position"):
        result = {k: v for k, v in step.result.items() if k not in ("rounds",)}
        print(f"| {step.name} | {step.seconds:.1f} | {json.dumps(result)[:160]} |")
    print(f"| **close → next round open** | **{total:.1f}** | CPU {cpu:.1f} s of this process; 1-min load at the end {load:.2f} |")
    retrain = PipelineStep.objects.get(run=run, name="retrain")
    print("\n" + retrain.log)
    scores = {s.dataset: s.metrics for s in EnsembleScore.objects.filter(task=task, round_number=2)}
    return {"recipe": recipe, "status": run.status, "total_s": round(total, 1), "cpu_s": round(cpu, 1),
            "retrain_s": round(retrain.seconds, 1), "held_out": scores}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--pool", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=2, help="passes of the full recipe")
    parser.add_argument("--recipe", choices=["both", "cached-top", "full"], default="both")
    parser.add_argument("--recipe-settings", default="{}",
                        help='JSON: cached-top settings for this run (settings.MODELZOO_RECIPE), e.g. {"top_layers": 3}')
    parser.add_argument("--workdir", default=str(ROOT / "var" / "bench" / "rounds"))
    args = parser.parse_args()
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    setup_django(workdir)
    from django.conf import settings

    settings.JOB_RUNNER = "inline"
    settings.MODELZOO_RECIPE = json.loads(args.recipe_settings)
    if not (Path(settings.DATA_DIR) / "sst2" / "train.jsonl").is_file():
        sys.exit(f"bench_rounds: SST-2 not found under DATA_DIR={settings.DATA_DIR}: cannot run")
    recipes = ["cached-top", "full"] if args.recipe == "both" else [args.recipe]
    results = []
    for recipe in recipes:
        task, owner = build(Path(settings.DATA_DIR), args.examples, args.pool, slug=f"bench-{recipe}")
        results.append(run_pipeline(task, owner, recipe, args))
    print("\n| recipe | close → open (s) | CPU (s) | retrain (s) | held-out (new ensemble) |\n|---|---:|---:|---:|---|")
    for r in results:
        held = "; ".join(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in m.items() if isinstance(v, float))
                         for name, m in r["held_out"].items())
        print(f"| {r['recipe']} | {r['total_s']} | {r['cpu_s']} | {r['retrain_s']} | {held} |")
    if any(r["status"] != "done" for r in results):
        sys.exit("bench_rounds: a pipeline did not finish")


if __name__ == "__main__":
    main()
