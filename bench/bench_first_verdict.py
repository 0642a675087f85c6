"""Benchmark: the first verdict after `make run` against the warm ones (issue 39, item 3; goal: first <= 2x warm).

    nice -n 10 .venv/bin/python bench/bench_first_verdict.py [--baseline /path/to/an/older/tree] [--think 15]

Serves as `make run` does, for real: a fresh SQLite database (`migrate`, `load_demo --base-data`), then
`manage.py runserver` (DEBUG, autoreload) and, beside it, `manage.py demo_models --tasks sentiment hate-speech`
in a separate process. The sentiment members come trained from a cache (`--workdir`/models: trained once with
`--max-steps`, the real MiniLM encoder, the demo's data and recipe; reused by their fingerprint as `demo_models`
reuses them), so the sentiment ensemble, its language-model opponent and the leaderboard's evaluation are
deployed within a minute or two, while the hate-speech ensemble really trains next (its cache is removed before
every run): the first verdict is measured while the demo models train, as a newcomer meets it.

Once the sentiment ensemble is deployed (the API says so), the bench waits `--think` seconds (a writer reads the
context and types a sentence) and submits through the API as the create page does, then `--warm` more
submissions one after another. For each: the HTTP round trip (what the writer waits; inline scoring answers
once the verdict is stored) and the server log's `score_example … succeeded in X s`. With `--baseline TREE` the
same run is made first with another checkout (e.g. `git archive <commit> | tar -x -C TREE`), so both figures
come from one run on one machine; the load average is printed with them.

Writes var/bench/first_verdict.json (never the curated docs page: docs/benchmarks/first-verdict.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT.parent / "shared" / "data"  # settings' default for this checkout (another tree is elsewhere)
TEXTS = [
    "The waiter forgot our order twice, but the dessert made up for it.",
    "A quiet film that never quite finds its voice.",
    "I laughed all the way home after the show.",
    "The train was late again, what a surprise.",
    "The museum opens at nine on weekdays.",
    "Honestly the best soup I have had this year.",
    "The plot drags and the ending falls flat.",
    "Our neighbours painted their fence green.",
    "I would happily watch it a third time.",
    "Nothing about the hotel felt worth the price.",
    "The lecture covered three chapters of the book.",
]
TARGETS = ["positive", "negative", "positive", "negative", "neutral", "positive", "negative", "neutral",
           "positive", "negative", "neutral"]
JOB_LINE = re.compile(r"score_example\[[^\]]*\] succeeded in ([0-9.]+)s")
WARM_LINE = re.compile(r"warmed the ensemble of .*")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(work: Path, models: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(VAR_DIR=str(work), DATABASE_URL=f"sqlite:///{work / 'db.sqlite3'}", MODEL_STORE=str(models),
               DEBUG="true", PYTHONUNBUFFERED="1", DATA_DIR=os.environ.get("DATA_DIR", str(DATA_DIR)))
    for name in ("CELERY_BROKER_URL", "CACHE_URL", "JOB_RUNNER"):  # the embedded default, as `make run`
        env.pop(name, None)
    return env


def manage(tree: Path, env: dict[str, str], *args: str, log: Path | None = None) -> None:
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 - closed by the child's end
    subprocess.run([sys.executable, "manage.py", *args], cwd=tree, env=env, check=True, stdout=out,
                   stderr=subprocess.STDOUT)


def shell(tree: Path, env: dict[str, str], code: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=tree, env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


WRITER = """
from django.contrib.auth import get_user_model
from accounts import tokens
from tasks import guidelines, roles
from tasks.models import Task
user, _ = get_user_model().objects.get_or_create(username="bench-writer")
roles.grant(user, roles.ANNOTATOR)
task = Task.objects.get(slug="sentiment")
g = guidelines.current(task)
if g is not None:
    guidelines.acknowledge(user, task, g.version)
