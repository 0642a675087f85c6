"""Score each demo task's deployed ensemble on its standard held-out set (evaluation only, from DATA_DIR):

    manage.py evaluate_demo [--tasks qa sentiment] [--limit 1000] [--json var/demo_figures.json]

QA: F1 / exact match on the 3 held-out SQuAD v1.1 dev articles (700 questions, never trained on); sentiment:
SST-2 dev accuracy (positive vs negative); NLI: SNLI test accuracy (a stable sample of --limit pairs);
hate speech: accuracy and macro-F1 on the held-out Davidson slice (a stable sample of --limit tweets).
Each member's figures are stored as Evaluations; the ensemble's are printed as a Markdown table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from modelzoo import demo, services
from modelzoo.management.commands.demo_models import DEMO_TASKS
from tasks.models import Task


class Command(BaseCommand):
    help = "Print each demo ensemble's figures on standard held-out sets (SQuAD dev articles, SST-2 dev, SNLI test, Davidson)."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", nargs="*", default=DEMO_TASKS)
        parser.add_argument("--limit", type=int, default=1000, help="rows of the large sets (stable sample)")
        parser.add_argument("--json", default=None, help="also write the figures to this file")

    def handle(self, *args, **o):
        rows = []
        for task in Task.objects.filter(slug__in=o["tasks"]).order_by("slug"):
            ensemble = services.active_ensemble(task.current_round) if task.current_round else None
            if ensemble is None:
                self.stdout.write(f"{task.slug}: no deployed ensemble (run `manage.py demo_models`)")
                continue
            members = ensemble.ordered_members()
            sets = demo.held_out_sets(task, o["limit"])
            if not sets:
                self.stdout.write(f"{task.slug}: no held-out set under DATA_DIR")
            for held in sets:
                started = time.perf_counter()
                predictions = services.predict_with(members, held.labelled.inputs, strategy=ensemble.strategy)
                metrics = demo.score(task, held, predictions)
                rows.append({"task": task.slug, "dataset": held.labelled.name, "size": len(held.labelled.inputs),
                             "members": len(members), "metrics": metrics,
                             "seconds": round(time.perf_counter() - started, 1),
                             "trained_on": members[0].lineage.get("data", "")})
        if not rows:
            raise CommandError("nothing to evaluate: no deployed demo ensemble with a held-out set")
        self.stdout.write("| task | held-out set | n | ensemble | figures |\n|---|---|---:|---:|---|")
        for r in rows:
            figures = ", ".join(f"{k} {v:.3f}" for k, v in r["metrics"].items())
            self.stdout.write(f"| {r['task']} | {r['dataset']} | {r['size']} | {r['members']} members | {figures} |")
        if o["json"]:
            Path(o["json"]).parent.mkdir(parents=True, exist_ok=True)
            Path(o["json"]).write_text(json.dumps(rows, indent=2), encoding="utf-8")
