"""python -m research.hardbench — the Hard-Bench reproduction on SST-2 (see docs/hardbench/README.md).

Run it from the project's root. The default folders are the platform's: DATA_DIR for SST-2, VAR_DIR for the
report and the caches (both read from `dynabench_site.settings`, so the environment variables mean the same).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from django.conf import settings

from research.hardbench import HardbenchConfig, run
from research.hardbench.pool import DEFAULT_STRATEGIES
from zoo import encoders


def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v.strip()]


def _names(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def platform_dirs() -> tuple[Path, Path]:
    """(DATA_DIR, VAR_DIR) as the platform resolves them; reading settings does not start Django."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    return Path(settings.DATA_DIR), Path(settings.VAR_DIR)


def parser(data_dir: Path, var_dir: Path) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m research.hardbench", description=(
        "Score SST-2 train with a weak scorer, build hard/random k-shot sets, train a target, write a report."))
    p.add_argument("--k", type=_ints, default=[16, 64, 500], help="k per label, comma-separated")
    p.add_argument("--seeds", type=_ints, default=[0, 1, 2])
    p.add_argument("--strategies", type=_names, default=list(DEFAULT_STRATEGIES),
                   help="random, a score name (hardest k), or easiest:<score>")
    p.add_argument("--max-train-rows", type=int, default=None, help="first N SST-2 train rows (all by default)")
    p.add_argument("--epochs", type=int, default=3, help="target fine-tuning epochs")
    p.add_argument("--trainable-blocks", type=int, default=2,
                   help="target: top blocks fine-tuned with the head (0 or less: all blocks)")
    p.add_argument("--data", type=Path, default=data_dir, help="folder with sst2/{train,dev}.jsonl")
    p.add_argument("--out", type=Path, default=var_dir / "hardbench")
    p.add_argument("--cache", type=Path, default=var_dir / "cache" / "hardbench")
    p.add_argument("--deep-method", choices=["vmap", "ghost"], default="ghost",
                   help="gradnorm_deep: torch.func vmap per-sample grads, or ghost norms (same values, faster)")
    p.add_argument("--encoder", default=None, metavar="NAME_OR_PATH",
                   help="the encoder (zoo.encoders: a registered name or a local Hugging Face folder; default: the "
                        "packaged all-MiniLM-L6-v2); another encoder keeps its caches and report in a subfolder")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads; 1 by default: on a shared 2-core machine two threads oversubscribe")
    return p


def load(source: encoders.EncoderSource):
    """The encoder (AutoModel with its weights; a tiny one is random, seeded) on the ZOO_DEVICE device, and its
    tokenizer."""
    from transformers import AutoModel

    from zoo import device

    torch.manual_seed(0)
    return source.model(AutoModel, source.config()).to(device.resolve()).eval(), source.tokenizer()


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(*platform_dirs())
    args = p.parse_args(argv)
    try:
        source = encoders.resolve(args.encoder)
    except encoders.EncoderError as exc:
        p.error(str(exc))
    if args.threads:
        torch.set_num_threads(args.threads)
    if source.name != encoders.DEFAULT:  # caches and report of another encoder never mix with MiniLM's
        tag = "".join(c if c.isalnum() or c in "-_." else "_" for c in source.name.strip("/"))[-80:]
        args.out, args.cache = args.out / tag, args.cache / tag
    config = HardbenchConfig(
        data_dir=args.data, out_dir=args.out, cache_dir=args.cache, ks=args.k, seeds=args.seeds,
        strategies=args.strategies, max_train_rows=args.max_train_rows, deep_method=args.deep_method,
        epochs=args.epochs, trainable_blocks=args.trainable_blocks if args.trainable_blocks > 0 else None,
    )
    summary = run(config, *load(source))
    print(f"report: {config.out_dir / 'report.md'}")
    for row in summary["table"]:
        print(f"k={row['k']:>4} {row['strategy']:<14} best {row['best_mean']:.2f}±{row['best_std']:.2f}"
              f"  final {row['final_mean']:.2f}±{row['final_std']:.2f}")


if __name__ == "__main__":
    main()
