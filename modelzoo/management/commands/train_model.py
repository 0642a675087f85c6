"""Train a model version for a task (from its imported data, or a JSONL file), with a progress bar.

Collected examples are trained on by the round pipeline, which takes them from the round's dataset export."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from modelzoo import data, encoders, services
from modelzoo.signals import ensemble_deployed
from tasks.models import Task
from zoo.progress import tqdm_echo


class Command(BaseCommand):
    help = "Fine-tune a model for a task and register it (status ready). Optionally deploy it for the open round."

    def add_arguments(self, parser):
        parser.add_argument("task", help="task slug")
        parser.add_argument("--jsonl", help="train on this JSONL file instead of the database")
        parser.add_argument("--preset", help="import preset for the JSONL field names (sst2, anli, squad, ...)")
        parser.add_argument("--collection", action="append", help="LabeledItem collection(s) to use (default: all)")
        parser.add_argument("--epochs", type=int)
        parser.add_argument("--lr", type=float)
        parser.add_argument("--batch-size", type=int)
        parser.add_argument("--max-length", type=int)
        parser.add_argument("--seed", type=int)
        parser.add_argument("--limit", type=int, help="use at most this many training rows")
        parser.add_argument("--name")
        parser.add_argument("--evaluate", action="append", default=[],
                            help="imported set to evaluate on, e.g. demo/test, or jsonl:[preset:]path")
        parser.add_argument("--deploy", action="store_true", help="make it the open round's ensemble")
        parser.add_argument("--tiny", action="store_true", help="a tiny random encoder (for trying things out)")
        parser.add_argument("--encoder", default=None, metavar="NAME_OR_PATH",
                            help="the base encoder: a registered name (zoo.encoders), upload:<id or name>, or a "
                                 "checkpoint folder; default: the task's retraining.encoder, else the site's")

    def handle(self, *args, **o):
        task = Task.objects.filter(slug=o["task"]).first()
        if task is None:
            raise CommandError(f"no task with slug {o['task']!r}")
        if o["tiny"] and o["encoder"]:
            raise CommandError("give --tiny or --encoder, not both")
        try:
            encoders.validate_encoder(o["encoder"], task, operator=True)
            encoder = encoders.encoder_for(task, "tiny" if o["tiny"] else o["encoder"])
        except encoders.EncoderError as exc:
            raise CommandError(str(exc)) from None
        labelled = data.training_set(task, o["collection"], jsonl_path=o["jsonl"], preset=o["preset"])
        if o["limit"]:
            labelled = data.LabelledSet(labelled.name, labelled.inputs[:o["limit"]], labelled.targets[:o["limit"]],
                                        labelled.keys[:o["limit"]])
        if not labelled.inputs:
            raise CommandError(f"task {task.slug} has no training data ({labelled.name})")
        spec = services.default_spec(task, epochs=o["epochs"], lr=o["lr"], batch_size=o["batch_size"],
                                     max_length=o["max_length"], seed=o["seed"], encoder=encoder)
        self.stdout.write(f"Training {task.slug} on {len(labelled.inputs)} examples ({labelled.name}), encoder "
                          f"{encoders.label_of(task, 'tiny' if o['tiny'] else o['encoder'])}")
        with tqdm_echo(desc=task.slug) as echo:
            version = services.train_model(task, spec, labelled, name=o["name"], echo=echo,
                                           evaluate_on=[data.load(task, name) for name in o["evaluate"]])
        self.stdout.write(self.style.SUCCESS(f"{version.name}: {version.metrics}"))
        for evaluation in version.evaluations.all():
            self.stdout.write(f"  {evaluation.dataset}: {evaluation.metrics}")
        if o["deploy"]:
            self._deploy(task, version)

    def _deploy(self, task, version) -> None:
        round_ = task.current_round
        if round_ is None:
            raise CommandError(f"task {task.slug} has no open round to deploy to")
        services.deploy_ensemble(round_, [version])
        self.stdout.write(self.style.SUCCESS(f"deployed {version.name} for {round_}"))
        ensemble_deployed.send(sender=self.__class__, round=round_, versions=[version])  # scored for the leaderboard
