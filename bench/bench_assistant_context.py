"""Benchmark: do the writing assistant's suggestions use the shown context? With the packaged local model.

    nice -n 10 .venv/bin/python bench/bench_assistant_context.py [--tasks sentiment] [--contexts 30] [--seed 7]

A fresh SQLite database in a temporary folder with the demo loaded (`load_demo`: its tasks, contexts and training
items; the assistant turned on, the packaged SmolLM2-135M, for every task named); no ensemble is deployed, so the
candidates come without verdicts (what is measured is the text, not the models). For each of `--contexts` contexts
of each task (the demo's own, in its order), one suggestion request through the API as the create page sends it
(the labels in turn), the job run inline, so the prompt is the platform's own: the task's instructions, the
context, the intended label and the few-shot examples the assistant picks.

A suggestion *uses the context* when it names one of the context's content words: words of three letters or more
that are not function words (STOPWORDS), compared after a crude stemming (plural and -ed/-ing endings and a final
e dropped: "courses" matches "course", "tasting" matches "taste"). The share is over every candidate shown.
It also records the CPU seconds of each request (this process: the job runs inline, the local model's threads
included), which the prompt's layout changes. Prints the share per task and overall, with a few samples, and
writes every candidate as JSON
(var/bench/assistant-context.json). A fixed `--seed` (each request its own: seed + request number) makes a run
repeatable on one machine. Fails (exit 1) when the model package is missing or a request fails.

Before/after: run this same file from a checkout of the earlier commit, *in* that checkout (Celery's Django
fix-up puts the working directory first on sys.path, so the code imported is the working directory's):

    git worktree add /tmp/before <commit> && cp bench/bench_assistant_context.py /tmp/before/bench/
    cd /tmp/before && /path/to/.venv/bin/python bench/bench_assistant_context.py --out /tmp/context-before.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STOPWORDS = frozenset(re.findall(r"\S+", """
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once
only or other our ours out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself one two its it's was were has had been being get got
"""))


def stem(word: str) -> str:
    word = word.lower().replace("'", "")
    for suffix in ("ies", "ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def content_words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[A-Za-z][A-Za-z']+", text) if len(w) >= 3 and w.lower() not in STOPWORDS}


def uses_context(candidate: str, context: str) -> bool:
    return bool(content_words(candidate) & content_words(context))


def setup(tmp: Path, slugs: list[str]):
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["VAR_DIR"] = str(tmp)
    os.environ["MODEL_STORE"] = str(tmp / "models")
    os.environ["JOB_RUNNER"] = "inline"
    os.environ["ASSISTANT_RATE"] = "10000/min"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_demo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    from django.contrib.auth.models import User

    from tasks.models import Task

    tasks = []
    for slug in slugs:
        task = Task.objects.get(slug=slug)
        config = dict(task.config)
        config["assistant"] = {**config.get("assistant", {}), "enabled": True, "provider": {"provider": "local"}}
        task.config = config
        task.save()
        tasks.append(task)
    return tasks, User.objects.get(username="annotator")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["sentiment"], help="demo task slugs (labelled, one input)")
    parser.add_argument("--contexts", type=int, default=30, help="contexts per task (the demo has 30 each)")
    parser.add_argument("--seed", type=int, default=7, help="sampling seed of the first request (-1: unseeded)")
    parser.add_argument("--out", default=str(ROOT / "var" / "bench" / "assistant-context.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-assist-context-") as folder:
        tasks, writer = setup(Path(folder), args.tasks)
        from rest_framework.test import APIClient

        from tasks.models import Context

        client = APIClient()
        client.force_authenticate(writer)
        report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "root": str(ROOT),
                  "seed": args.seed, "tasks": {}}
        number = 0
        for task in tasks:
            labels = list(task.typed_config.labels)
            contexts = list(Context.objects.filter(task=task).order_by("id")[: args.contexts])
            rows, started = [], time.perf_counter()
            for i, context in enumerate(contexts):
                if args.seed >= 0:  # each request its own seed: a repeatable run that still varies
                    config = dict(task.config)
                    config["assistant"] = {**config["assistant"], "seed": args.seed + 10 * number}
                    task.config = config
                    task.save(update_fields=["config"])
                number += 1
                label = labels[i % len(labels)]
                cpu = time.process_time()
                response = client.post(f"/api/tasks/{task.slug}/suggestions/",
                                       {"context_id": context.pk, "target": label}, format="json")
                if response.status_code != 202:
                    print(f"{task.slug} {i}: {response.status_code} {response.content[:300]!r}", file=sys.stderr)
                    return 1
                data = client.get(response.json()["link"]).json()
                cpu = time.process_time() - cpu
                shown = " ".join(str(v) for v in context.payload.values())
                texts = [c["text"] for c in data["candidates"]] if data["state"] == "ready" else []
                rows.append({"context": shown, "label": label, "state": data["state"], "texts": texts,
                             "uses_context": [uses_context(t, shown) for t in texts], "cpu_s": round(cpu, 3),
                             "prompt_tokens": (data.get("usage") or {}).get("prompt_tokens")})
            candidates = [u for r in rows for u in r["uses_context"]]
            share = sum(candidates) / len(candidates) if candidates else 0.0
            report["tasks"][task.slug] = {
                "contexts": len(rows), "candidates": len(candidates),
                "requests_without_candidates": sum(1 for r in rows if not r["texts"]),
                "share_naming_a_context_word": round(share, 3),
                "requests_with_one_or_more": round(statistics.mean(any(r["uses_context"]) for r in rows), 3),
                "seconds": round(time.perf_counter() - started, 1),
                "cpu_s_per_request_median": round(statistics.median(r["cpu_s"] for r in rows[1:] or rows), 3),
                "rows": rows}
            print(f"{task.slug}: {sum(candidates)}/{len(candidates)} suggestions name a content word of the context "
                  f"({share:.0%}); {report['tasks'][task.slug]['requests_without_candidates']} request(s) without any; "
                  f"CPU per request (median, the first left out) {report['tasks'][task.slug]['cpu_s_per_request_median']} s")
            for row in rows[:3]:
                print(f"  [{row['label']}] {row['context'][:70]!r} -> {row['texts'][:2]}")
    every = [u for t in report["tasks"].values() for r in t["rows"] for u in r["uses_context"]]
    report["overall_share"] = round(sum(every) / len(every), 3) if every else 0.0
    print(f"overall: {report['overall_share']:.1%} of {len(every)} suggestions")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print("written:", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
