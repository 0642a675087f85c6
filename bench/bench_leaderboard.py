"""Benchmark: the Dynaboard leaderboard with a viewer's weights, 50 models x 10 test sets (goal: within 200 ms).

    nice -n 10 .venv/bin/python bench/bench_leaderboard.py [--models 50] [--rounds 8] [--repeat 40]

Creates the database `bench_leaderboard` (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432), migrates it,
creates the rows directly: a sentiment task with 8 rounds whose test splits hold 120 examples each plus the base
test set and the base held-out slice (10 test sets, each counted), `--models` model versions evaluated on every set
(accuracy, robustness and fairness with intervals on most, throughput and memory measured), and 5 scored
prediction-file uploads. Then it times, `--repeat` times each after one warm-up:

- `rounds.leaderboard.leaderboard(task, weights, predictions.leaderboard_rows)`: the computation (queries, rows,
  AMRS, both rankings);
- GET /api/tasks/bench/leaderboard/?performance=1&throughput=5&memory=5&robustness=2&fairness=1 (the whole API
  answer through Django's test client: middleware, permissions, JSON);
- GET of the HTML page with the same weights.

Prints p50/p95/max in ms, the machine's load average and the wall time. Fails (exit 1) when the API's median is
over 200 ms or when the database cannot be made; a p95 over 200 ms is printed as a miss (on this shared 2-core
machine the tail follows the other processes' load, which the line beside it gives). Drops the database at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from pgdb import PG, drop, recreate  # noqa: E402

DB = "bench_leaderboard"
GOAL_MS = 200.0
WEIGHTS = "performance=1&throughput=5&memory=5&robustness=2&fairness=1"


def fill(models: int, rounds: int) -> None:
    from django.contrib.auth import get_user_model

    from annotation.models import Example
    from modelzoo.models import Evaluation, ModelMeasurement, ModelVersion
    from rounds import datasets
    from rounds.models import PredictionScore, PredictionUpload
    from tasks.models import LabeledItem, Round, Task

    rng = random.Random(43)
    user = get_user_model().objects.create(username="bench-writer")
    task = Task.objects.create(slug="bench", name="Bench sentiment", kind="sentiment", config={})
    for split in ("test", "heldout"):
        LabeledItem.objects.bulk_create(
            LabeledItem(task=task, split=split, collection="bench", key=f"{split}-{i}", input={"text": f"{split} item {i}"},
                        target="positive" if i % 2 else "negative") for i in range(120))
    for number in range(1, rounds + 1):
        round_ = Round.objects.create(task=task, number=number, status="closed")
        Example.objects.bulk_create(
            Example(round=round_, author=user, context=None, input={"text": f"round {number} example {i}"},
                    target="positive" if i % 2 else "negative", scoring_state=Example.Scoring.SCORED, fooled=i % 3 == 0,
                    split="test") for i in range(120))
    sets = datasets.test_sets(task)
    assert len(sets) == rounds + 2, sets
    evaluations = []
    for version in range(1, models + 1):
        model = ModelVersion.objects.create(task=task, version=version, name=f"model-{version}",
                                            head="classification", status="ready")
        size = rng.uniform(20, 2000)
        ModelMeasurement.objects.create(model_version=model, examples=120, seconds=1.0,
                                        throughput=round(20000 / size, 1), memory_mb=round(size, 1))
        skill = 0.6 + 0.3 * (size / 2000) + rng.uniform(-0.05, 0.05)
        for name in sets:
            metrics = {"accuracy": round(min(0.99, skill + rng.uniform(-0.04, 0.04)), 4)}
            if version % 5:  # a fifth of the models not measured for robustness and fairness yet
                robust, fair = rng.uniform(0.6, 0.95), rng.uniform(0.8, 0.99)
                metrics |= {"robustness": round(robust, 4), "fairness": round(fair, 4),
                            "intervals": {"robustness": [round(robust - 0.04, 4), round(robust + 0.04, 4)],
                                          "fairness": [round(fair - 0.03, 4), round(fair + 0.02, 4)]}}
            evaluations.append(Evaluation(model_version=model, dataset=name, size=120, metrics=metrics))
    Evaluation.objects.bulk_create(evaluations)
    for n in range(5):
        upload = PredictionUpload.objects.create(task=task, uploaded_by=user, name=f"predictions-{n}",
                                                 status=PredictionUpload.Status.SCORED, rows=120 * len(sets),
                                                 accepted=120 * len(sets))
        PredictionScore.objects.bulk_create(
            PredictionScore(upload=upload, dataset=name, size=120, covered=120, status=PredictionScore.Status.SCORED,
                            metrics={"accuracy": round(rng.uniform(0.7, 0.9), 4)}) for name in sets)


def timed(function, repeat: int) -> list[float]:
    function()  # warm-up
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        out.append(1000 * (time.perf_counter() - start))
    return out


def summary(label: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"| {label} | {statistics.median(ordered):.1f} | {p95:.1f} | {ordered[-1]:.1f} |"


def p95_of(ms: list[float]) -> float:
    ordered = sorted(ms)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=8, help="round test sets (the base test and held-out make +2)")
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    started = time.perf_counter()
    url = f"{PG}/{DB}"
    env = {**os.environ, "DATABASE_URL": url}
    try:
        recreate(DB, env)
    except Exception as error:  # noqa: BLE001 - no database: the benchmark cannot run, and says so
        print(f"bench_leaderboard: cannot create the database {DB} at {PG}: {error}", file=sys.stderr)
        return 1
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from django.db import connections, reset_queries
    from django.test import Client

    from rounds import dynaboard, predictions
    from rounds.leaderboard import leaderboard
    from tasks.models import Task

    try:
        fill(args.models, args.rounds)
        filled = time.perf_counter() - started
        task = Task.objects.get(slug="bench")
        weights = dynaboard.viewer_weights(dict(p.split("=") for p in WEIGHTS.split("&")),
                                           task.typed_config.dynascore.model_dump())
        board = leaderboard(task, weights, predictions.leaderboard_rows)
        assert len(board["columns"]) == args.rounds + 2 and len(board["rows"]) == args.models + 5
        connection = connections["default"]
        connection.force_debug_cursor = True
        reset_queries()
        leaderboard(Task.objects.get(slug="bench"), weights, predictions.leaderboard_rows)
        queries = list(connection.queries)
        connection.force_debug_cursor = False
        client = Client()
        api = f"/api/tasks/bench/leaderboard/?{WEIGHTS}"
        page = f"/tasks/bench/leaderboard/?{WEIGHTS}"
        for path in (api, page):
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code, response.content[:300])
        compute = timed(lambda: leaderboard(Task.objects.get(slug="bench"), weights, predictions.leaderboard_rows), args.repeat)
        api_ms = timed(lambda: client.get(api), args.repeat)
        page_ms = timed(lambda: client.get(page), args.repeat)
    finally:
        connections.close_all()
        drop(DB)
    moved = sum(1 for r in board["rows"] if r["moved"])
    print(f"bench_leaderboard: {args.models} models + 5 prediction uploads x {args.rounds + 2} test sets, "
          f"viewer weights {WEIGHTS}; {len(queries)} queries per computation; {moved} rows change rank against "
          f"the owner's weights; {args.repeat} timed runs each after one warm-up\n")
    print("| what | p50 ms | p95 ms | max ms |\n|---|---|---|---|")
    print(summary("leaderboard() computation", compute))
    print(summary("API GET with viewer weights", api_ms))
    print(summary("HTML page GET", page_ms))
    wall = time.perf_counter() - started
    print(f"\nwall time {wall:.1f} s (of which creating and filling the database {filled:.1f} s); "
          f"goal: the API's p95 within {GOAL_MS:.0f} ms")
    print(f"load average while it ran (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs")
    if p95_of(api_ms) > GOAL_MS:
        print(f"bench_leaderboard: the API's p95 {p95_of(api_ms):.1f} ms misses the {GOAL_MS:.0f} ms goal")
    if statistics.median(api_ms) > GOAL_MS:
        print(f"bench_leaderboard: FAILED: the API's median {statistics.median(api_ms):.1f} ms > {GOAL_MS:.0f} ms",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
