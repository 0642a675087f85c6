"""Benchmark: a chat writer's message to its first answer ready, with the packaged local model, while a second writer
chats at the same time.

    nice -n 10 .venv/bin/python bench/bench_chat_latency.py [--messages 20] [--max-tokens 64] [--out var/bench/chat_latency.json]

The embedded default as `make run` serves it: a fresh SQLite database in a temporary folder, no broker, each answer's
job in a thread of this process (chat.jobs: `background_thread`), the local SmolLM2-135M (llama.cpp, in process,
LLM_LOCAL_THREADS threads, 4 slots batched). A chat task on the slider scale with the two default targets (helpful,
playful: the same model under two system prompts and temperatures), `--max-tokens` each. Two writers, each an API
client in a thread of its own: each sends a message (POST .../messages/), polls its answer (GET, every 50 ms) until
it is ready, and sends the next; a conversation is finished and a new one started every `--turns` messages (so the
history the model reads grows as in real conversations). The first writer's `--messages` messages are measured; the
second chats until the first is done. One unmeasured message first loads the model.

Prints each message's time to ready (and the model's own generation time, the tokens written), p50 / p90, and
writes them as JSON. The issue's goal: p50 <= 3 s on this machine. Fails (exit 1) when an answer fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MESSAGES = [
    "What is the capital of Australia?",
    "Why is the sky blue?",
    "Give me a tip for sleeping better.",
    "How many legs does a spider have?",
    "Can you name a famous painting by Monet?",
    "What should I cook tonight with rice and eggs?",
    "Is a tomato a fruit or a vegetable?",
    "Tell me a short joke about cats.",
    "What does a bee do in winter?",
    "How do I say thank you in Spanish?",
]


def setup(tmp: Path, max_tokens: int, turns: int):
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.pop("JOB_RUNNER", None)  # the embedded default: answers in threads
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import User

    from tasks import roles
    from tasks.kinds.chat import ChatSettings
    from tasks.models import Round, Task

    targets = [{**t.model_dump(), "max_tokens": max_tokens} for t in ChatSettings().targets]
    task = Task.objects.create(slug="bench-chat", name="Bench chat", kind="chat",
                               config={"chat": {"targets": targets, "max_turns": turns, "scale": "slider"},
                                       "submission_rate": "600/min"})  # the bench measures latency, not limits
    Round.objects.create(task=task, number=1, status=Round.Status.OPEN)
    writers = []
    for name in ("bench-writer", "bench-writer-2"):
        user = User.objects.create_user(name, password="x")
        roles.grant(user, roles.ANNOTATOR)
        writers.append(user)
    return task, writers


class Writer:
    """One writer: an API client sending messages and polling each answer until it is ready."""

    def __init__(self, user, task, turns: int):
        from rest_framework.test import APIClient

        self.client = APIClient()
        self.client.force_authenticate(user)
        self.task, self.turns, self.sent, self.convo = task, turns, 0, None

    def message(self, text: str) -> dict:
        if self.convo is None or self.sent % self.turns == 0:
            if self.convo is not None:
                self.client.post(self.convo["links"]["close"], format="json")
            response = self.client.post(f"/api/tasks/{self.task.slug}/chat/conversations/", {}, format="json")
            assert response.status_code == 201, response.content
            self.convo = response.json()
        t0 = time.perf_counter()
        response = self.client.post(self.convo["links"]["messages"], {"text": text}, format="json")
        posted = time.perf_counter() - t0
        assert response.status_code == 202, response.content
        link = response.json()["answers"][0]["links"]["self"]
        while True:
            answer = self.client.get(link).json()
            if answer["state"] != "pending":
                break
            time.sleep(0.05)
        self.sent += 1
        return {"seconds": time.perf_counter() - t0, "request_s": posted, "state": answer["state"],
                "error": answer["error"], "text": answer["text"], "generation_s": answer["usage"].get("seconds"),
                "completion_tokens": answer["usage"].get("completion_tokens"),
                "prompt_tokens": answer["usage"].get("prompt_tokens")}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--turns", type=int, default=5, help="messages per conversation")
    parser.add_argument("--out", default=str(ROOT / "var" / "bench" / "chat_latency.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-chat-") as folder:
        task, users = setup(Path(folder), args.max_tokens, args.turns)
        from django.conf import settings

        first, second = Writer(users[0], task, args.turns), Writer(users[1], task, args.turns)
        started = time.perf_counter()
        warm = first.message("Hello!")
        load_s = time.perf_counter() - started
        if warm["state"] != "ready":
            print(f"the first answer failed: {warm['error']}", file=sys.stderr)
            return 1
        first.sent = 0
        first.convo = None

        done = threading.Event()
        background: list[dict] = []

        def other_writer() -> None:
            from django.db import connections

            i = 0
            try:
                while not done.is_set():
                    background.append(second.message(MESSAGES[(i + 5) % len(MESSAGES)]))
                    i += 1
            finally:
                connections.close_all()

        chatter = threading.Thread(target=other_writer, daemon=True)
        chatter.start()
        rows = []
        for i in range(args.messages):
            row = first.message(MESSAGES[i % len(MESSAGES)])
            if row["state"] != "ready":
                done.set()
                print(f"message {i}: {row['state']}: {row['error']}", file=sys.stderr)
                return 1
            rows.append(row)
            print(f"  {i:2d} {row['seconds']:5.2f} s to ready (request {row['request_s'] * 1000:4.0f} ms, generation "
                  f"{row['generation_s']:4.2f} s, {row['prompt_tokens']} tokens in, {row['completion_tokens']} out)")
        done.set()
        chatter.join(120)

    seconds = [r["seconds"] for r in rows]
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(), "llm_threads": settings.LLM_LOCAL_THREADS,
        "messages": len(rows), "max_tokens": args.max_tokens, "turns_per_conversation": args.turns,
        "model_load_s": round(load_s, 2),
        "p50_s": round(statistics.median(seconds), 3), "p90_s": round(percentile(seconds, 0.9), 3),
        "mean_s": round(statistics.fmean(seconds), 3), "max_s": round(max(seconds), 3),
        "request_p50_ms": round(statistics.median(r["request_s"] for r in rows) * 1000, 1),
        "generation_p50_s": round(statistics.median(r["generation_s"] for r in rows), 3),
        "completion_tokens_p50": statistics.median(r["completion_tokens"] for r in rows),
        "hit_max_tokens": sum(1 for r in rows if r["completion_tokens"] >= args.max_tokens),
        "second_writer_messages": len(background),
        "second_writer_p50_s": round(statistics.median(r["seconds"] for r in background), 3) if background else None,
        "rows": rows,
    }
    print(f"p50 {report['p50_s']:.2f} s, p90 {report['p90_s']:.2f} s to the first answer ready over {len(rows)} "
          f"messages (max_tokens {args.max_tokens}); the request itself p50 {report['request_p50_ms']:.0f} ms; "
          f"the second writer sent {len(background)} meanwhile (p50 {report['second_writer_p50_s']} s); "
          f"model load {load_s:.1f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
