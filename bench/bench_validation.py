"""Benchmark: time to fetch the next item to validate, with 1,000,000 examples in PostgreSQL.

    nice -n 10 .venv/bin/python bench/bench_validation.py [--rows 1000000] [--calls 400] [--keep]

Creates the database `bench_validation` (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432), fills it
with raw SQL (generate_series): 4 rounds, 2,000 writers of whom 50 also validate; 70% of the examples are
decided (with their votes), the rest wait for votes (some already hold one or two), 60% fooled, 1% retracted.
Then it times `validation.queue.claim_next` (the whole service: lease, locks, transaction) as the validators
work (claim, then vote), prints p50 / p95 / p99, the plan of the queue query, and drops the database.
Without a reachable PostgreSQL it fails (exit 1).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from pgdb import PG, admin_sql, recreate  # noqa: E402

DB = "bench_validation"
WRITERS, VALIDATORS = 2000, 50

FILL_SQL = """
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, is_active, date_joined)
SELECT '!', false, 'bench' || i, '', '', '', false, true, now() FROM generate_series(1, %(writers)s) i;
INSERT INTO auth_group (name) VALUES ('validator');
INSERT INTO auth_user_groups (user_id, group_id)
SELECT u.id, (SELECT g.id FROM auth_group g WHERE g.name = 'validator') FROM auth_user u ORDER BY u.id
LIMIT %(validators)s;
INSERT INTO tasks_task (slug, name, kind, config, visibility, active, created_at)
VALUES ('bench', 'Bench sentiment', 'sentiment', '{}', 'public', true, now());
INSERT INTO tasks_round (number, status, description, opened_at, closed_at, task_id)
SELECT n, CASE WHEN n < 4 THEN 'closed' ELSE 'open' END, '', now(), NULL, (SELECT id FROM tasks_task)
FROM generate_series(1, 4) n;
CREATE TEMP TABLE ids AS SELECT min(id) AS first_user, (SELECT min(id) FROM tasks_round) AS first_round FROM auth_user;
-- i <= 70%%: decided; above: waiting (the last 30%% of ids, i.e. the newest examples)
INSERT INTO annotation_example (input, target, scoring_state, fooled, ensemble_prediction, model_predictions,
  explanation, model_versions, scoring_attempts, scoring_error, scored_at, retracted, flagged, flag_reason,
  writer_explanation, time_spent_ms, idempotency_key, metadata, consensus, validated_label, split, created_at,
  updated_at, author_id, context_id, round_id)
SELECT jsonb_build_object('text', 'The food was fine but the waiter was rude, said writer number ' || i || '.'),
  '"positive"'::jsonb, 'scored', i %% 10 < 6, '{"label": "negative", "probs": {"positive": 0.3, "negative": 0.7}}'::jsonb,
  '[]'::jsonb, NULL, '[1]'::jsonb, 1, '', now(), i > %(decided)s AND i %% 100 = 3, false, '', '', 20000, NULL, '{}'::jsonb,
  CASE WHEN i > %(decided)s OR i %% 10 >= 6 THEN 'unvalidated' WHEN i %% 20 = 1 THEN 'rejected' ELSE 'verified' END,
  NULL, NULL, now() - ((%(rows)s - i) || ' seconds')::interval, now(),
  (SELECT first_user FROM ids) + (i::bigint * 7919) %% %(writers)s,
  NULL, (SELECT first_round FROM ids) + least(3, (i - 1) * 4 / %(rows)s)
FROM generate_series(1, %(rows)s) i;
-- votes: 3 on decided fooling examples; 1 or 2 on some waiting ones (never by the author)
INSERT INTO validation_validation (verdict, label, reason, mode, created_at, example_id, validator_id)
SELECT CASE WHEN e.consensus = 'rejected' THEN 'incorrect' ELSE 'correct' END,
  CASE WHEN e.consensus = 'rejected' THEN '"negative"'::jsonb END, '', 'crowd', now(), e.id,
  (SELECT first_user FROM ids) + (e.id + v * 17 + CASE WHEN (e.id + v * 17) %% %(validators)s
     = e.author_id - (SELECT first_user FROM ids) THEN 1 ELSE 0 END) %% %(validators)s
FROM annotation_example e, generate_series(0, 2) v
WHERE (e.consensus <> 'unvalidated' AND v < 3)
   OR (e.consensus = 'unvalidated' AND e.fooled AND e.id %% 7 = 0 AND v < 1 + e.id %% 2);
UPDATE annotation_example SET validated_label = CASE WHEN consensus = 'rejected' THEN '"negative"'::jsonb
  ELSE target END WHERE consensus <> 'unvalidated';
-- the queue rows, as validation.queue.sync_queue would write them (quorum 3, all crowd votes agree here)
INSERT INTO validation_queueitem (example_id, task_id, round_id, fooled, votes, needed, open)
SELECT e.id, (SELECT id FROM tasks_task), e.round_id, e.fooled, coalesce(v.n, 0), 3 - coalesce(v.n, 0),
  e.consensus = 'unvalidated' AND NOT e.retracted
FROM annotation_example e LEFT JOIN (
  SELECT example_id, count(*) AS n FROM validation_validation GROUP BY example_id) v ON v.example_id = e.id;
