"""A throw-away PostgreSQL database for the benchmarks that need millions of rows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")


def admin_sql(statement: str) -> None:
    """Run one statement on the server's `postgres` database (autocommit: CREATE/DROP DATABASE)."""
    import psycopg2

    conn = psycopg2.connect(f"{PG}/postgres")
    conn.autocommit = True
    try:
        conn.cursor().execute(statement)
    finally:
        conn.close()


def recreate(db: str, env: dict[str, str]) -> None:
    """Drop `db` if it exists, create it empty and migrate it with `env` (which names it in DATABASE_URL)."""
    drop(db)
    admin_sql(f"CREATE DATABASE {db}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)


def drop(db: str) -> None:
    admin_sql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
