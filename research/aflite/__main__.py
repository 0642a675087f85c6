"""python -m research.aflite — AFLite on SST-2: is the filtered subset harder, and what does training on it do?

Run it from the project's root. DATA_DIR (SST-2) and VAR_DIR (report, caches) are the platform's
(`dynabench_site.settings`, read without starting Django).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from django.conf import settings

from research.aflite.experiment import ExperimentConfig, run


def platform_dirs() -> tuple[Path, Path]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    return Path(settings.DATA_DIR), Path(settings.VAR_DIR)


def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v.strip()]


def _size(value: str) -> int | float:
    return float(value) if "." in value else int(value)


def parser(data_dir: Path, var_dir: Path) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m research.aflite", description=(
        "Filter a sample of SST-2 train with AFLite (frozen MiniLM embeddings), then compare the filtered subset "
        "with random subsets of the same size: (a) how hard it is, (b) what training on it does on SST-2 dev."))
    p.add_argument("--pool-size", type=int, default=24_000, help="SST-2 train rows in the pool (0: all 67,349)")
    p.add_argument("--reference-share", type=float, default=1 / 3,
                   help="share of the pool that only trains the models of (a)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--random-seeds", type=_ints, default=[0, 1, 2], help="seeds of the random subsets")
    p.add_argument("--m", type=int, default=None, help="AFLite partitions (paper: 64)")
    p.add_argument("--t", type=_size, default=None, help="probe training size: a count, or a share (paper ≈ 0.091)")
    p.add_argument("--k", type=_size, default=None, help="slice size: a count, or a share (paper ≈ 0.018)")
    p.add_argument("--n", type=_size, default=None, help="target size: a count, or a share (paper ≈ 0.167)")
    p.add_argument("--tau", type=float, default=None, help="early-stopping threshold (paper: 0.75)")
    p.add_argument("--data", type=Path, default=data_dir, help="folder with sst2/{train,dev}.jsonl")
    p.add_argument("--out", type=Path, default=var_dir / "aflite")
    p.add_argument("--cache", type=Path, default=var_dir / "cache" / "aflite")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: the shared 2-core machine)")
    return p


def load_encoder():
    """The packaged all-MiniLM-L6-v2 (zoo.encoders' default) in eval mode, and its tokenizer."""
    from transformers import AutoModel

    from zoo import encoders

    source = encoders.resolve(None)
    torch.manual_seed(0)
    return source.model(AutoModel, source.config()).eval(), source.tokenizer()


def main(argv: Sequence[str] | None = None) -> None:
    args = parser(*platform_dirs()).parse_args(argv)
    torch.set_num_threads(args.threads)
    config = ExperimentConfig(data_dir=args.data, out_dir=args.out, cache_dir=args.cache,
                              pool_size=args.pool_size or None, reference_share=args.reference_share,
                              seed=args.seed, random_seeds=args.random_seeds)
    for name in ("m", "t", "k", "n", "tau"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    start = time.perf_counter()
    summary = run(config, *load_encoder(), log=lambda msg: print(msg, flush=True))
    print((config.out_dir / "report.md").read_text())
    print(f"wall time {time.perf_counter() - start:.0f} s; report: {config.out_dir / 'report.md'}")
    return summary


if __name__ == "__main__":
    main()
