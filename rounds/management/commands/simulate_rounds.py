"""`manage.py simulate_rounds <task> <adversarial.jsonl> --heldout FILE`: one simulated round through the real
services (rounds.simulation), reporting the live ensemble's error on a held-out file before and after."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from rounds.simulation import ON_WORSE, SimulationError, simulate
from tasks.models import Task


def find(path: Path) -> Path:
    """A file as given, or relative to DATA_DIR (e.g. anli/r1_dev.jsonl)."""
    if path.is_file():
        return path
    if not path.is_absolute() and (Path(settings.DATA_DIR) / path).is_file():
        return Path(settings.DATA_DIR) / path
    raise CommandError(f"{path}: no such file (here or under DATA_DIR {settings.DATA_DIR})")


class Command(BaseCommand):
    help = ("Replay labelled examples as simulated writers and validators through the real submission, validation "
            "and round services, close the round, and report the live ensemble's error on a held-out file before "
            "and after (95 % intervals). It writes real rows: use a scratch database.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("task", help="the task's slug")
        parser.add_argument("source", type=Path, help="JSONL: the task's context and input fields and a label per line")
        parser.add_argument("--heldout", type=Path, required=True, help="JSONL in the same shape, never trained on")
        parser.add_argument("--writers", type=int, default=4)
        parser.add_argument("--validators", type=int, default=3)
        parser.add_argument("--limit", type=int, default=None, help="replay only the first K examples")
        parser.add_argument("--heldout-limit", type=int, default=None,
                            help="a stable random sample of this many held-out examples")
        parser.add_argument("--epochs", type=int, default=None, help="retraining epochs (pipeline option)")
        parser.add_argument("--seeds", default=None, help="comma-separated seeds: one model each (pipeline option)")
        parser.add_argument("--options", default="{}", help="more pipeline options, as JSON (rounds.options)")
        parser.add_argument("--on-worse", choices=ON_WORSE, default="approve",
                            help="what the simulated owner does when the retrained ensemble awaits approval")
        parser.add_argument("--bootstrap", action="store_true",
                            help="open a first round through the pipeline when the task has none with a live ensemble")
        parser.add_argument("--report", type=Path, default=None, help="also write the Markdown report here")
        parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")

    def handle(self, *args, task: str, source: Path, heldout: Path, **o) -> None:
        found = Task.objects.filter(slug=task).first()
        if found is None:
            raise CommandError(f"no task {task!r}")
        source, heldout = find(source), find(heldout)
        try:
            options = json.loads(o["options"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--options is not JSON: {exc}") from None
        if o["epochs"] is not None:
            options["epochs"] = o["epochs"]
        if o["seeds"]:
            options["seeds"] = [int(s) for s in o["seeds"].split(",")]
        try:
            report = simulate(found, source, heldout, writers=o["writers"], validators=o["validators"],
                              limit=o["limit"], heldout_limit=o["heldout_limit"], options=options,
                              on_worse=o["on_worse"], bootstrap=o["bootstrap"],
                              log=lambda m: self.stderr.write(m))
        except SimulationError as exc:
            raise CommandError(str(exc)) from None
        text = report.markdown()
        self.stdout.write(text)
        if o["report"]:
            o["report"].write_text(text, encoding="utf-8")
        if o["json"]:
            o["json"].write_text(json.dumps(report.as_dict(), indent=2, default=str), encoding="utf-8")
