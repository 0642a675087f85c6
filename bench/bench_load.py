"""Load test of the production path: N annotators and M validators (locust, headless) for a fixed time.

    nice -n 10 .venv/bin/python bench/bench_load.py [--annotators 20] [--validators 4] [--writers-alone on|off]
        [--seconds 60] [--think 0 3] [--task sentiment] [--web-workers 3] [--web-threads 8] [--worker-concurrency 2] [--tiny]
        [--out FILE]

Starts everything it needs itself, on free ports, and stops it at the end (works on a bare checkout):
PostgreSQL database `h_serving_load` (dropped and re-created on BENCH_PG_URL, default the local server), its own
redis-server (Celery broker and CACHE_URL, as compose has them), TorchServe (under /tmp/torchserve.lock),
gunicorn (`--web-workers` processes of `--web-threads` threads, DEBUG=false) and one Celery worker (`--worker-concurrency`), as
scripts/serve_prod.sh does. The demo tasks are loaded (`manage.py load_demo`); the task's round gets a
3-member ensemble of the real encoder (all-MiniLM-L6-v2 with a fresh head: the compute and memory of the
demo's fine-tuned members; `--tiny` for a tiny random encoder), registered eagerly (`deploy_ensemble`, then
`manage.py torchserve_register` as at TorchServe start). `--seed-examples` (5,000) by a seed writer fill the validation
queue. Rate limits are raised so that they do not cap the load (the task's `submission_rate`,
SUBMISSION_RATE, VOTE_RATE).

Then, in the same run:
  1. the batched-forward limit of the ensemble: examples/s of the TorchServe backend's `predict` for the
     3 members on batches of 32 (no explanation), for `--forward-seconds`;
  2. one locust phase per `--think` value (seconds between two actions of a user; 0 = closed loop): the
     users of bench/load/locustfile.py for `--seconds` each (with thinking, each user's first action comes at a
     random moment within the first think time; a closed loop starts all at once); with `--writers-alone on`
     (the default) each is followed by the same phase without the validators: the writer's path alone, every
     tier counted, and from the pair what each validator request cost. The validators do not pause, so how often
     they vote swings from run to run with how fast the queue answers, and so does a platform figure per verdict
     that carries their requests (issue 27, runs O and P).
Reports submissions/s (verdicts received), validations/s (votes saved), p50/p95 of submit->verdict and of
validation/next, errors; writes var/bench/load.md (or --out: docs/benchmarks/load.md is curated by hand from these reports, so the
bench never overwrites it); exits non-zero when a part fails.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import io
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
DB = "h_serving_load"


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def free_ports(n: int) -> list[int]:
    from zoo.torchserve_ctl import free_ports as ports

    return ports(n)


class Stack:
    """The processes of the production path, each in its own process group, logs in `workdir/logs`."""

    def __init__(self, workdir: Path, env: dict[str, str]):
        self.workdir, self.env, self.procs = workdir, env, {}
        (workdir / "logs").mkdir(parents=True, exist_ok=True)

    def launch(self, name: str, command: list[str]) -> None:
        with open(self.workdir / "logs" / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, env=self.env, cwd=ROOT,
                                                start_new_session=True)

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name)

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.workdir / "logs" / f"{name}.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")


def wait_for(what: str, probe, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not come up within {timeout_s:.0f} s")


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as reply:
        return reply.status == 200


TOP_LAYERS = 3  # what the cached-top recipe trains per member (the round pipeline's default)


def shake_top_layers(model, seed: int) -> None:
    """Members as the cached-top recipe leaves them: embeddings and lower layers bit-identical (the shared trunk),
    the top TOP_LAYERS blocks, pooler and head different per member (a fine-tuning-sized change, seeded)."""
    import torch

    layers = model.base_model.encoder.layer
    frozen = {id(p) for p in model.base_model.embeddings.parameters()}
    for layer in list(layers)[:len(layers) - TOP_LAYERS]:
        frozen |= {id(p) for p in layer.parameters()}
    generator = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for p in model.parameters():
            if id(p) not in frozen:
                p.add_(torch.randn(p.shape, generator=generator) * 0.02)


def build_members(folder: Path, task, tiny: bool, members: int = 3) -> list:
    from modelzoo import services
    from zoo import encoder, training
    from zoo.heads import get_head

    versions = []
    for seed in range(members):
        out = folder / task.slug / f"load-s{seed}"
        if not (out / "zoo.json").is_file():
            spec = services.default_spec(task, seed=seed, **({"encoder": training.TINY} if tiny else {}))
            if tiny:
                spec.max_length = get_head(spec.head).default_max_length // 2
            training.seed_everything(seed)
            model = training.build_model(spec)
            if not tiny:
                shake_top_layers(model, seed)
            training.save_artifact(model, encoder.load_tokenizer(), spec,
                                   {"note": f"load bench: top {TOP_LAYERS} blocks + head per member"}, out, {"seed": seed})
        versions.append(services.register_artifact(task, out, name=f"{task.slug}-load-s{seed}"))
    return versions


def make_users(task, annotators: int, validators: int) -> dict:
    from django.contrib.auth.models import User

    from accounts.tokens import issue
    from tasks import guidelines, roles
    from tasks.models import TaskMembership

    current = guidelines.current(task)
    out: dict = {"task": task.slug, "annotators": [], "validators": []}
    for kind, count, role in (("annotators", annotators, roles.ANNOTATOR), ("validators", validators, roles.VALIDATOR)):
        for i in range(count):
            user = User.objects.create_user(f"load-{kind[:-1]}-{i}", f"load-{kind}-{i}@bench.local", "x")
            roles.grant(user, role)
            roles.grant_on_task(user, task, role, TaskMembership.Source.DEMO)
            if current is not None:
                guidelines.acknowledge(user, task, current.version)
            out[kind].append(issue(user, "load test", counted=False)[1])
    return out


def seed_queue(task, round_, n: int) -> None:
    """`n` scored examples by a seed writer: the validators' queue is not empty from the first second."""
    from django.contrib.auth.models import User

    from annotation.models import Example

    writer = User.objects.create_user("load-seed-writer", "seed@bench.local", "x")
    context = task.contexts.first()
    Example.objects.bulk_create([
        Example(round=round_, context=context, author=writer, input={"text": f"Seed example number {i}, quite good."},
                target="positive", scoring_state=Example.Scoring.SCORED, fooled=bool(i % 2),
                ensemble_prediction={"label": "negative" if i % 2 else "positive", "probs": {}})
        for i in range(n)])
    from validation.queue import sync_queue

    sync_queue(task)  # bulk_create sends no post_save: give the seeded examples their queue rows
    # The planner's statistics as a running deployment's autovacuum keeps them. Without this, a table that grows
    # from the seed to ten times its size within a phase is planned on the seed's statistics ("1 row"), and the
    # validation queue's candidates are sorted in full (25 ms) instead of read in index order (0.1 ms).
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def forward_limit(versions, seconds: float, batch: int = 32) -> dict:
    from modelzoo.serving import ModelRef, get_backend

    backend = get_backend("torchserve")
    refs = [ModelRef.of(v) for v in versions]
    inputs = [{"text": f"The staff were friendly but the soup was cold, visit {i}."} for i in range(batch)]
    backend.predict(refs, inputs)  # warm
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        backend.predict(refs, inputs)
        done += batch
    elapsed = time.perf_counter() - started
    return {"examples_per_s": round(done / elapsed, 1), "batch": batch, "members": len(refs), "seconds": round(elapsed, 1)}


