"""Benchmark: the time each round-pipeline step takes for a round of 2,000 collected examples, real encoder.

    nice -n 10 .venv/bin/python bench/bench_rounds.py [--examples 2000] [--pool 2000] [--seeds 0 1 2] [--epochs 2]

Builds a throw-away SQLite database and model store under var/bench/rounds: a sentiment task (SST-2 labels),
a seed pool from SST-2 train, the SST-2 dev set as the base test set, round 1 with N collected examples
(a third fooled; 90% verified), then runs the whole pipeline in this process and prints one Markdown row
per step. Needs DATA_DIR (the shared datasets) and the offline all-MiniLM-L6-v2 package.
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


def build(data_dir: Path, n_examples: int, n_pool: int):
    from django.contrib.auth.models import User

    from annotation.models import Example
    from tasks.importing import ImportSpec, import_lines
    from tasks.services import create_task, open_next_round

    owner = User.objects.create_superuser("owner", "owner@example.org", "x")
    task = create_task(slug="bench", name="Bench", kind="sentiment", owners=[owner],
                       config={"labels": ["negative", "positive"], "validation": {"scope": "all"}})
    import_lines(task, sst2_lines(data_dir / "sst2/train.jsonl", 0, n_pool),
                 ImportSpec.from_preset("sst2", target="pool", collection="sst2"))
    import_lines(task, sst2_lines(data_dir / "sst2/dev.jsonl", 0, 10**6),
                 ImportSpec.from_preset("sst2", target="eval", collection="sst2", split="test"))
    round1 = open_next_round(task)
    writers = [User.objects.create_user(f"writer{i}") for i in range(20)]
    rows = [json.loads(line) for _, line in sst2_lines(data_dir / "sst2/train.jsonl", 20000, n_examples)]
    Example.objects.bulk_create([
        Example(round=round1, author=writers[i % 20], input={"text": r["sentence"]},
                target=["negative", "positive"][r["label"]], scoring_state="scored", fooled=i % 3 == 0,
                consensus="verified" if i % 10 else "unvalidated")
        for i, r in enumerate(rows)
    ])
    return task, owner


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--pool", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workdir", default=str(ROOT / "var" / "bench" / "rounds"))
    args = parser.parse_args()
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    setup_django(workdir)
    from django.conf import settings

    settings.JOB_RUNNER = "inline"
    from rounds import services
    from rounds.models import PipelineStep

    task, owner = build(Path(settings.DATA_DIR), args.examples, args.pool)
    started = time.perf_counter()
    run = services.start_pipeline(task, owner, {"seeds": args.seeds, "epochs": args.epochs})
    total = time.perf_counter() - started
    run.refresh_from_db()
    print(f"status {run.status} {run.error}\n")
    print("| step | seconds | result |\n|---|---:|---|")
    for step in PipelineStep.objects.filter(run=run).order_by("position"):
        result = {k: v for k, v in step.result.items() if k not in ("rounds",)}
        print(f"| {step.name} | {step.seconds:.1f} | {json.dumps(result)[:160]} |")
    print(f"| **total** | {total:.1f} | |")
    print("\n" + PipelineStep.objects.get(run=run, name="retrain").log)
    print(PipelineStep.objects.get(run=run, name="evaluate").log)


if __name__ == "__main__":
    main()
