"""python manage.py seed_round <task-slug> <round-number> --k 16 — mark the k hardest per label as seeds."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from hardness.services import seed_round
from tasks.models import Round


class Command(BaseCommand):
    help = "Score a task's pool with the weak scorer and mark the k hardest per label as the round's seeds."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task")
        parser.add_argument("round", type=int)
        parser.add_argument("--k", type=int, default=16)
        parser.add_argument("--score", default="loss")

    def handle(self, *args, **opts) -> None:
        rnd = Round.objects.select_related("task").get(task__slug=opts["task"], number=opts["round"])
        result = seed_round(rnd.task, rnd, opts["k"], score=opts["score"])
        self.stdout.write(str(result))
