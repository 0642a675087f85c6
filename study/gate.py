"""The study's gate before work (tasks.gates): consent, the pre-survey and its eligibility rules, the arm."""

from __future__ import annotations

from tasks.gates import Step


def pending(user, task) -> Step | None:
    return None
