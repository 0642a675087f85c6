"""What stands between a person and work on a task, before the guidelines: the apps above register their gates
(the study's consent, pre-survey and arm: `study.gate`, registered in `StudyConfig.ready`). A gate is
`(user, task) -> Step | None`: the first step the person still has to take, or None.

`check` is called before any work (by `tasks.guidelines.check_acknowledged`, so every submission, vote, assistant
request, chat message and quiz that asks for the guidelines asks the gates first): a pending step is a 409 whose
`code` and `next_url` say where to go. Pages ask `pending` and redirect to the step's page (`next_url`).
Owners and admins are never stopped (they set the study up)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from dynabench_site.errors import Conflict
from tasks import roles
from zoo.registry import Registry


@dataclass(frozen=True)
class Step:
    code: str  # e.g. "consent", "pre_survey", "ineligible", "withdrawn"
    message: str  # for people: what to do
    url: str  # the page that does it
    extra: dict[str, Any] = field(default_factory=dict)


Gate = Callable[[Any, Any], "Step | None"]
GATES: Registry[Gate] = Registry("work gate")


def register(name: str, gate: Gate) -> None:
    GATES.register(name, gate, replace=True)


class StepPending(Conflict):
    """409 with the step's code (`consent`, `pre_survey`, `ineligible`, ...) and `next_url`."""

    def __init__(self, step: Step):
        super().__init__(step.message, extra={"next_url": step.url, **step.extra})
        self.code = step.code
        self.step = step


def pending(user, task) -> Step | None:
    """The first pending step of any gate, or None (always None for the task's owners and admins)."""
    if not GATES or roles.can_manage(user, task):
        return None
    for gate in GATES.values():
        step = gate(user, task)
        if step is not None:
            return step
    return None


def check(user, task) -> None:
    step = pending(user, task)
    if step is not None:
        raise StepPending(step)