"""



def create_database(rows: int) -> None:
    import psycopg2

    recreate(DB, dict(os.environ))
    conn = psycopg2.connect(f"{PG}/{DB}")
    params = {"rows": rows, "decided": int(rows * 0.7), "writers": WRITERS, "validators": VALIDATORS}
    with conn, conn.cursor() as cur:
        cur.execute(FILL_SQL, params)
    conn.autocommit = True
    conn.cursor().execute("VACUUM ANALYZE")
    conn.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(name: str, ms: list[float]) -> str:
    return (f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {percentile(ms, 0.95):.1f} | "
            f"{percentile(ms, 0.99):.1f} | {max(ms):.1f} |")


cpu: list[float] = []  # CPU time of this process per claim: the client's share, whatever the machine's load


def work(calls: int, seed: int) -> tuple[list[float], list[float], int]:
    """Validators claim and vote in turn; returns claim and vote times (ms) and how many claims came back empty."""
    from django.contrib.auth.models import User

    from tasks.models import Task
    from validation import queue, services

    task = Task.objects.get(slug="bench")
    validators = list(User.objects.filter(groups__name="validator").order_by("id"))
    rng = random.Random(seed)
    claims, votes, empty = [], [], 0
    cpu.clear()
    for _ in range(calls):
        user = rng.choice(validators)
        start, start_cpu = time.perf_counter(), time.process_time()
        claim = queue.claim_next(task, user)
        claims.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        if claim.example is None:
            empty += 1
            continue
        start = time.perf_counter()
        services.submit_vote(user, claim.example, rng.choice(["correct"] * 8 + ["flagged"]), reason="bench")
        votes.append((time.perf_counter() - start) * 1000)
    return claims, votes, empty


def query_only(calls: int, seed: int) -> list[float]:
    """The queue query alone (one SQL statement), for comparison with the whole service call."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from tasks.models import Task
    from validation import queue

    task = Task.objects.get(slug="bench")
    rule = task.typed_config.validation
    validators = list(User.objects.filter(groups__name="validator").order_by("id"))
    rng, times = random.Random(seed), []
    for _ in range(calls):
        start = time.perf_counter()
        queue.candidates(task, rng.choice(validators), rule, timezone.now(), exclude=set())
        times.append((time.perf_counter() - start) * 1000)
    return times


def queue_query(user):
    """The queue query of `validation.queue.candidates` for `user`, as a queryset."""
    from django.db.models import Exists, F, OuterRef
    from django.utils import timezone

    from tasks.models import Task
    from validation import queue
    from validation.models import Validation

    task = Task.objects.get(slug="bench")
    return (
        queue.open_items(task, task.typed_config.validation).exclude(example__author=user)
        .exclude(Exists(Validation.objects.filter(example=OuterRef("example"), validator=user)))
        .annotate(held=queue.held_by_others(user, timezone.now())).filter(held__lt=F("needed"))
        .order_by(F("fooled").desc(), "votes", "example")
        .select_related("example__context", "example__round__task")[: queue.BATCH]
    )


def server_side(calls: int, seed: int) -> tuple[list[float], str]:
    """Planning + execution time of the queue query inside PostgreSQL (EXPLAIN ANALYZE), free of client load."""
    from django.contrib.auth.models import User

    validators = list(User.objects.filter(groups__name="validator").order_by("id"))
    rng, times, plan = random.Random(seed), [], ""
    for _ in range(calls):
        plan = queue_query(rng.choice(validators)).explain(analyze=True)
        found = re.findall(r"(Planning|Execution) Time: ([0-9.]+) ms", plan)
        times.append(sum(float(ms) for _, ms in found))
    return times, plan


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="measure on a database kept by --keep (no refill)")
    args = parser.parse_args()
    try:
        admin_sql("SELECT 1")
    except Exception as exc:  # no PostgreSQL here: the benchmark cannot run, and says so by failing
        print(f"bench_validation: cannot run, PostgreSQL at {PG} is not reachable ({exc.__class__.__name__}: {exc})",
              file=sys.stderr)
        return 1
    os.environ["DATABASE_URL"] = f"{PG}/{DB}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    os.environ.setdefault("LOG_LEVEL", "warning")
    try:
        if not args.reuse:
            start = time.perf_counter()
            create_database(args.rows)
            print(f"filled {DB} ({args.rows:,} examples) in {time.perf_counter() - start:.0f} s", flush=True)
        import django

        django.setup()
        work(20, seed=1)  # warm the caches and the connection
        load_before = os.getloadavg()[0]
        claims, votes, empty = work(args.calls, seed=2)
        query = query_only(args.calls, seed=3)
        inside, plan = server_side(args.calls, seed=4)
        load_after = os.getloadavg()[0]
        print(plan)
    finally:
        if not args.keep:
            admin_sql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    print("| operation | calls | p50 ms | p95 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|")
    print(summary("next item (claim_next)", claims))
    print(summary("next item: CPU time of the Django process", cpu))
    print(summary("vote (submit_vote)", votes))
    print(summary("queue query alone (candidates)", query))
    print(summary("queue query inside PostgreSQL (planning + execution)", inside))
    print(f"load average (1 min) before / after: {load_before:.1f} / {load_after:.1f} on {os.cpu_count()} CPUs")
    print(f"empty answers: {empty}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
