"""Benchmark: export 100k and 1M examples from PostgreSQL as JSONL and Parquet; throughput and peak memory.

    nice -n 10 .venv/bin/python bench/bench_exports.py [--sizes 100000 1000000] [--formats jsonl parquet]

Creates the database `bench_exports` (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432), fills it
with raw SQL (generate_series), runs every export in a fresh subprocess (so each peak RSS is its own),
prints a Markdown table, and drops the database. Without a reachable PostgreSQL it fails (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from pgdb import PG, admin_sql, recreate  # noqa: E402

DB = "bench_exports"

FILL_SQL = """
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, is_active, date_joined)
SELECT '!', false, 'bench' || i, '', '', 'bench' || i || '@example.org', false, true, now()
FROM generate_series(1, 2000) i;
INSERT INTO tasks_task (slug, name, kind, config, visibility, active, created_at)
VALUES ('bench', 'Bench sentiment', 'sentiment', '{}', 'public', true, now());
INSERT INTO tasks_context (payload, source, key, hardness_score, is_seed, times_used, created_at, round_id, task_id)
SELECT jsonb_build_object('prompt', 'A prompt to write about, number ' || i || '.'), 'bench', md5(i::text),
       CASE WHEN i % 3 = 0 THEN random() END, false, 0, now(), NULL, (SELECT id FROM tasks_task)
FROM generate_series(1, 20000) i;
"""

ROUND_SQL = """
INSERT INTO tasks_round (number, status, description, opened_at, closed_at, task_id)
VALUES (%(number)s, 'closed', '', now() - interval '30 days', now(), (SELECT id FROM tasks_task));
INSERT INTO annotation_example (input, target, scoring_state, fooled, ensemble_prediction, model_predictions,
  explanation, model_versions, scoring_attempts, scoring_error, scored_at, retracted, flagged, flag_reason,
  writer_explanation, time_spent_ms, idempotency_key, metadata, consensus, validated_label, split, created_at,
  updated_at, author_id, context_id, round_id)
SELECT jsonb_build_object('text', 'The food was fine but the waiter was rude, said writer number ' || i || '.'),
  to_jsonb(CASE WHEN i %% 2 = 0 THEN 'positive' ELSE 'negative' END), 'scored', i %% 5 < 2,
  '{"label": "negative", "probs": {"positive": 0.31, "negative": 0.69}}'::jsonb,
  '[{"model_version": 1, "name": "bench-a", "prediction": {"label": "negative", "probs": {"positive": 0.3, "negative": 0.7}}},
    {"model_version": 1, "name": "bench-b", "prediction": {"label": "negative", "probs": {"positive": 0.32, "negative": 0.68}}}]'::jsonb,
  NULL, '[1]'::jsonb, 1, '', now(), i %% 97 = 0, false, '', '', 20000, NULL, '{}'::jsonb,
  CASE WHEN i %% 5 < 2 AND i %% 10 < 3 THEN 'verified' WHEN i %% 50 = 7 THEN 'rejected' ELSE 'unvalidated' END,
  NULL, NULL, now() - (i || ' seconds')::interval, now(), (SELECT min(id) FROM auth_user) + i %% 2000,
  (SELECT min(id) FROM tasks_context) + i %% 20000, (SELECT id FROM tasks_round WHERE number = %(number)s)
FROM generate_series(1, %(rows)s) i;
INSERT INTO validation_validation (verdict, label, reason, mode, created_at, example_id, validator_id)
SELECT CASE WHEN v = 2 AND e.id %% 4 = 0 THEN 'incorrect' ELSE 'correct' END, NULL, '', 'crowd', now(), e.id,
  (SELECT min(id) FROM auth_user) + (e.id + v * 7) %% 2000
FROM annotation_example e, generate_series(0, 2) v
WHERE e.round_id = (SELECT id FROM tasks_round WHERE number = %(number)s) AND e.consensus = 'verified';
"""



def child_env() -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": f"{PG}/{DB}", "DJANGO_SETTINGS_MODULE": "dynabench_site.settings"}


def create_database(sizes: list[int]) -> None:
    import psycopg2

    recreate(DB, child_env())
    conn = psycopg2.connect(f"{PG}/{DB}")
    with conn, conn.cursor() as cur:
        cur.execute(FILL_SQL)
        for number, rows in enumerate(sizes, start=1):
            cur.execute(ROUND_SQL, {"number": number, "rows": rows})
    with conn.cursor() as cur:
        conn.autocommit = True
        cur.execute("VACUUM ANALYZE")
    conn.close()


def drop_database() -> None:
    admin_sql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(job: str, number: int, fmt: str) -> None:
    """One measured run in a fresh process: 'assign' the splits, or export every split as `fmt`."""
    import django

    django.setup()
    from exports import splits
    from exports.formats import get_format
    from exports.streaming import stream_records
    from tasks.models import Round

    round = Round.objects.select_related("task").get(task__slug="bench", number=number)
    base = peak_rss_mb()
    start = time.perf_counter()
    rows = bytes_out = 0
    if job == "assign":
        rows = sum(splits.assign_splits(round).values())
    else:
        for split in splits.SPLITS:
            rows += splits.in_split(round, split).count()
            for chunk in stream_records(round.task, splits.in_split(round, split), get_format(fmt)):
                bytes_out += len(chunk)  # what a StreamingHttpResponse would send; nothing is kept
    seconds = time.perf_counter() - start
    print(json.dumps({"rows": rows, "seconds": seconds, "bytes": bytes_out, "base_mb": base, "peak_mb": peak_rss_mb()}))


def measure(job: str, number: int, fmt: str) -> dict:
    cmd = [sys.executable, __file__, "--child", job, str(number), fmt]
    out = subprocess.run(cmd, cwd=ROOT, env=child_env(), check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(results: list[dict]) -> str:
    lines = [
        "| job | examples in round | rows written | seconds | rows/s | MB written | RSS after setup (MB) | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['job']} | {r['size']:,} | {r['rows']:,} | {r['seconds']:.1f} | {r['rows'] / r['seconds']:,.0f} | "
            f"{r['bytes'] / 1e6:,.0f} | {r['base_mb']:.0f} | {r['peak_mb']:.0f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--formats", nargs="+", default=["jsonl", "parquet"])
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="use a kept database (same --sizes) as it is")
    args = parser.parse_args()
    try:
        admin_sql("SELECT 1")
    except Exception as exc:  # no PostgreSQL here: the benchmark cannot run, and says so by failing
        print(f"bench_exports: cannot run, PostgreSQL at {PG} is not reachable ({exc.__class__.__name__}: {exc})",
              file=sys.stderr)
        return 1
    results = []
    try:
        start = time.perf_counter()
        if not args.reuse:
            create_database(args.sizes)
            print(f"filled {DB} ({sum(args.sizes):,} examples) in {time.perf_counter() - start:.0f} s", flush=True)
        for number, size in enumerate(args.sizes, start=1):
            for job in ["assign", *args.formats]:
                result = {"job": "assign splits" if job == "assign" else f"export {job}", "size": size}
                result.update(measure(job, number, job if job != "assign" else "jsonl"))
                results.append(result)
                print(json.dumps(result), flush=True)
    finally:
        if not args.keep:
            drop_database()
    print(report(results))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(main())
