"""Measure robustness and fairness (docs/evaluation/robustness.md) for every model and round ensemble of tasks.

    python manage.py measure_robustness                      # every task whose kind has perturbations
    python manage.py measure_robustness sentiment nli --markdown
    python manage.py measure_robustness qa --remeasure       # again, even on the same perturbed copy

It runs the pipeline's evaluate step (`rounds.evaluation.evaluate_everything`): models or ensembles not yet
scored on a test set are scored first; then each test set's perturbed copy is made (or read: it is kept under
VAR_DIR/perturbed/<task>/) and each pair not yet measured on it is. The table printed is what is stored.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from rounds import perturbations, robustness
from rounds.evaluation import evaluate_everything
from tasks.models import Task


def _cell(value: float | None, interval: list[float] | None) -> str:
    if value is None:
        return "–"
    if not interval:
        return f"{value * 100:.1f}"
    return f"{value * 100:.1f} [{interval[0] * 100:.1f}, {interval[1] * 100:.1f}]"


class Command(BaseCommand):
    help = "Measure robustness and fairness of every model and round ensemble on perturbed copies of each test set."

    def add_arguments(self, parser):
        parser.add_argument("tasks", nargs="*", help="task slugs (default: every task whose kind has perturbations)")
        parser.add_argument("--remeasure", action="store_true", help="measure again pairs already measured on the copy")
        parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
        parser.add_argument("--quiet", action="store_true", help="no per-model log lines, only the table")

    def handle(self, *args, **o):
        tasks = []
        for slug in o["tasks"]:
            task = Task.objects.filter(slug=slug).first()
            if task is None:
                raise CommandError(f"no task {slug!r}")
            if perturbations.fields_for(task.kind_impl, task.typed_config) is None:
                raise CommandError(f"task {slug!r} ({task.kind}) has no perturbations: classification and QA kinds do")
            tasks.append(task)
        if not o["tasks"]:
            tasks = [t for t in Task.objects.order_by("slug")
                     if perturbations.fields_for(t.kind_impl, t.typed_config) is not None]
        log = (lambda _m: None) if o["quiet"] else (lambda m: self.stdout.write(m))
        rows = []
        for task in tasks:
            began = time.perf_counter()
            counts = evaluate_everything(task, log=log, remeasure=o["remeasure"])
            seconds = time.perf_counter() - began
            self.stdout.write(f"{task.slug}: {counts['robustness']} measured ({seconds:.0f} s)")
            rows += [{"task": task.slug, **row} for row in robustness.table(task)]
        self._print(rows, o["markdown"])

    def _print(self, rows, markdown: bool) -> None:
        head = ["task", "test set", "model / ensemble", "robustness % [95 %]", "rows", "fairness % [95 %]", "rows"]
        lines = [[r["task"], r["dataset"], r["model"], _cell(r["robustness"], r["robustness_interval"]),
                  str(r["robustness_rows"]), _cell(r["fairness"], r["fairness_interval"]), str(r["fairness_rows"])]
                 for r in rows]
        if markdown:
            self.stdout.write("| " + " | ".join(head) + " |")
            self.stdout.write("|" + "---|" * len(head))
            for line in lines:
                self.stdout.write("| " + " | ".join(line) + " |")
            return
        widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=True)]
        for line in [head, *lines]:
            self.stdout.write("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)))
