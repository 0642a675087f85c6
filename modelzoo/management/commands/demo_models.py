"""Train (or reuse) a small round-1 ensemble for every demo task with the real encoder, and deploy it.

Idempotent: a round whose ensemble is deployed and on disk is left alone, and a member whose data and
settings did not change is reused from MODEL_STORE instead of retrained.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from modelzoo import data, services
from modelzoo.heads import get_head
from modelzoo.progress import tqdm_echo
from modelzoo.signals import ensemble_deployed
from tasks.models import Task

DEMO_TASKS = ["sentiment", "nli", "hate-speech", "qa"]


class Command(BaseCommand):
    help = "Train or reuse a small ensemble (different seeds) for each demo task and deploy it for the open round."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", nargs="*", default=DEMO_TASKS, help="task slugs (default: the demo tasks)")
        parser.add_argument("--members", type=int, default=3, help="ensemble size (seeds 0..n-1)")
        parser.add_argument("--epochs", type=int, default=None,
                            help="epochs for every task (default: its head's small_data_epochs)")
        parser.add_argument("--lr", type=float, default=1e-4)
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument("--force", action="store_true", help="retrain even when an ensemble is deployed")

    def handle(self, *args, **o):
        started = time.perf_counter()
        for task in Task.objects.filter(slug__in=o["tasks"]).order_by("slug"):
            self._task(task, o)
        self.stdout.write(self.style.SUCCESS(f"demo models ready in {time.perf_counter() - started:.0f} s"))

    def _task(self, task: Task, o: dict) -> None:
        round_ = task.current_round
        if round_ is None:
            self.stdout.write(f"{task.slug}: no open round, skipped")
            return
        current = services.active_ensemble(round_)
        if current and not o["force"] and all((v.artifact_path / "zoo.json").is_file() for v in current.ordered_members()):
            self.stdout.write(f"{task.slug}: ensemble already deployed for round {round_.number}")
            return
        labelled = data.training_set(task)
        if not labelled.inputs:
            self.stdout.write(f"{task.slug}: no training data, skipped (run `manage.py load_demo` first)")
            return
        demo_test = data.labeled_items(task, ["demo"], "test")
        tests = [demo_test] if demo_test.inputs else []
        versions = [self._member(task, round_, labelled, tests, seed, o) for seed in range(o["members"])]
        services.deploy_ensemble(round_, versions)
        self.stdout.write(f"{task.slug}: deployed {', '.join(v.name for v in versions)} for round {round_.number}")
        ensemble_deployed.send(sender=self.__class__, round=round_, versions=versions)  # scored for the leaderboard

    def _member(self, task: Task, round_, labelled: data.LabelledSet, tests: list[data.LabelledSet], seed: int,
                o: dict):
        epochs = o["epochs"] or get_head(task.kind_impl.head).small_data_epochs
        spec = services.default_spec(task, seed=seed, epochs=epochs, lr=o["lr"], batch_size=o["batch_size"])
        with tqdm_echo(desc=f"{task.slug} seed {seed}") as echo:
            version = services.train_model(task, spec, labelled, name=f"{task.slug}-r{round_.number}-s{seed}",
                                           reuse=True, echo=echo, evaluate_on=tests)
        scores = "; ".join(f"{e.dataset} {_fmt(e.metrics)}" for e in version.evaluations.all())
        self.stdout.write(f"  {version.name} ({version.progress_message or version.status}) {scores}")
        return version


def _fmt(metrics: dict) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in metrics.items())
