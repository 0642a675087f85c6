"""A tqdm progress bar fed by training's progress callback (CLI only; the DB row is the UI's record)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

from zoo.training import Progress


@contextmanager
def tqdm_echo(desc: str, position: int = 0, leave: bool = True) -> Iterator[Progress]:
    bar: tqdm | None = None

    def echo(step: int, total: int, stats: dict[str, float]) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, unit="step", position=position, leave=leave, file=sys.stderr,
                       dynamic_ncols=True)
        bar.update(step - bar.n)
        bar.set_postfix(loss=f"{stats.get('loss', 0):.3f}", refresh=False)

    try:
        yield echo
    finally:
        if bar is not None:
            bar.close()
