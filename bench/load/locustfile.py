"""Locust users for bench/bench_load.py: annotators (submit, wait for the verdict) and validators (lease, vote).

Run by bench_load.py (headless, bounded time); it passes, through the environment:
  LOAD_USERS      a JSON file {"task": slug, "annotators": [token, ...], "validators": [token, ...]}
  LOAD_SAMPLES    where to write the raw samples (JSON) when the run stops
  LOAD_THINK_S    pause between two actions of one user (default 0: closed loop)
  LOAD_MAPS       "off": submissions ask for no word map (`word_map: false`) and nobody polls for one
  LOAD_FLOW       "one" (default): one request per example, the next context coming with the submission's
                  answer (`next_context: true`); "two": POST contexts/next before each submission, as before
Each user class takes its tokens in turn (one account per simulated person). The annotator does what the
create page does (frontend/static/js/create.js): POST contexts/next for its first context, then POST examples
with an idempotency key and `next_context: true` (LOAD_FLOW=two: contexts/next before each submission);
a 201 carries the verdict, a 202 is polled with POST on the example's `score` link, first after 500 ms then
x1.5 up to 5 s. submit->verdict is the time from the submission's POST to the verdict. The word map follows
the verdict (a job of its own): as the page does, the annotator polls for it in the background (first after
700 ms, x1.5 up to 5 s) while it writes its next example, and stops when its next verdict replaces it on
screen (counted as "superseded"); submit->map is the time from the POST to the map (ready, or given up as
unavailable: both are counted, by state). The validator does
what the validate page does: POST validation/next (leases an item), then POST its vote.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
import time
import uuid
from pathlib import Path

import gevent
from locust import HttpUser, between, constant, events, task

USERS = json.loads(Path(os.environ["LOAD_USERS"]).read_text(encoding="utf-8"))
THINK = float(os.environ.get("LOAD_THINK_S", "0"))
MAPS = os.environ.get("LOAD_MAPS", "on") != "off"
ONE_REQUEST = os.environ.get("LOAD_FLOW", "one") == "one"
SAMPLES: dict[str, list] = {"submit_to_verdict_ms": [], "next_item_ms": [], "verdicts": [], "votes": [],
                            "errors": [], "maps": []}
_lock = threading.Lock()
_annotators = itertools.cycle(USERS["annotators"])
_validators = itertools.cycle(USERS["validators"])
WORDS = ["the", "staff", "were", "friendly", "the", "soup", "was", "cold", "bread", "arrived", "late", "dessert", "was", "wonderful", "prices", "felt", "fair", "music", "too", "loud", "view", "of", "the", "harbour", "pasta", "lukewarm", "waiter", "apologised", "tasting", "menu", "ambitious", "courses", "service", "slow", "portions", "generous", "coffee", "bitter", "terrace", "lovely", "booking", "lost", "chef", "came", "out"]


def record(kind: str, value) -> None:
    with _lock:
        SAMPLES[kind].append(value)


def arrive() -> None:
    """With thinking time, people start at independent moments: each user's first action comes after a random
    pause of up to one mean think time (all locust users are spawned in the same second; without this, every
    phase would open with all of them submitting at once, a burst no crowd of independent writers makes). A
    closed loop (no thinking) starts at once."""
    if THINK > 0:
        time.sleep(random.uniform(0, THINK))


def sentence(n: int) -> str:
    rng = random.Random(n)
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + f", visit {n}."


_counter = itertools.count(int(time.time()) % 100000 * 1000)


class Annotator(HttpUser):
    wait_time = constant(THINK) if THINK == 0 else between(THINK * 0.5, THINK * 1.5)
    fixed_count = int(os.environ.get("LOAD_ANNOTATORS", "1"))

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Token {next(_annotators)}"
        self.slug = USERS["task"]
        self.map_poller = None
        self.context_id = None
        arrive()

    def next_context(self) -> int | None:
        with self.client.post(f"/api/tasks/{self.slug}/contexts/next/", name="contexts/next",
                              catch_response=True) as reply:
            if reply.status_code != 200:
                reply.failure(f"{reply.status_code}: {reply.text[:200]}")
                record("errors", f"contexts/next {reply.status_code}")
                return None
            return reply.json()["id"]

    @task
    def submit(self) -> None:
        if self.context_id is None or not ONE_REQUEST:
            self.context_id = self.next_context()  # the page's first context, or each one in the two-request flow
            if self.context_id is None:
                return
        n = next(_counter)
        body = {"context_id": self.context_id, "input": {"text": sentence(n)},
                "target": random.choice(["positive", "negative"]), "idempotency_key": uuid.uuid4().hex}
        if ONE_REQUEST:
            body["next_context"] = True
        if not MAPS:
            body["word_map"] = False
        started = time.perf_counter()
        with self.client.post(f"/api/tasks/{self.slug}/examples/", json=body, name="examples (submit)",
                              catch_response=True) as reply:
            if reply.status_code not in (201, 202):
                reply.failure(f"{reply.status_code}: {reply.text[:200]}")
                record("errors", f"submit {reply.status_code}: {reply.text[:120]}")
                return
            example = reply.json()
        if ONE_REQUEST:
            self.context_id = (example.get("next_context") or {}).get("id")
        delay = 0.5
        while example.get("scoring_state") == "pending":
            time.sleep(delay)
            delay = min(delay * 1.5, 5.0)
            with self.client.post(example["links"]["score"], name="examples/score (poll)", catch_response=True) as poll:
                if poll.status_code == 200:
                    example = poll.json()
                else:
                    poll.failure(f"{poll.status_code}: {poll.text[:200]}")
        elapsed_ms = (time.perf_counter() - started) * 1000
        record("submit_to_verdict_ms", elapsed_ms)
        record("verdicts", {"t": time.time(), "ms": round(elapsed_ms, 1), "state": example.get("scoring_state")})
        events.request.fire(request_type="FLOW", name="submit->verdict", response_time=elapsed_ms,
                            response_length=0, exception=None, context={})
        # As the page does, one map poll per writer: the map of the example on screen; a new verdict replaces it.
        if self.map_poller is not None and not self.map_poller.dead:
            self.map_poller.kill(block=False)
            record("maps", {"ms": None, "state": "superseded"})
        self.map_poller = None
        if MAPS and example.get("explanation_state") == "pending":
            self.map_poller = gevent.spawn(self.await_map, example, started)
        elif MAPS and example.get("scoring_state") == "scored":
            record("maps", {"ms": elapsed_ms, "state": example.get("explanation_state")})

    def await_map(self, example: dict, started: float) -> None:
        delay = 0.7
        while example.get("explanation_state") == "pending":
            time.sleep(delay)
            delay = min(delay * 1.5, 5.0)
            with self.client.post(example["links"]["score"], name="examples/score (map poll)",
                                  catch_response=True) as poll:
                if poll.status_code == 200:
                    example = poll.json()
                else:
                    poll.failure(f"{poll.status_code}: {poll.text[:200]}")
        record("maps", {"ms": (time.perf_counter() - started) * 1000, "state": example.get("explanation_state")})


class Validator(HttpUser):
    wait_time = constant(THINK) if THINK == 0 else between(THINK * 0.5, THINK * 1.5)
    fixed_count = int(os.environ.get("LOAD_VALIDATORS", "1"))

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Token {next(_validators)}"
        self.slug = USERS["task"]
        arrive()

    @task
    def validate(self) -> None:
        started = time.perf_counter()
        with self.client.post(f"/api/tasks/{self.slug}/validation/next/", name="validation/next",
                              catch_response=True) as reply:
            if reply.status_code != 200:
                reply.failure(f"{reply.status_code}: {reply.text[:200]}")
                record("errors", f"validation/next {reply.status_code}")
                return
            item = reply.json()["item"]
        record("next_item_ms", (time.perf_counter() - started) * 1000)
        if item is None:
            time.sleep(0.5)  # the queue is empty for now
            return
        with self.client.post(item["validate_url"], json={"verdict": "correct"}, name="validations (vote)",
                              catch_response=True) as vote:
            if vote.status_code == 201:
                record("votes", time.time())
            elif vote.status_code == 409:
                vote.success()  # decided or held by others meanwhile: the page moves on too
            else:
                vote.failure(f"{vote.status_code}: {vote.text[:200]}")
                record("errors", f"vote {vote.status_code}: {vote.text[:120]}")


@events.quitting.add_listener
def dump(environment, **_kwargs) -> None:
    with _lock, open(os.environ["LOAD_SAMPLES"], "w", encoding="utf-8") as out:
        json.dump(SAMPLES, out)
