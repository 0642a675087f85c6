"""Benchmark: the writing assistant as a writer waits for it, on the served demo, while the demo models train.

    .venv/bin/python bench/bench_assistant_served.py [--requests 12] [--phases early late] [--think 2]
                                                       [--database-url postgres://postgres@127.0.0.1:5432/h_assist]

Serves the demo as `make run` does, in a fresh VAR_DIR (a temporary folder; its SQLite database, its model
store, so the demo models really train): `migrate`, `load_demo --base-data`, then `demo_models --no-progress` in
a background process (jemalloc preloaded where the Makefile would) and `runserver` with DEBUG=true. Signs in as the
demo's `annotator`, opens the sentiment task's create page (its config: the API addresses and the round), and asks
for suggestions as the page does: POST `suggestions` with the shown context and a label (a new context from
POST `contexts/next/` each time, the labels in turn), then GETs the answer's link on create.js's schedule
(POLL_FIRST_MS, then every POLL_EVERY_MS) until it is ready or failed. The time is click to three candidates as
the writer sees them; beside it, where the server says the time went (the suggestion's `usage.phases`: the wait
for the job, the prompt, each generation try, scoring the candidates with the ensemble).

Phases: `early` asks while the sentiment ensemble trains (the candidates come without verdicts); `late` waits
until it is deployed (the other demo tasks still train) and asks again (the candidates are scored). The report
gives the machine's load average before and after each phase: the latency depends on what else runs, and a
machine shared with other sessions gives noisy figures (run it on a quiet machine, without `nice`, to compare).
ASSISTANT_RATE is raised for the run (one writer asks many times). Writes the figures as JSON
(var/bench/assistant-served.json by default) and prints a summary. Fails (exit 1) when the site does not come
up or a request fails.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
# create.js: the first poll POLL_FIRST_MS after the 202, then every POLL_EVERY_MS (keep in step with the page)
POLL_FIRST_MS = 250
POLL_EVERY_MS = 400


def poll_delays(schedule: str):
    """The page's waits between polls, in ms. "page": create.js now; "before": create.js before issue 39 (a poll
    at once, then 400 ms growing by 1.3 up to 2 s)."""
    if schedule == "before":
        yield 0
        delay = 400.0
        while True:
            yield delay
            delay = min(delay * 1.3, 2000)
    yield POLL_FIRST_MS
    while True:
        yield POLL_EVERY_MS
LABELS = ["positive", "negative", "neutral"]
JEMALLOC = [p for p in ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
                        "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so.2") if Path(p).is_file()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Site:
    """The demo served as `make run` serves it, in a folder of its own."""

    def __init__(self, var: Path, database_url: str | None, train: bool, reload: bool = False, training_nice: int = 0):
        self.var, self.port, self.train, self.reload = var, free_port(), train, reload
        self.training_nice = training_nice
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("JOB_RUNNER", "DJANGO_SETTINGS"))}
        self.env.update(VAR_DIR=str(var), DEBUG="true", ASSISTANT_RATE="1000/min", PYTHONUNBUFFERED="1")
        if database_url:
            self.env["DATABASE_URL"] = database_url
        else:
            self.env.pop("DATABASE_URL", None)  # make run's default: SQLite in VAR_DIR
        self.env.pop("MODEL_STORE", None)  # VAR_DIR/models: empty, so the demo models really train
        self.processes: list[subprocess.Popen] = []
        self.base = f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str) -> float:
        began = time.perf_counter()
        subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - began

    def start(self) -> None:
        if self.train:
            env = {**self.env, **({"LD_PRELOAD": JEMALLOC[0]} if JEMALLOC else {})}
            log = open(self.var / "demo_models.log", "wb")  # noqa: SIM115 - the child keeps it
            nice = ["nice", "-n", str(self.training_nice)] if self.training_nice else []
            self.processes.append(subprocess.Popen([*nice, PY, "manage.py", "demo_models", "--no-progress"], cwd=ROOT,
                                                   env=env, stdout=log, stderr=subprocess.STDOUT,
                                                   start_new_session=True))
        log = open(self.var / "runserver.log", "wb")  # noqa: SIM115
        self.processes.append(subprocess.Popen([PY, "manage.py", "runserver", f"127.0.0.1:{self.port}",
                                                *([] if self.reload else ["--noreload"])], cwd=ROOT,
                                               env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True))

    def training(self) -> bool:
        return self.train and self.processes[0].poll() is None

    def training_log(self) -> str:
        path = self.var / "demo_models.log"
        return path.read_text(errors="replace")[-2000:] if path.is_file() else ""

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


class Writer:
    """The demo's annotator in a browser session: the page's requests, with its cookie and CSRF token."""

    def __init__(self, base: str):
        import requests

        self.base, self.http = base, requests.Session()

    def sign_in(self, username: str = "annotator", password: str = "dynabench-demo") -> None:
        self.http.get(f"{self.base}/accounts/login/")
        response = self.http.post(f"{self.base}/accounts/login/", data={
            "username": username, "password": password, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]},
            headers={"Referer": f"{self.base}/accounts/login/"}, allow_redirects=False)
        if response.status_code != 302:
            raise SystemExit(f"signing in failed: {response.status_code}")

    def page_config(self, slug: str) -> dict[str, Any]:
        page = self.http.get(f"{self.base}/tasks/{slug}/create/")
        found = re.search(r'<script id="create-config" type="application/json">(.*?)</script>', page.text, re.S)
        if page.status_code != 200 or not found:
            raise SystemExit(f"the create page of {slug} did not load: {page.status_code}")
        return json.loads(html.unescape(found.group(1)))

    def call(self, method: str, path: str, body: dict | None = None):
        headers = {"X-CSRFToken": self.http.cookies.get("csrftoken", ""), "Referer": self.base + "/"}
        return self.http.request(method, self.base + path, json=body, headers=headers, timeout=120)


def wait_until(predicate, timeout_s: float, every_s: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every_s)
    return False


def ask(writer: Writer, config: dict, label: str, schedule: str = "page") -> dict[str, Any]:
    """One click on "Suggest examples" for a new context: the seconds until the page shows the answer."""
    context = writer.call("POST", config["urls"]["next_context"]).json()
    clicked = time.perf_counter()
    response = writer.call("POST", config["urls"]["suggestions"],
                           {"context_id": context["id"], "target": label, "round": config["round"]})
    if response.status_code != 202:
        raise SystemExit(f"the suggestion request was refused: {response.status_code} {response.text[:300]}")
    link, polls, delays = response.json()["link"], 0, poll_delays(schedule)
    while True:
        time.sleep(next(delays) / 1000)
        polls += 1
        data = writer.call("GET", link).json()
        if data["state"] != "pending":
            break
        if time.perf_counter() - clicked > 180:
            raise SystemExit(f"suggestion {data['id']} still pending after 180 s")
    seconds = time.perf_counter() - clicked
    if data["state"] != "ready":
        return {"seconds": seconds, "state": data["state"], "error": data["error"], "label": label}
    phases = data["usage"].get("phases", {})
    return {"seconds": round(seconds, 3), "state": "ready", "label": label, "polls": polls,
            "context": context["payload"], "candidates": len(data["candidates"]),
            "scored": all(c.get("models_disagree", c.get("fooled")) is not None for c in data["candidates"]),
            "texts": [c["text"] for c in data["candidates"]], "phases": phases}


def summary(rows: list[dict]) -> dict[str, Any]:
    ready = [r for r in rows if r["state"] == "ready"]
    seconds = [r["seconds"] for r in rows]
    out: dict[str, Any] = {"requests": len(rows), "ready": len(ready),
                           "p50_s": round(statistics.median(seconds), 2), "p95_s": round(percentile(seconds, 0.95), 2),
                           "max_s": round(max(seconds), 2), "first_s": round(seconds[0], 2)}
    if len(seconds) > 2:  # without the first request (the model loaded, its prompt read)
        out["p50_after_first_s"] = round(statistics.median(seconds[1:]), 2)
        out["p95_after_first_s"] = round(percentile(seconds[1:], 0.95), 2)
    with_phases = [r["phases"] for r in ready if r.get("phases")]
    if with_phases:
        def med(values):
            return round(statistics.median(values), 3) if values else None
        out["server_phases_p50"] = {
            "queued_s": med([p.get("queued_s", 0) for p in with_phases]),
            "warm_up_wait_s": med([p.get("warm_up_wait_s", 0) for p in with_phases]),
            "prompt_s": med([p.get("prompt_s", 0) for p in with_phases]),
            "generation_wall_s": med([sum(t["wall_s"] for t in p.get("tries", [])) for p in with_phases]),
            "load_s (wall - generation)": med([sum(t["wall_s"] - t["generation_s"] for t in p.get("tries", []))
                                               for p in with_phases]),
            "tries": med([len(p.get("tries", [])) for p in with_phases]),
            "scoring_s": med([p.get("scoring_s", 0) for p in with_phases]),
            "job_s": med([p.get("job_s", 0) for p in with_phases]),
            "process_cpu_s": med([p["process_cpu_s"] for p in with_phases if "process_cpu_s" in p]),
        }
        out["client_minus_job_p50_s"] = med([r["seconds"] - r["phases"].get("job_s", 0) for r in ready
                                             if r.get("phases")])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=12, help="suggestion requests per phase")
    parser.add_argument("--phases", nargs="+", choices=("early", "late"), default=["early", "late"])
    parser.add_argument("--think", type=float, default=2.0, help="seconds between requests (the writer reads)")
    parser.add_argument("--read", type=float, default=5.0, help="seconds between opening the page and the first "
                        "click (the writer reads the context and picks a label)")
    parser.add_argument("--no-training", action="store_true", help="serve without demo_models (the quiet baseline)")
    parser.add_argument("--deploy-timeout", type=float, default=1800, help="seconds to wait for the sentiment "
                                                                             "ensemble before the late phase")
    parser.add_argument("--training-nice", type=int, default=10,
                        help="start demo_models under `nice -n N` (make run: 10; 0 to compare with equal priority)")
    parser.add_argument("--database-url", default=None, help="default: SQLite in the temporary VAR_DIR (make run)")
    parser.add_argument("--keep", default=None, help="a folder for VAR_DIR, kept afterwards (logs)")
    parser.add_argument("--reload", action="store_true", help="runserver's autoreloader on, as make run has it "
                        "(off by default: an edit anywhere in a shared tree restarts the server and loses the job)")
    parser.add_argument("--poll", choices=("page", "before"), default="page",
                        help="the page's poll schedule: create.js now, or as it was before issue 39")
    parser.add_argument("--out", default=str(ROOT / "var" / "bench" / "assistant-served.json"))
    args = parser.parse_args()

    var = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-assist-served-"))
    var.mkdir(parents=True, exist_ok=True)
    site = Site(var, args.database_url, train=not args.no_training, reload=args.reload,
                training_nice=args.training_nice)
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
                              "machine": platform.processor() or platform.machine(),
                              "nice": os.nice(0), "training": not args.no_training, "training_nice": args.training_nice,
                              "autoreload": args.reload,
                              "database": "sqlite (make run)" if not args.database_url else "postgresql",
                              "poll": args.poll,
                              "phases": {}}
    try:
        report["setup_s"] = {"migrate": round(site.manage("migrate", "--noinput"), 1),
                             "load_demo": round(site.manage("load_demo", "--base-data"), 1)}
        site.start()
        if not wait_until(lambda: _up(site.base), 120, 0.5):
            print("the site did not come up; see", var / "runserver.log", file=sys.stderr)
            return 1
        writer = Writer(site.base)
        writer.sign_in()
        config = writer.page_config("sentiment")
        time.sleep(args.read)
        for phase in args.phases:
            if phase == "late":
                print("waiting for the sentiment ensemble to be deployed …", flush=True)
                if not wait_until(lambda: "sentiment: deployed" in site.training_log() or not site.training(),
                                  args.deploy_timeout, 5):
                    print("the sentiment ensemble was not deployed in time", file=sys.stderr)
                    return 1
            rows, load_before = [], os.getloadavg()
            training_before = site.training()
            for i in range(args.requests):
                row = ask(writer, config, LABELS[i % len(LABELS)], args.poll)
                rows.append(row)
                p = row.get("phases", {})
                print(f"  {phase} {i:2d} {row['label']:8s} {row['seconds']:6.2f} s  {row['state']}  "
                      f"tries {len(p.get('tries', []))}, generation "
                      f"{sum(t['wall_s'] for t in p.get('tries', [])):5.2f} s, scoring {p.get('scoring_s', 0):5.2f} s, "
                      f"scored {row.get('scored')}", flush=True)
                time.sleep(args.think)
            report["phases"][phase] = {
                **summary(rows), "training_during": training_before and site.training(),
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()], "rows": rows}
            print(phase, json.dumps({k: v for k, v in report["phases"][phase].items() if k != "rows"}), flush=True)
        report["training_log_tail"] = site.training_log()[-600:]
    finally:
        site.stop()
        if not args.keep:
            shutil.rmtree(var, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print("written:", args.out)
    return 0


def _up(base: str) -> bool:
    import requests

    try:
        return requests.get(f"{base}/healthz/live", timeout=2).status_code == 200
    except requests.RequestException:
        return False


if __name__ == "__main__":
    sys.exit(main())