def component_cpu(stack: Stack, torchserve_dir: Path) -> dict[str, dict[int, float]]:
    """CPU seconds (user + system) used so far, per process, by each part of the stack, child processes
    included: the gunicorn, Celery and Redis process groups the bench started, TorchServe (its Java frontend and
    Python workers, found by their model-store path) and PostgreSQL (every `postgres` process of this machine).
    PostgreSQL backends that exit during a phase (a connection closed) are counted too: the postmaster reaps
    them, and its children's times (entry REAPED of the part) grow by each one's whole life; `cpu_delta` takes
    off what such a backend had used before the phase. Before issue 27's run M they were left out, which
    flattered a stack that opened a connection per job. The other parts' processes live through the run."""
    import psutil

    def tree(proc: psutil.Process) -> list[psutil.Process]:
        try:
            return [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def seconds(procs) -> dict[int, float]:
        out = {}
        for proc in procs:
            try:
                t = proc.cpu_times()
                out[proc.pid] = t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return out

    parts = {name: seconds(tree(psutil.Process(p.pid))) for name, p in stack.procs.items() if p.poll() is None}
    serving, postgres = [], []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if str(torchserve_dir) in cmd or "model_service_worker" in cmd:
            serving += tree(proc)
        elif (proc.info.get("name") or "").startswith("postgres"):
            postgres.append(proc)
    parts["torchserve"] = seconds(serving)
    parts["postgres"] = seconds(postgres)
    for proc in postgres:  # the postmaster: the parent of the others
        try:
            if proc.ppid() not in parts["postgres"]:
                t = proc.cpu_times()
                parts["postgres"][REAPED] = parts["postgres"].get(REAPED, 0.0) + t.children_user + t.children_system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    cpu = psutil.cpu_times()
    parts["machine"] = {0: cpu.user + cpu.nice + cpu.system + getattr(cpu, "irq", 0) + getattr(cpu, "softirq", 0)}
    return parts


REAPED = -1  # a part's entry for the CPU of its processes' exited children, as their parent reaped them


def cpu_delta(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """Per part: CPU seconds between two `component_cpu` readings. A process started in between counts from zero;
    in a part with a REAPED entry (PostgreSQL), a process that exited in between is in that entry's growth with
    its whole life, so what it had used by the first reading is taken off; elsewhere it is left out."""
    out = {}
    for name, procs in after.items():
        was = before.get(name, {})
        total = sum(t - was.get(pid, 0.0) for pid, t in procs.items())
        if REAPED in procs:
            total -= sum(t for pid, t in was.items() if pid != REAPED and pid not in procs)
        out[name] = round(total, 1)
    return out


def purge_map_backlog(redis_port: int, settle_s: float = 3.0) -> int:
    """Start each phase with no word maps waiting: drop the explainer's queue left by the previous phase (those
    maps end "unavailable", as any map that cannot start within EXPLANATION_MAX_AGE_SECONDS does), then let the
    explainer finish the map in hand. Returns how many were dropped."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=redis_port, db=0)
    keys = list(client.scan_iter(match="dynabench-maps*"))  # the queue, and its priority lists if any
    dropped = sum(int(client.llen(key)) for key in keys if client.type(key) == b"list")
    if keys:
        client.delete(*keys)
    time.sleep(settle_s)
    return dropped


def run_locust(workdir: Path, env: dict, host: str, args, think: float, users_file: Path,
               cpu=dict, validators: int | None = None) -> dict:
    """One phase: the annotators, and `validators` validators (default `--validators`; 0: the writers alone)."""
    validators = args.validators if validators is None else validators
    name = f"think{think:g}-v{validators}"
    samples = workdir / f"samples-{name}.json"
    phase_env = {**env, "LOAD_USERS": str(users_file), "LOAD_SAMPLES": str(samples), "LOAD_THINK_S": str(think),
                 "LOAD_ANNOTATORS": str(args.annotators), "LOAD_VALIDATORS": str(validators),
                 "LOAD_MAPS": args.maps, "LOAD_FLOW": args.flow}
    users = args.annotators + validators
    command = [str(BIN / "locust"), "-f", str(ROOT / "bench" / "load" / "locustfile.py"), "--headless",
               "-u", str(users), "-r", str(users), "-t", f"{int(args.seconds)}s", "--host", host,
               "--stop-timeout", "10", "--only-summary", "--csv", str(workdir / f"locust-{name}"),
               "--exit-code-on-error", "0"]
    import resource

    started, cpu_before = time.time(), cpu()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, env=phase_env, cwd=ROOT, capture_output=True, text=True,
                            timeout=args.seconds + 120)
    children_after, cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN), cpu()
    cpu_used = cpu_delta(cpu_before, cpu_after) if cpu_after else {}
    cpu_used["locust"] = round(children_after.ru_utime + children_after.ru_stime
                               - children_before.ru_utime - children_before.ru_stime, 1)
    (workdir / "logs" / f"locust-{name}.log").write_text(result.stdout + result.stderr)
    if result.returncode != 0 or not samples.is_file():
        raise RuntimeError(f"locust failed ({result.returncode}): {result.stderr[-1500:]}")
    data = json.loads(samples.read_text())
    duration = max(1e-9, min(args.seconds, time.time() - started))
    verdicts, votes = data["verdicts"], data["votes"]
    lat, nxt = data["submit_to_verdict_ms"], data["next_item_ms"]
    ready = [m["ms"] for m in data.get("maps", []) if m["state"] == "ready"]
    return {
        "think_s": think, "validators": validators, "seconds": args.seconds, "verdicts": len(verdicts),
        "pending_at_end": sum(1 for v in verdicts if v["state"] == "pending"),
        "submissions_per_s": round(len(verdicts) / duration, 2), "validations_per_s": round(len(votes) / duration, 2),
        "submit_to_verdict_p50_ms": _r(pct(lat, 0.5)), "submit_to_verdict_p95_ms": _r(pct(lat, 0.95)),
        "next_item_p50_ms": _r(pct(nxt, 0.5)), "next_item_p95_ms": _r(pct(nxt, 0.95)),
        "next_items": len(nxt), "errors": len(data["errors"]), "error_kinds": sorted(set(data["errors"]))[:5],
        "maps_ready": len(ready), "maps_unavailable": sum(1 for m in data.get("maps", []) if m["state"] == "unavailable"),
        "maps_superseded": sum(1 for m in data.get("maps", []) if m["state"] == "superseded"),
        "submit_to_map_p50_ms": _r(pct(ready, 0.5)), "submit_to_map_p95_ms": _r(pct(ready, 0.95)),
        "cpu_s": cpu_used, "wall_s": round(time.time() - started, 1),
        "requests": http_requests(workdir / f"locust-{name}_stats.csv"),
        # The same p95 leaving out verdicts that arrived in the phase's first 15 s (users starting up).
        "submit_to_verdict_p95_after_15s_ms": _r(pct([v["ms"] for v in verdicts if "ms" in v and v["t"] - started > 15],
                                                     0.95)),
    }


def http_requests(stats_csv: Path) -> dict[str, int]:
    """HTTP requests per endpoint in the phase, from locust's stats (the submit->verdict flows left out)."""
    counts: dict[str, int] = {}
    if stats_csv.is_file():
        with stats_csv.open(newline="", encoding="utf-8") as rows:
            for row in csv.DictReader(rows):
                if row.get("Type") not in ("FLOW", "", None) and row.get("Name") != "Aggregated":
                    counts[row["Name"]] = counts.get(row["Name"], 0) + int(row["Request Count"])
    return counts


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def run(workdir: Path, args) -> dict:
    sys.path.insert(0, str(ROOT / "bench"))
    import pgdb

    web, redis_port, ts_inf, ts_mgmt, ts_metrics, ts_grpc, ts_grpc_m = free_ports(7)
    pg = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
    env = {
        **os.environ, "DEBUG": "false", "SECRET_KEY": "load-bench-" + "x" * 50, "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": f"{pg}/{DB}", "DB_CONN_MAX_AGE": "60",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0", "CELERY_RESULT_BACKEND": f"redis://127.0.0.1:{redis_port}/0",
        "CACHE_URL": f"redis://127.0.0.1:{redis_port}/1", "CELERY_QUEUE": "dynabench",
        "MODEL_BACKEND": "torchserve", "TORCHSERVE_URL": f"http://127.0.0.1:{ts_inf}",
        "TORCHSERVE_MANAGEMENT_URL": f"http://127.0.0.1:{ts_mgmt}", "MODEL_STORE": str(workdir / "models"),
        "VAR_DIR": str(workdir / "var"), "SUBMISSION_RATE": "100000/min", "VOTE_RATE": "100000/min",
        "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "C_FORCE_ROOT": "1", "DJANGO_SETTINGS_MODULE": "dynabench_site.settings",
        "SCORING_BATCH_MAX": str(args.batch_max),
    }
    os.environ.update({k: v for k, v in env.items() if k not in os.environ or os.environ[k] != v})
    stack = Stack(workdir, env)
    results: dict = {"load_before": " / ".join(f"{x:.1f}" for x in os.getloadavg()), "args": vars(args) | {"out": str(args.out)}}
    pgdb.recreate(DB, env)
    stack.launch("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                           "--appendonly", "no"])
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from modelzoo import services
        from tasks.models import Task
        from zoo.torchserve_ctl import LocalTorchServe

        call_command("load_demo", stdout=io.StringIO())
        task = Task.objects.get(slug=args.task)
        task.config = {**task.config, "submission_rate": "100000/min"}  # the task's own per-writer limit (30/min)
        task.save(update_fields=["config"])
        round_ = task.current_round
        with open("/tmp/torchserve.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            server = LocalTorchServe(workdir / "torchserve", workdir / "models" / "torchserve", ts_inf, ts_mgmt,
                                     ts_metrics, ts_grpc, ts_grpc_m)
            server.start(timeout_s=180)
            try:
                started = time.perf_counter()
                versions = build_members(workdir / "models", task, args.tiny)
                services.deploy_ensemble(round_, versions)  # registers the ensemble on TorchServe, eagerly
                call_command("torchserve_register", wait=30, stdout=io.StringIO())  # as at TorchServe start
                results["register_s"] = round(time.perf_counter() - started, 1)
                users_file = workdir / "users.json"
                users_file.write_text(json.dumps(make_users(task, args.annotators, args.validators)))
                seed_queue(task, round_, args.seed_examples)
                results["forward_limit"] = forward_limit(versions, args.forward_seconds)
                print(f"forward limit: {results['forward_limit']}", flush=True)
                stack.launch("worker", [str(BIN / "celery"), "-A", "dynabench_site", "worker", "--loglevel=warning",
                                        "--concurrency", str(args.worker_concurrency), "--pool", args.worker_pool,
                                        "-Q", "dynabench",
                                        "-n", f"load-{web}@%h", "--without-gossip", "--without-mingle"])
                # The word maps' worker, as serve_prod.sh starts it: one process, nice 10, models in process.
                if args.maps == "on":
                    stack.launch("explainer", ["env", "MODEL_BACKEND=inprocess", "nice", "-n", "10", str(BIN / "celery"),
                                               "-A", "dynabench_site", "worker", "--loglevel=warning", "--concurrency",
                                               "1", "-Q", "dynabench-maps", "-n", f"load-maps-{web}@%h",
                                               "--without-gossip", "--without-mingle"])
                stack.launch("web", [str(BIN / "gunicorn"), "dynabench_site.wsgi", "-b", f"127.0.0.1:{web}",
                                     "-w", str(args.web_workers), "--timeout", "60",
                                     *(["-k", "gthread", "--threads", str(args.web_threads)] if args.web_threads > 1 else [])])
                host = f"http://127.0.0.1:{web}"
                wait_for("gunicorn", lambda: http_ok(f"{host}/api/tasks/"), 90)
                time.sleep(3)  # the Celery worker connects
                stack.check_alive()
                results["phases"] = []
                # Each think time with the validators, then (--writers-alone) without them: the second phase is
                # the writer's path alone, every tier counted; the pair gives the validators' requests their cost.
                crews = [args.validators] + ([0] if args.writers_alone == "on" and args.validators else [])
                for think in args.think:
                    for validators in crews:
                        results["maps_purged"] = results.get("maps_purged", 0) + purge_map_backlog(redis_port)
                        phase = run_locust(workdir, env, host, args, think, users_file,
                                           cpu=lambda: component_cpu(stack, workdir / "torchserve"),
                                           validators=validators)
                        stack.check_alive()
                        print(f"think {think:g} s, {validators} validators: {phase}", flush=True)
                        results["phases"].append(phase)
                results["forward_limit_after"] = forward_limit(versions, args.forward_seconds)
            finally:
                stack.stop("web")
                stack.stop("worker")
                stack.stop("explainer")
                server.stop()
    finally:
        stack.stop_all()
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            pgdb.drop(DB)
    results["load_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return results


PLATFORM_PARTS = ("web", "worker", "torchserve", "postgres", "redis")  # issue 27's "platform"; the explainer apart


def platform_ms_per_verdict(phase: dict) -> float | None:
    cpu = phase.get("cpu_s")
    if not cpu or not phase["verdicts"]:
        return None
    return 1000 * sum(cpu.get(k, 0) for k in PLATFORM_PARTS) / phase["verdicts"]


def validator_requests(phase: dict) -> int:
    return sum(n for name, n in phase.get("requests", {}).items() if name.startswith("validat"))


def split_costs(phases: list[dict]) -> str:
    """Per think time, from the phase with the validators and the one without them (same run): the writer's path
    per submission, and what each validator request (next item or vote) cost on top."""
    lines = []
    for think in dict.fromkeys(p["think_s"] for p in phases):
        mixed = next((p for p in phases if p["think_s"] == think and p["validators"]), None)
        alone = next((p for p in phases if p["think_s"] == think and not p["validators"]), None)
        if mixed is None or alone is None or not alone["verdicts"] or not validator_requests(mixed):
            continue
        writer = platform_ms_per_verdict(alone)
        mixed_ms = platform_ms_per_verdict(mixed) * mixed["verdicts"]
        each = (mixed_ms - writer * mixed["verdicts"]) / validator_requests(mixed)
        lines.append(f"- think {think:g} s: the writer's path {writer:.1f} ms of platform CPU per submission (writers "
                     f"alone); each validator request (next item or vote) {each:.1f} ms on top "
                     f"({validator_requests(mixed)} requests beside {mixed['verdicts']} verdicts in the phase with "
                     f"validators)")
    if not lines:
        return ""
    return ("\nThe writer's path and the validators' requests apart (the phase without validators gives the first; "
            "the rest of the phase with them, per validator request, the second):\n" + "\n".join(lines) + "\n")


def report(r: dict, args) -> str:
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    limit = r["forward_limit"]["examples_per_s"]
    rows = "\n".join(
        f"| {p['think_s']:g} s | {p['validators']} | {p['submissions_per_s']} | {p['validations_per_s']} | {p['submit_to_verdict_p50_ms']} | "
        f"{p['submit_to_verdict_p95_ms']} | {p['next_item_p50_ms']} | {p['next_item_p95_ms']} | {p['verdicts']} | "
        f"{p['errors']} | {p.get('submit_to_map_p50_ms')} | {p.get('submit_to_map_p95_ms')} | "
        f"{p.get('maps_ready', 0)} / {p.get('maps_unavailable', 0)} / {p.get('maps_superseded', 0)} | "
        f"{p.get('submit_to_verdict_p95_after_15s_ms')} |" for p in r["phases"])
    verdicts = []
    for p in r["phases"]:
        p95 = p["submit_to_verdict_p95_ms"]
        ratio = p["submissions_per_s"] / limit if limit else 0
        per_verdict = platform_ms_per_verdict(p)
        counted = "the writer's path alone" if not p["validators"] else "the validators' requests included"
        verdicts.append(
            f"- think {p['think_s']:g} s, {p['validators']} validators: p95 submit->verdict {p95} ms ({'met' if p95 is not None and p95 < 1000 else 'NOT met'}"
            f" for < 1 s); platform CPU per verdict ({counted}) "
            + (f"{per_verdict:.1f} ms ({'met' if per_verdict <= 40 else 'NOT met'} for <= 40 ms"
               f"{', a closed-loop goal' if p['think_s'] else ''}{'' if args.maps == 'off' else '; maps on, the explainer not counted'})"
               if per_verdict is not None else "not measured (NOT met)")
            + f"; {p['submissions_per_s']} submissions/s = {ratio:.2f} x the forward limit")
    parts = ["web", "worker", "explainer", "torchserve", "postgres", "redis", "locust", "machine"]
    cpu_rows = "\n".join(
        f"| {p['think_s']:g} s | {p['validators']} | {p.get('wall_s', '')} | "
        + " | ".join(f"{p['cpu_s'].get(k, 0):.1f}" for k in parts)
        + f" | {sum(v for k, v in p['cpu_s'].items() if k != 'machine'):.1f} | "
        + (f"{platform_ms_per_verdict(p):.1f}" if p["verdicts"] else "-")
        + (f" | {1000 * p['cpu_s'].get('explainer', 0) / p['verdicts']:.1f}" if p["verdicts"] else " | -")
        + " |" for p in r["phases"] if p.get("cpu_s"))
    encoder = ("tiny random encoder (--tiny)" if args.tiny else
               f"real encoder all-MiniLM-L6-v2, top {TOP_LAYERS} blocks + head different per member (as the cached-top "
               f"recipe trains them; the lower layers are the shared trunk)")
    return f"""# Load: annotators and validators on the production path

Command: `nice -n 10 .venv/bin/python bench/bench_load.py --annotators {args.annotators} --validators {args.validators} \
--seconds {args.seconds:g} --think {' '.join(f'{t:g}' for t in args.think)} --web-workers {args.web_workers} \
--web-threads {args.web_threads} --worker-concurrency {args.worker_concurrency}{' --tiny' if args.tiny else ''}\
{'' if args.writers_alone == 'on' else ' --writers-alone off'}\
{'' if args.worker_pool == 'prefork' else ' --worker-pool ' + args.worker_pool}`

Machine: {os.cpu_count()} CPUs (nproc), {mem_gb:.0f} GiB RAM, {platform.machine()}, Python {platform.python_version()};
shared with other work: load average {r['load_before']} before, {r['load_after']} after. Everything below ran on
this one machine: PostgreSQL, a Redis started by the bench, TorchServe (one worker holding the 3-member
ensemble), gunicorn ({args.web_workers} {'sync workers' if args.web_threads <= 1 else f'gthread workers x {args.web_threads} threads'}, DEBUG=false), one Celery worker (concurrency
{args.worker_concurrency}, {args.worker_pool} pool), and locust itself. Models: {encoder}, 3 members, task `{args.task}`.

Batched-forward limit of the same ensemble (TorchServe backend `predict`, 3 members, batches of
{r['forward_limit']['batch']}, no explanation), same run: **{limit} examples/s** before the load phases,
{r['forward_limit_after']['examples_per_s']} after.

Each phase: {args.annotators} annotators (submit, then wait for the verdict as the create page does) and
{args.validators} validators (lease the next item, vote) for {args.seconds:g} s{', then the same without the validators (the writers alone)' if args.writers_alone == 'on' and args.validators else ''}; "think" is the pause between two
actions of one user (0 = closed loop: each user acts again as soon as it has its answer).

| think | validators | submissions/s | validations/s | submit->verdict p50 ms | p95 ms | validation/next p50 ms | p95 ms | verdicts | errors | submit->map p50 ms | p95 ms | maps ready / unavailable / superseded | submit->verdict p95 ms after the first 15 s |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

The verdict is the ensemble's forward pass; its word map (word occlusion over the 3 members) follows in a job on a
queue of its own served by one explainer process (nice 10, models in process), which the annotators poll for
in the background as the page does: one poll per annotator, for the example on screen, dropped when the next
verdict replaces it ("superseded"). A map that could not start within EXPLANATION_MAX_AGE_SECONDS (60 s) of its
verdict is given up as unavailable. Each phase starts with the maps queue empty: the backlog a phase leaves is
dropped before the next ({r.get('maps_purged', 0)} maps in all in this run), so that no phase pays for the maps
of the one before.

Where the CPU went in each phase (CPU seconds, user + system, of each part and its child processes; the
machine has {os.cpu_count()} cores, so a phase of W wall seconds has at most {os.cpu_count()} x W to give; "machine"
is the whole machine's busy time from /proc/stat, "all" the sum of the parts (PostgreSQL backends that exited
during the phase are counted through the postmaster's reaped-children time); "platform" per verdict is web +
worker + TorchServe + PostgreSQL + Redis, the validators' requests included, and the word maps' explainer is
given apart):

| think | validators | wall s | {' | '.join(parts)} | all | platform CPU ms per verdict | explainer CPU ms per verdict |
|---|---|---|{'---|' * len(parts)}---|---|---|
{cpu_rows}
{split_costs(r['phases'])}

Goals (issue 27): p95 submit->verdict < 1 s (20 annotators in a closed loop; 50 thinking 3 s); platform CPU per
verdict (web + worker + TorchServe + PostgreSQL + Redis) <= 40 ms in a closed loop with maps off. With the
validators, the figure moves with how often they voted (they do not pause, so they vote as fast as the queue
answers); without them it is the writer's path alone.
{chr(10).join(verdicts)}

Raw figures: `{json.dumps(r['phases'])}`
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--validators", type=int, default=4)
    parser.add_argument("--writers-alone", choices=["on", "off"], default="on",
                        help="after each phase with validators, the same phase without them (the writer's path alone, "
                             "and the validators' requests' cost from the pair)")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, nargs="+", default=[0.0], help="pause between actions, one phase each")
    parser.add_argument("--task", default="sentiment", help="a demo task (classification)")
    parser.add_argument("--web-workers", type=int, default=3)
    parser.add_argument("--web-threads", type=int, default=8,
                        help="> 1: gunicorn gthread workers with this many threads (serve_prod.sh: WEB_THREADS, 8); 1: sync workers")
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--worker-pool", choices=["prefork", "threads"], default="prefork",
                        help="the scoring worker's Celery pool (serve_prod.sh and compose use prefork)")
    parser.add_argument("--forward-seconds", type=float, default=10)
    parser.add_argument("--seed-examples", type=int, default=5000,
                        help="scored examples in the validators' queue before the load (a running collection's queue; "
                             "runs before O had 200)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random encoder instead of the real one")
    parser.add_argument("--maps", choices=["on", "off"], default="on",
                        help="off: submissions ask for no word map and nobody polls for one (no explainer started)")
    parser.add_argument("--flow", choices=["one", "two"], default="one",
                        help="one: the next context comes with the submission's answer; two: contexts/next first")
    parser.add_argument("--batch-max", type=int, default=16, help="SCORING_BATCH_MAX of the worker (1: no gathering)")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench" / "load.md")
    args = parser.parse_args()
    if not shutil.which("redis-server") or not (BIN / "locust").exists():
        sys.exit("bench_load needs redis-server and locust (pip install -r requirements.txt)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop what was started (the finally blocks)
    workdir = Path(tempfile.mkdtemp(prefix="bench-load-"))
    try:
        results = run(workdir, args)
    except Exception:
        print(f"bench_load failed; logs kept in {workdir / 'logs'}", file=sys.stderr)
        raise
    text = report(results, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
