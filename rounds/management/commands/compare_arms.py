"""`manage.py compare_arms <task> [--round N] [--json]`: the study's arms compared (rounds.arms), as the dashboard
and GET /api/tasks/<slug>/arms/comparison/ show it: per arm MER, vMER, the rejection rate and the time per example
with 95 % intervals, and the tests between arms (Holm-adjusted). Reads only."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from dynabench_site.errors import InvalidInput
from rounds import arms
from tasks.models import Task


class Command(BaseCommand):
    help = ("Compare a task's study arms: MER, vMER, validation rejection and time per example with 95 % intervals "
            "and two-sided tests between the arms (people who withdrew consent left out).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("task", help="the task's slug")
        parser.add_argument("--round", type=int, default=None, help="one round (default: every round)")
        parser.add_argument("--json", action="store_true", help="print the comparison as JSON (the API's answer)")

    def handle(self, *args, task: str, round: int | None, json: bool, **options) -> None:
        found = Task.objects.filter(slug=task).first()
        if found is None:
            raise CommandError(f"no task {task!r}")
        if round is not None and round < 0:
            raise CommandError("--round must be a whole number, 0 or more")
        try:
            data = arms.comparison(found, round)
        except InvalidInput as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(_dumps(data) if json else arms.as_text(data), ending="" if not json else "\n")


def _dumps(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
