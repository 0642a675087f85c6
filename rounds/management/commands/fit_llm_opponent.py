"""Fit a task's language model opponent (docs/llm-opponent.md): its per-label offsets on a round's dev split.

    python manage.py fit_llm_opponent sentiment-demo            # the newest round with a dev split
    python manage.py fit_llm_opponent sentiment-demo --round 2 --max-rows 300

The rows are the round's dev split exactly as its export holds it (`rounds.datasets.round_split`); a round with
fewer than --min-rows dev rows (a young task) falls back to a stable, label-balanced sample of the imported train
items (`modelzoo.demo.opponent_rows`), and the output says so. Never a test split: every round's test split is
where the opponent is evaluated. Each run makes a new model version; the provider and label words come from the
task's `opponent` settings. The new version is then judged on held-out rows (`modelzoo.opponent.judge`: the largest
of the task's test sets, `rounds.datasets.test_sets`, at most 300 rows of it): the newest version that does not fall
short of the commonest label there by `opponent.MIN_MARGIN` is the task's opponent in verdicts.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from modelzoo import demo, opponent
from rounds import datasets
from tasks.models import Round, Task
from zoo.llm.base import ProviderError


class Command(BaseCommand):
    help = "Fit a task's language model opponent: per-label offsets on a round's dev split."

    def add_arguments(self, parser):
        parser.add_argument("task", help="task slug")
        parser.add_argument("--round", type=int, default=None,
                            help="the round whose dev split fits the offsets (default: the newest that has one)")
        parser.add_argument("--max-rows", type=int, default=300, help="at most this many dev rows (default 300)")
        parser.add_argument("--min-rows", type=int, default=30,
                            help="fewer dev rows than this: fit on a sample of the train items instead (default 30)")

    def handle(self, *args, **o):
        try:
            task = Task.objects.get(slug=o["task"])
        except Task.DoesNotExist:
            raise CommandError(f"no task {o['task']!r}") from None
        if o["max_rows"] < 1:
            raise CommandError("--max-rows must be at least 1")
        try:
            opponent.check_kind(task)
        except opponent.NoOpponent as exc:
            raise CommandError(str(exc)) from None
        rows = self._dev_rows(task, o["round"], o["min_rows"])
        if rows is None:
            rows = demo.opponent_rows(task, o["max_rows"])
            self.stdout.write(f"{task.slug}: no round has {o['min_rows']}+ dev rows yet; fitting on {rows.name}")
        began = time.perf_counter()
        try:
            version = opponent.fit(task, rows, rows.name, max_rows=o["max_rows"], held_out=self._held_out(task))
        except (ProviderError, opponent.NoOpponent) as exc:
            raise CommandError(f"could not fit the opponent: {exc}") from None
        fitted = version.hyperparameters["llm"]["fitted_on"]
        offsets = version.hyperparameters["llm"]["offsets"]
        self.stdout.write(self.style.SUCCESS(
            f"{task.slug}: {version.name} v{version.version}, offsets {offsets} fitted on {fitted['dataset']} "
            f"({fitted['size']} rows) in {time.perf_counter() - began:.1f} s: accuracy "
            f"{fitted['accuracy_before']:.3f} -> {fitted['accuracy_after']:.3f} on them"))
        self.stdout.write(f"{task.slug}: {opponent.summary(version)}")
        in_use = opponent.current(task)
        self.stdout.write(f"{task.slug}: the opponent in verdicts is "
                          + (f"{in_use.name} v{in_use.version}" if in_use else "none (no version earned its place)"))
        if not task.typed_config.opponent.enabled:
            self.stdout.write("note: the task's opponent setting is off; turn it on for the opponent to join verdicts")

    @staticmethod
    def _held_out(task: Task):
        """The largest test set of the task (never fitted on), at most opponent.HELD_OUT_MAX rows of it."""
        sets = [datasets.load(task, name) for name in datasets.test_sets(task)]
        sets = [rows for rows in sets if rows.inputs]
        return opponent.sample(max(sets, key=lambda rows: len(rows.inputs))) if sets else None

    def _dev_rows(self, task: Task, number: int | None, min_rows: int):
        rounds = Round.objects.filter(task=task).order_by("-number")
        if number is not None:
            round_ = rounds.filter(number=number).first()
            if round_ is None:
                raise CommandError(f"{task.slug} has no round {number}")
            rows = datasets.round_split(task, round_, "dev")
            if not rows.inputs:
                raise CommandError(f"round {number} of {task.slug} has no dev split yet (its export decides the "
                                   f"splits once it has validated examples)")
            return rows
        for round_ in rounds:
            rows = datasets.round_split(task, round_, "dev")
            if len(rows.inputs) >= min_rows:
                return rows
        return None
