"""Benchmark: the writing assistant, from "suggest" to scored candidates, with the packaged local model.

    nice -n 10 .venv/bin/python bench/bench_suggest.py [--requests 12] [--members 3] [--out docs/benchmarks/llm-assistant.json]

A fresh SQLite database in a temporary folder; a sentiment task with the assistant on (the local SmolLM2-135M,
one thread) and an ensemble of `--members` MiniLM-L6 classifiers (the real encoder; their heads untrained,
which costs exactly what trained ones do). Each request goes through the API as the create page sends it
(POST suggestions, then GET its link) with the job run inline, so the time measured is the whole path: the
prompt (with the round's few-shot examples), generation of 3 candidates, cleaning, and scoring them with the
ensemble. Prints p50 / p95 of the whole path and of its parts (generation, the rest), the candidates kept and
how many the models label otherwise than asked (`models_disagree`: not a fool, the label is unchecked), and
writes the figures as JSON. The issue's goal: p50 ≤ 5 s on this machine.
Fails (exit 1) when it cannot run (no model package, no encoder).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROMPTS = [
    "The tasting menu was ambitious, with eleven small courses.",
    "The sequel runs almost three hours long.",
    "The hotel breakfast included fresh pastries and local cheese.",
    "Our flight was delayed twice before boarding.",
    "The new phone has a bigger battery than the old one.",
    "The museum reopened after a year of renovation.",
]
SHOTS = [  # the round's training items the prompt may show (the task has no verified fooling example yet)
    ("I expected to be bored, and instead I forgot to check my phone for two hours.", "positive"),
    ("What a thrilling evening of watching the kettle boil.", "negative"),
    ("The café opens at seven and closes at three.", "neutral"),
    ("Slow service, but the best curry I have ever had.", "positive"),
]


def setup(tmp: Path, members: int):
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["MODEL_STORE"] = str(tmp / "models")
    os.environ["JOB_RUNNER"] = "inline"
    os.environ["ASSISTANT_RATE"] = "10000/min"  # one writer asks many times here
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from modelzoo import services
    from tasks import roles
    from tasks.models import Context, LabeledItem, Round, Task, payload_hash
    from zoo import encoder, training

    task = Task.objects.create(slug="bench-assist", name="Bench assistant", kind="sentiment",
                               config={"assistant": {"enabled": True, "provider": {"provider": "local"}}})
    round_ = Round.objects.create(task=task, number=1, status=Round.Status.OPEN)
    for prompt in PROMPTS:
        Context.objects.create(task=task, round=round_, payload={"prompt": prompt},
                               key=payload_hash({"prompt": prompt}))
    for i, (text, label) in enumerate(SHOTS):
        LabeledItem.objects.create(task=task, collection="bench", split="train", input={"text": text}, target=label,
                                   key=f"shot{i}")
    versions = []
    spec_labels = services.default_spec(task).labels
    for seed in range(members):
        folder = tmp / "models" / f"member{seed}"
        spec = training.TrainSpec(head="classification", labels=spec_labels, seed=seed)
        training.seed_everything(seed)
        model = training.build_model(spec)
        training.save_artifact(model, encoder.load_tokenizer(), spec, {"note": "untrained head (bench)"}, folder,
                               {"seed": seed})
        versions.append(services.register_artifact(task, folder, name=f"minilm-{seed}"))
    services.deploy_ensemble(round_, versions)
    from django.contrib.auth.models import User

    writer = User.objects.create_user("bench-writer", password="x")
    roles.grant(writer, roles.ANNOTATOR)
    return task, list(Context.objects.filter(task=task).order_by("id")), writer


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "llm-assistant.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-suggest-") as folder:
        task, contexts, writer = setup(Path(folder), args.members)
        from rest_framework.test import APIClient

        client = APIClient()
        client.force_authenticate(writer)
        url = f"/api/tasks/{task.slug}/suggestions/"
        labels = ["positive", "negative", "neutral"]

        started = time.perf_counter()
        warm = client.post(url, {"context_id": contexts[0].pk, "target": "positive"}, format="json")
        load_s = time.perf_counter() - started
        if warm.status_code != 202 or client.get(warm.json()["link"]).json()["state"] != "ready":
            print(f"the first suggestion failed: {warm.status_code} {warm.content[:300]!r}", file=sys.stderr)
            return 1

        rows = []
        for i in range(args.requests):
            context, label = contexts[i % len(contexts)], labels[i % len(labels)]
            t0 = time.perf_counter()
            response = client.post(url, {"context_id": context.pk, "target": label}, format="json")
            data = client.get(response.json()["link"]).json()
            total = time.perf_counter() - t0
            if data["state"] != "ready":
                print(f"request {i}: {data['state']}: {data['error']}", file=sys.stderr)
                return 1
            generation = float(data["usage"].get("seconds", 0.0))
            rows.append({"seconds": total, "generation_s": generation, "rest_s": total - generation,
                         "candidates": len(data["candidates"]),
                         "models_disagree": sum(1 for c in data["candidates"] if c["models_disagree"]),
                         "completion_tokens": data["usage"].get("completion_tokens"),
                         "label": label, "texts": [c["text"] for c in data["candidates"]]})
            print(f"  {i:2d} {label:8s} {total:5.2f} s (generation {generation:4.2f} s), "
                  f"{rows[-1]['candidates']} candidates, the models say another label for {rows[-1]['models_disagree']}")

    totals = [r["seconds"] for r in rows]
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(), "requests": len(rows), "members": args.members,
        "first_request_s (model load included)": round(load_s, 2),
        "p50_s": round(statistics.median(totals), 2), "p95_s": round(percentile(totals, 0.95), 2),
        "generation_p50_s": round(statistics.median(r["generation_s"] for r in rows), 2),
        "rest_p50_s": round(statistics.median(r["rest_s"] for r in rows), 3),
        "candidates_mean": round(statistics.mean(r["candidates"] for r in rows), 2),
        "models_disagree_share": round(sum(r["models_disagree"] for r in rows)
                                       / max(1, sum(r["candidates"] for r in rows)), 3),
        "goal_p50_s": 5.0, "samples": rows[:4],
    }
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
