"""python manage.py hardbench — the Hard-Bench reproduction on SST-2 (see docs/hardbench/)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser


def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v.strip()]


def _names(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(BaseCommand):
    help = "Score SST-2 train with a weak scorer, build hard/random k-shot sets, train a target, write a report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--k", type=_ints, default=[16, 64, 500], help="k per label, comma-separated")
        parser.add_argument("--seeds", type=_ints, default=[0, 1, 2])
        parser.add_argument("--strategies", type=_names, default=["random", "loss", "gradnorm", "gradnorm_deep"],
                            help="random, a score name (hardest k), or easiest:<score>")
        parser.add_argument("--max-train-rows", type=int, default=None, help="first N SST-2 train rows (all by default)")
        parser.add_argument("--epochs", type=int, default=3, help="target fine-tuning epochs")
        parser.add_argument("--trainable-blocks", type=int, default=2,
                            help="target: top blocks fine-tuned with the head (0 or less: all blocks)")
        parser.add_argument("--out", type=Path, default=Path(settings.VAR_DIR) / "hardbench")
        parser.add_argument("--cache", type=Path, default=Path(settings.VAR_DIR) / "cache" / "hardbench")
        parser.add_argument("--deep-method", choices=["vmap", "ghost"], default="ghost",
                            help="gradnorm_deep: torch.func vmap per-sample grads, or ghost norms (same values, faster)")
        parser.add_argument("--threads", type=int, default=1,
                            help="torch threads; 1 by default: on a shared 2-core machine two threads oversubscribe")

    def handle(self, *args, **opts) -> None:
        import torch

        from hardness.hardbench import HardbenchConfig, run
        from modelzoo.encoder import load_encoder, load_tokenizer

        if opts["threads"]:
            torch.set_num_threads(opts["threads"])
        config = HardbenchConfig(
            data_dir=Path(settings.DATA_DIR), out_dir=opts["out"], cache_dir=opts["cache"], ks=opts["k"],
            seeds=opts["seeds"], strategies=opts["strategies"], max_train_rows=opts["max_train_rows"],
            deep_method=opts["deep_method"], epochs=opts["epochs"], trainable_blocks=opts["trainable_blocks"] if opts["trainable_blocks"] > 0 else None,
        )
        summary = run(config, load_encoder(), load_tokenizer())
        self.stdout.write(f"report: {config.out_dir / 'report.md'}")
        for row in summary["table"]:
            self.stdout.write(f"k={row['k']:>4} {row['strategy']:<14} best {row['best_mean']:.2f}±{row['best_std']:.2f}"
                              f"  final {row['final_mean']:.2f}±{row['final_std']:.2f}")
