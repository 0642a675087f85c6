"""The local production path (scripts/serve_prod.sh) as a session fixture, for the fault tests.

gunicorn (DEBUG=false) + a real Celery worker + Celery beat + TorchServe (under `flock /tmp/torchserve.lock`) on
a Redis of our own (a free port: the shared 6379 is never touched) and this machine's PostgreSQL (the database
PROD_DATABASE_URL, default DATABASE_URL's name + `_prodfaults`, dropped and created afresh). The demo tasks are loaded and the sentiment
round gets a tiny two-member ensemble (the tiny encoder: built in seconds), registered on TorchServe eagerly.

The tests speak HTTP to the stack like any client (the demo annotator's token) and read the workers' logs;
they stop and start parts of it with the same script an operator uses.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "serve_prod.sh"
# Short retry, sweep and heartbeat periods so every recovery shows within the CI budget; generous limits.
STACK_ENV = {
    "SCORING_RETRY_BASE_SECONDS": "1", "SCORING_RETRY_MAX_SECONDS": "3", "SCORING_STALE_SECONDS": "4",
    "SCORING_SWEEP_SECONDS": "4", "SCORING_MAX_RETRIES": "200", "CELERY_VISIBILITY_TIMEOUT": "20",
    "WORKER_HEARTBEAT_SECONDS": "2", "VERDICT_WAIT_MS": "500", "SUBMISSION_RATE": "100000/min",
    "LOGIN_RATE": "100000/min", "TOKEN_RATE": "100000/hour", "WEB_WORKERS": "2", "WORKER_CONCURRENCY": "2",
    "PORT": "0", "DEMO": "1", "TORCHSERVE_WORKERS": "1",
}


def drop_and_create(url: str) -> None:
    import psycopg2

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    conn = psycopg2.connect(host=parsed.hostname, port=parsed.port or 5432, user=parsed.username,
                            password=parsed.password, dbname="postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()


@dataclass
class Stack:
    dir: Path
    env: dict[str, str]
    token: str = ""
    health_token: str = ""  # the demo admin's read-only token: /healthz shows its details to staff only
    context_id: int | None = None
    counter: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.env['WEB_PORT']}"

    def script(self, *args: str, timeout: float = 600) -> str:
        result = subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=self.env, capture_output=True,
                                text=True, timeout=timeout)
        if result.returncode != 0:
            raise AssertionError(f"serve_prod.sh {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}\n"
                                 f"{self.log_tail('torchserve')}")
        return result.stdout

    def manage(self, *args: str, extra: dict[str, str] | None = None, timeout: float = 600) -> str:
        result = subprocess.run([self.env["PY"], "manage.py", *args], cwd=ROOT, env={**self.env, **(extra or {})},
                                capture_output=True, text=True, timeout=timeout)
        assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def pid(self, part: str) -> int:
        return int((self.dir / "pids" / f"{part}.pid").read_text())

    def signal(self, part: str, sig: int) -> None:
        os.killpg(self.pid(part), sig)

    def kill9(self, part: str) -> None:
        """kill -9 the whole part (its process group: e.g. the worker's main process and its pool)."""
        pid = self.pid(part)
        os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)

    def log(self, part: str) -> str:
        path = self.dir / "logs" / f"{part}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tail(self, part: str, chars: int = 3000) -> str:
        return f"---- {part}.log ----\n{self.log(part)[-chars:]}"

    # --- HTTP ----------------------------------------------------------------------------------------
    def call(self, method: str, path: str, body=None, token: str | None = None, timeout: float = 30):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        if token is None:
            token = self.token
        if token:
            headers["Authorization"] = f"Token {token}"
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            raw, status = exc.read(), exc.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")[:500]

    def submit(self, label: str) -> tuple[int, dict]:
        self.counter += 1
        text = f"Fault run {label} {self.counter}: the plot was thin but the actors carried it {time.time_ns()}."
        body = {"input": {"text": text}, "target": "positive", "context_id": self.context_id,
                "idempotency_key": f"{label}-{self.counter}-{time.time_ns()}"}
        return self.call("POST", "/api/tasks/sentiment/examples/", body)

    def example(self, pk: int) -> dict:
        status, data = self.call("GET", f"/api/examples/{pk}/")
        assert status == 200, (status, data)
        return data

    def wait_scored(self, ids: list[int], timeout: float) -> tuple[float, dict[int, dict]]:
        """Wait until every example has its verdict; returns the seconds it took and the examples."""
        started = time.monotonic()
        seen: dict[int, dict] = {}
        while time.monotonic() - started < timeout:
            seen = {pk: self.example(pk) for pk in ids}
            if all(e["scoring_state"] != "pending" for e in seen.values()):
                return time.monotonic() - started, seen
            time.sleep(0.5)
        states = {pk: (e["scoring_state"], e["scoring_attempts"], e["scoring_error"][:120]) for pk, e in seen.items()}
        raise AssertionError(f"not scored within {timeout:.0f} s: {states}\n{self.log_tail('worker')}\n"
                             f"{self.log_tail('beat', 1500)}")

    def wait_for_worker(self, timeout: float) -> None:
        """Until /healthz lists a worker's heartbeat."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, health = self.call("GET", "/healthz", token=self.health_token)
            if isinstance(health, dict) and health["checks"]["workers"].get("count"):
                return
            time.sleep(1)
        raise AssertionError(f"no worker seen within {timeout:.0f} s\n{self.log_tail('worker')}")

    def verdicts_stored(self, pk: int) -> int:
        """How many times a worker stored a verdict for example `pk` (every worker log of the run)."""
        pattern = re.compile(rf"verdict stored for example {pk} \(")
        return sum(len(pattern.findall(p.read_text(errors="replace"))) for p in (self.dir / "logs").glob("worker*.log"))


def prod_database_url() -> str:
    """PROD_DATABASE_URL, else DATABASE_URL's server with the database `<name>_prodfaults` (dropped and created)."""
    if os.environ.get("PROD_DATABASE_URL"):
        return os.environ["PROD_DATABASE_URL"]
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dynabench")
    parsed = urlparse(base)
    if not parsed.scheme.startswith("postgres"):
        pytest.skip("the production path needs PostgreSQL (DATABASE_URL or PROD_DATABASE_URL)")
    return parsed._replace(path=f"/{parsed.path.lstrip('/') or 'dynabench'}_prodfaults").geturl()


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    # The stack runs its own TorchServe for the whole session; another TorchServe of the same pytest session
    # (tests/modelzoo) would collide with it (their worker sockets share the system temp folder). So the fault
    # tests run in a pytest session of their own: `PROD_FAULTS=1 pytest tests/prod -m integration` (.ci/run).
    if os.environ.get("PROD_FAULTS") != "1":
        pytest.skip("the fault tests run in their own session: PROD_FAULTS=1 pytest tests/prod -m integration")
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.fail("no .venv: run `make venv` first")
    work = tmp_path_factory.mktemp("prod")
    database = prod_database_url()
    drop_and_create(database)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "SCORING_", "TORCHSERVE_"))
            and k not in {"DATABASE_URL", "CACHE_URL", "MODEL_BACKEND", "MODEL_STORE", "VAR_DIR", "DEBUG", "SECRET_KEY",
                          "JOB_RUNNER", "PORT", "REDIS_PORT", "STATIC_ROOT", "EXPORTS_DIR"}}
    env = {**keep, **STACK_ENV, "PROD_DIR": str(work), "DATABASE_URL": database,
           "PY": str(ROOT / ".venv" / "bin" / "python")}
    stack = Stack(work, env)
    started = time.monotonic()
    try:
        stack.script("start", "redis")
        stack.env.update(read_env(work / "env"))
        stack.script("start", "database")
        # The sentiment round's models: a tiny two-member ensemble, deployed in process (nothing registered yet).
        stack.manage("shell", "-c", "from modelzoo.testing import deploy_tiny_ensemble; from tasks.models import Task; "
                     "deploy_tiny_ensemble(Task.objects.get(slug='sentiment').current_round, members=2)",
                     extra={"MODEL_BACKEND": "inprocess"})
        stack.script("start", "torchserve", timeout=1500)  # may wait for the machine's TorchServe lock
        stack.script("start", "register")
        stack.script("start", "web")
        stack.script("start", "worker")
        stack.script("start", "beat")
        status, answer = stack.call("POST", "/api/auth/token/", {"username": "admin", "password": "dynabench-demo",
                                                                 "name": "health", "access": "read"}, token="")
        assert status == 200, (status, answer)
        stack.health_token = answer["key"]
        stack.wait_for_worker(120)
        stack.timings["start_s"] = time.monotonic() - started
        status, answer = stack.call("POST", "/api/auth/token/", {"username": "annotator", "password": "dynabench-demo",
                                                                 "name": "faults"}, token="")
        assert status == 200, (status, answer)
        stack.token = answer.get("token") or answer.get("key")
        status, context = stack.call("POST", "/api/tasks/sentiment/contexts/next/", {})
        assert status == 200, (status, context)
        stack.context_id = context["id"]
        yield stack
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], cwd=ROOT, env=stack.env, capture_output=True, timeout=180)


def read_env(path: Path) -> dict[str, str]:
    """The values serve_prod.sh chose (ports, URLs), from its env file."""
    out = {}
    for line in path.read_text().splitlines():
        match = re.match(r"export (.*)$", line)
        if not match:
            continue
        for part in match.group(1).split(" "):
            if "=" in part:
                key, value = part.split("=", 1)
                out[key] = value.strip("'")
    return out