_, key = tokens.issue(user, "bench", counted=False)
print(key)
"""


def call(port: int, method: str, path: str, key: str, body: dict | None = None, timeout: float = 120) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Authorization": f"Token {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def wait_for(check, timeout: float, every: float = 0.5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        result = check()
        if result:
            return result
        time.sleep(every)
    raise TimeoutError("gave up waiting")


def submit(port: int, key: str, context_id: int, text: str, target: str) -> tuple[float, dict]:
    """One submission as the create page makes it; the seconds until its verdict is there (polling a 202)."""
    started = time.perf_counter()
    status, data = call(port, "POST", "/api/tasks/sentiment/examples/", key,
                        {"context_id": context_id, "input": {"text": text}, "target": target, "next_context": True})
    if status not in (201, 202):
        raise RuntimeError(f"submission refused: {status} {data}")
    while data.get("scoring_state") == "pending":
        time.sleep(0.2)
        status, data = call(port, "POST", f"/api/examples/{data['id']}/score/", key, {})
    return time.perf_counter() - started, data


def train_cache(tree: Path, work: Path, models: Path, max_steps: int) -> None:
    """The sentiment members, trained once into the shared model cache (reused by fingerprint afterwards)."""
    if (models / "sentiment").is_dir() and any((models / "sentiment").glob("*/zoo.json")):
        return
    print(f"training the cached sentiment members once (--max-steps {max_steps}) …", flush=True)
    env = env_for(work, models)
    manage(tree, env, "migrate", "--noinput")
    manage(tree, env, "load_demo", "--base-data")
    manage(tree, env, "demo_models", "--tasks", "sentiment", "--max-steps", str(max_steps), "--opponent-rows", "0",
           "--no-progress")
    shutil.rmtree(work)


def run_once(label: str, tree: Path, workdir: Path, models: Path, args) -> dict:
    work = workdir / label
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.rmtree(models / "hate-speech", ignore_errors=True)  # it trains during the measurement, every run
    env = env_for(work, models)
    started = time.perf_counter()
    manage(tree, env, "migrate", "--noinput")
    manage(tree, env, "load_demo", "--base-data")
    print(f"[{label}] database ready in {time.perf_counter() - started:.0f} s", flush=True)
    key = shell(tree, env, WRITER)
    port = free_port()
    server_log, demo_log = work / "runserver.log", work / "demo_models.log"
    procs = []
    try:
        procs.append(subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"], cwd=tree,
                                      env=env, stdout=open(server_log, "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
                                      start_new_session=True))
        procs.append(subprocess.Popen([sys.executable, "manage.py", "demo_models", "--tasks", "sentiment", "hate-speech",
                                       "--max-steps", str(args.max_steps), "--no-progress"], cwd=tree, env=env,
                                      stdout=open(demo_log, "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
                                      start_new_session=True))
        wait_for(lambda: _answers(port), 300)
        served = time.perf_counter() - started
        deployed = wait_for(lambda: call(port, "GET", "/api/ensembles/?task=sentiment&active=true", key)[1].get(
            "results") or None, args.deploy_timeout, every=0.5)
        seen = time.perf_counter()
        print(f"[{label}] site answering after {served:.0f} s; sentiment ensemble deployed after "
              f"{seen - started:.0f} s ({len(deployed[0]['members'])} members)", flush=True)
        status, context = call(port, "POST", "/api/tasks/sentiment/contexts/next/", key, {})
        context_id = context["id"]
        time.sleep(args.think)
        load = os.getloadavg()
        times, jobs = [], []
        for i in range(args.warm + 1):
            seconds, data = submit(port, key, context_id, TEXTS[i % len(TEXTS)], TARGETS[i % len(TARGETS)])
            times.append(seconds)
            context_id = (data.get("next_context") or {}).get("id") or context_id
            print(f"[{label}] verdict {i + 1}: {seconds:.2f} s ({data.get('scoring_state')}, fooled={data.get('fooled')})",
                  flush=True)
            time.sleep(args.gap)
        training = "hate-speech" in demo_log.read_text() and "demo models ready" not in demo_log.read_text()
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    log = server_log.read_text(errors="replace")
    jobs = [float(m) for m in JOB_LINE.findall(log)]
    warm_lines = WARM_LINE.findall(log)
    warm = times[1:]
    return {"tree": str(tree), "think_s": args.think, "load_average": [round(x, 2) for x in load],
            "demo_models_still_training": training,
            "first_s": round(times[0], 3), "warm_s": [round(t, 3) for t in warm],
            "warm_median_s": round(statistics.median(warm), 3),
            "ratio": round(times[0] / statistics.median(warm), 2),
            "first_job_s": jobs[0] if jobs else None, "warm_job_s": jobs[1:len(times)],
            "warm_job_median_s": round(statistics.median(jobs[1:len(times)]), 3) if len(jobs) > 1 else None,
            "warmed": warm_lines[:3]}


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
            return True
    except urllib.error.HTTPError:
        return True  # it answers (perhaps "degraded" while the models train)
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout, measured first (side by side)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout measured (default: this one)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "var" / "bench" / "first_verdict")
    parser.add_argument("--max-steps", type=int, default=60, help="updates per member for the cached models")
    parser.add_argument("--think", type=float, default=15.0, help="seconds from the deploy to the first submission")
    parser.add_argument("--warm", type=int, default=5, help="submissions after the first")
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between submissions")
    parser.add_argument("--deploy-timeout", type=float, default=900.0)
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench" / "first_verdict.json")
    args = parser.parse_args()
    models = args.workdir / "models"
    train_cache(args.tree.resolve(), args.workdir / "cache", models, args.max_steps)
    runs = []
    if args.baseline:
        runs.append(("baseline", run_once("baseline", args.baseline.resolve(), args.workdir, models, args)))
    runs.append(("this tree", run_once("current", args.tree.resolve(), args.workdir, models, args)))
    print(f"\n{os.cpu_count()} CPUs; first verdict {args.think:g} s after the deploy, then {args.warm} more\n")
    print("| tree | first verdict (s) | warm median (s) | first / warm | first job (s) | warm job median (s) | load avg |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r in runs:
        print(f"| {name} | {r['first_s']:.2f} | {r['warm_median_s']:.2f} | {r['ratio']:.2f} | {r['first_job_s']} | "
              f"{r['warm_job_median_s']} | {' / '.join(str(x) for x in r['load_average'])} |")
    for name, r in runs:
        for line in r["warmed"]:
            print(f"{name}: {line}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(dict(runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
