"""CPU of one web request on the hot paths, in process, one thread: what each request costs the web tier alone.

    .venv/bin/python bench/request_cpu.py [--requests 300] [--seed-examples 5000]

The load bench (bench_load.py) measures every tier under load, where the noise of a shared machine and the
validators' pace hide a change of a few per cent; this measures one process's own CPU (`time.process_time`) per
request through Django's test client, so a change to one path shows side by side (run it in two worktrees).
It starts its own redis-server on a free port (the cache and the Celery broker; no worker: a submission's
scoring job stays queued, and the verdict wait is off), re-creates the PostgreSQL database `h_request_cpu` on
BENCH_PG_URL (default the local server), loads the demo tasks, and seeds the validation queue as bench_load
does (`--seed-examples` scored examples, then ANALYZE). Measured, after 30 warm-up requests each:
  - a writer's submission with an idempotency key and `next_context` (the create page's one request);
  - a validator's `validation/next` and the vote on the item it leased.
Prints CPU ms per request and the queries of the last one; exits non-zero when a request fails.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB = "h_request_cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--seed-examples", type=int, default=5000)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("request_cpu needs redis-server")
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    import bench_load
    import pgdb

    [redis_port] = bench_load.free_ports(1)
    redis = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)
    env = {"DEBUG": "false", "SECRET_KEY": "request-cpu-" + "x" * 50, "ALLOWED_HOSTS": "testserver",
           "DATABASE_URL": f"{pgdb.PG}/{DB}", "DB_CONN_MAX_AGE": "60",
           "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0", "CACHE_URL": f"redis://127.0.0.1:{redis_port}/1",
           "CELERY_QUEUE": "dynabench", "MODEL_BACKEND": "torchserve", "TORCHSERVE_URL": "http://127.0.0.1:9",
           "SUBMISSION_RATE": "100000/min", "VOTE_RATE": "100000/min", "VERDICT_WAIT_MS": "0",
           "HF_HUB_OFFLINE": "1", "DJANGO_SETTINGS_MODULE": "dynabench_site.settings"}
    os.environ.update(env)
    try:
        pgdb.recreate(DB, {**os.environ})
        for line in measure(args, bench_load):
            print(line, flush=True)
    finally:
        redis.terminate()
        from django.db import connections

        connections.close_all()
        pgdb.drop(DB)


def measure(args, bench_load) -> list[str]:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tasks.models import Task

    call_command("load_demo", stdout=io.StringIO())
    task = Task.objects.get(slug="sentiment")
    task.config = {**task.config, "submission_rate": "100000/min"}
    task.save(update_fields=["config"])
    users = bench_load.make_users(task, 1, 1)
    bench_load.seed_queue(task, task.current_round, args.seed_examples)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    writer = Client(HTTP_AUTHORIZATION=f"Token {users['annotators'][0]}")
    validator = Client(HTTP_AUTHORIZATION=f"Token {users['validators'][0]}")
    shown = {"id": writer.post(f"/api/tasks/{task.slug}/contexts/next/").json()["id"]}
    counter = iter(range(10**9))

    def submit() -> None:
        body = {"context_id": shown["id"], "input": {"text": f"The soup was cold but the staff were kind, visit {next(counter)}."},
                "target": "positive", "idempotency_key": uuid.uuid4().hex, "next_context": True, "word_map": False}
        reply = writer.post(f"/api/tasks/{task.slug}/examples/", json.dumps(body), content_type="application/json")
        if reply.status_code not in (201, 202):
            raise RuntimeError(f"submission answered {reply.status_code}: {reply.content[:300]!r}")
        shown["id"] = reply.json()["next_context"]["id"]

    leased: dict = {}

    def next_item() -> None:
        reply = validator.post(f"/api/tasks/{task.slug}/validation/next/")
        if reply.status_code != 200 or reply.json()["item"] is None:
            raise RuntimeError(f"validation/next answered {reply.status_code}: {reply.content[:300]!r}")
        leased["url"] = reply.json()["item"]["validate_url"]

    def vote() -> None:
        reply = validator.post(leased["url"], json.dumps({"verdict": "correct"}), content_type="application/json")
        if reply.status_code not in (201, 409):
            raise RuntimeError(f"vote answered {reply.status_code}: {reply.content[:300]!r}")

    lines = []
    for name, steps in (("submission (idempotency key, next_context)", [submit]),
                        ("validation/next, then the vote", [next_item, vote])):
        for _ in range(30):
            for step in steps:
                step()
        spent = [0.0] * len(steps)
        for _ in range(args.requests):
            for i, step in enumerate(steps):
                started = time.process_time()
                step()
                spent[i] += time.process_time() - started
        queries = []
        for step in steps:
            with CaptureQueriesContext(connection) as captured:
                step()
            queries.append(len(captured.captured_queries))
        figures = " + ".join(f"{1000 * s / args.requests:.2f}" for s in spent)
        lines.append(f"{name}: {figures} ms of CPU per request; {' + '.join(map(str, queries))} queries")
    return lines


if __name__ == "__main__":
    main()
