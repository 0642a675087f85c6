"""Live figures of a task (collected, fooled, MER, vMER…), as the task API shows them.

The figures are derived from examples, which the annotation app owns; tasks sits below annotation and never
imports it. So annotation provides the figures here when its app is ready (`AnnotationConfig.ready`), and the
task API asks this module. Without a provider (annotation not installed) every figure is empty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Figures = dict[str, Any]
_empty: Figures = {}
_task_figures: Callable[[Any], Figures] | None = None
_round_figures: Callable[[Any], dict[int, Figures]] | None = None


def provide(*, task_figures: Callable[[Any], Figures], round_figures: Callable[[Any], dict[int, Figures]],
            empty: Figures) -> None:
    """Called once by the app that owns the examples; `empty` is the figures of no examples."""
    global _task_figures, _round_figures, _empty
    _task_figures, _round_figures, _empty = task_figures, round_figures, empty


def for_task(task) -> Figures:
    return _task_figures(task) if _task_figures else dict(_empty)


def by_round(task) -> dict[str, Figures]:
    """Every round of the task, keyed by its number as a string (rounds without examples get empty figures)."""
    per_round = _round_figures(task) if _round_figures else {}
    return {str(r.number): per_round.get(r.number, dict(_empty)) for r in task.rounds.all()}
