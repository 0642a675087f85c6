"""python manage.py seed_round <task-slug> <round-number> [--k 16] [--score loss] [--pool-max N]
[--encoder NAME_OR_PATH] — mark the k hardest pool items per label as the round's seeds (unset options: the task's
seeding settings; the weak scorer's encoder: the packaged MiniLM)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hardness.services import check_encoder, seed_round, site_encoder
from tasks import choices
from tasks.models import Round
from zoo import device
from zoo.encoders import EncoderError


class Command(BaseCommand):
    help = ("Train the weak scorer on the task's (sampled) pool, score it, and mark the k hardest per label as the "
            "round's seeds. Options left out take the task's seeding settings.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task")
        parser.add_argument("round", type=int)
        parser.add_argument("--k", type=int, default=None, help="seeds per label (default: the task's k_per_label)")
        parser.add_argument("--score", default=None, choices=choices.SEEDING_SCORES,
                            help="the hardness score (default: the task's seeding.score)")
        parser.add_argument("--pool-max", type=int, default=None, help="default: the task's pool_max")
        parser.add_argument("--encoder", default=None, metavar="NAME_OR_PATH",
                            help="the weak scorer's encoder: a registered name (all-MiniLM-L6-v2; tiny or "
                                 "tiny-<family>: small random ones), a local Hugging Face folder of a family the "
                                 "platform runs, or upload:<id or name>; default: the task's encoder")

    def handle(self, *args, **opts) -> None:
        try:
            rnd = Round.objects.select_related("task").get(task__slug=opts["task"], number=opts["round"])
        except Round.DoesNotExist:
            raise CommandError(f"task {opts['task']!r} has no round {opts['round']}") from None
        try:
            encoder = site_encoder(opts["encoder"], rnd.task)
            check_encoder(encoder)
            device.check()  # ZOO_DEVICE=cuda without CUDA: refused here, never a silent CPU run
        except (EncoderError, device.DeviceError) as exc:
            raise CommandError(str(exc)) from None
        result = seed_round(rnd.task, rnd, opts["k"], score=opts["score"], pool_max=opts["pool_max"],
                            encoder_name=encoder)
        if result.training is not None:
            self.stdout.write(f"weak scorer {result.training.describe()}")
        self.stdout.write(f"scored {result.items_scored} of {result.pool_size} pool items by {result.score}; seeded "
                          f"{result.items_seeded} items and {result.contexts_seeded} contexts; share of seeds the weak "
                          f"scorer gets wrong: {result.seeds_misclassified:.2f}")
