"""The verdict seam (docs/chat/verdict.md): who answered an example, whether it fooled them, and who decided so.

Every decision of "fooled" goes through `decide`, owned by the task kind's flags rather than by each caller:

- **who answers** (`TaskKind.answered_by`): the round's encoder "ensemble" (its aggregated prediction, and each
  member's row beside it), or "language_models" (the chat kind's blinded targets: their answers are the rows);
- **who judges** (`TaskKind.judged_by`): a "rule" — the kind's `is_fooled` (a label differs, QA's F1 under the
  threshold) applied here and nowhere else — or "people": the writer's claim stays pending until validators
  confirm or reject it, and their judgement (`{"confirmed": bool}`, what the chat kind's rule reads) decides.

The callers (scoring's stored verdict, the sandbox, the writing assistant's candidates, the language model
opponent's own flag, `simulate_rounds`' held-out error) ask `decide` and show its answer through one
`Verdict.record`, so a verdict has one shape wherever it is stored or shown. The stored shape is unchanged by the
seam: the per-model flags are the verdict's to give, and a row keeps only what its model put there (the opponent's
own `fooled`); `tests/site/test_rule_homes.py` checks that only this module applies a kind's rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tasks.kinds.base import TaskConfig, TaskKind

RULE, PEOPLE = "rule", "people"
ENSEMBLE, LANGUAGE_MODELS = "ensemble", "language_models"


class HasKind(Protocol):
    """A task (`tasks.models.Task`, not imported here: the models import this package)."""

    @property
    def kind_impl(self) -> TaskKind: ...

    @property
    def typed_config(self) -> TaskConfig: ...


@dataclass(frozen=True)
class Verdict:
    """One example's verdict.

    `fooled`: True or False once decided; None while people have not judged yet (`pending`). `ensemble_prediction`:
    the ensemble's aggregated answer (None when language models answer). `models`: each model's row as its caller
    gave it (a member's prediction, the opponent's row, a language model's answer). `model_fooled`: per row, whether
    that model was fooled (None: it gave no answer, or people have not judged it)."""

    answered_by: str
    judged_by: str
    fooled: bool | None
    ensemble_prediction: dict[str, Any] | None
    models: tuple[Mapping[str, Any], ...]
    model_fooled: tuple[bool | None, ...]

    @property
    def pending(self) -> bool:
        return self.fooled is None

    def record(self, flag: str = "fooled") -> dict[str, Any]:
        """The verdict as it is stored on an example and shown (the sandbox, the API, the assistant's candidates):
        `{flag, "ensemble_prediction", "model_predictions"}`. `flag` names the decision: "fooled" for a verdict;
        the writing assistant says "models_disagree", since no person checked that its text has the label."""
        return {flag: self.fooled, "ensemble_prediction": self.ensemble_prediction,
                "model_predictions": list(self.models)}


def hidden_record(flag: str = "fooled") -> dict[str, Any]:
    """`Verdict.record`'s fields, empty: what a writer reads whose study arm has no model in the loop (study.arms)."""
    return {flag: None, "ensemble_prediction": None, "model_predictions": []}


def decide(task: HasKind, target: Any, ensemble_prediction: Mapping[str, Any] | None = None,
           models: Sequence[Mapping[str, Any]] = (), *, judgement: Mapping[str, Any] | None = None) -> Verdict:
    """The verdict on `target` for the task's kind: the one function that decides "fooled".

    Rule-judged kinds: `ensemble_prediction` is what the rule reads (the ensemble's, or a single model's when a
    caller asks about that model alone: the opponent's own flag, a held-out row); each row of `models` with a
    `prediction` gets its own flag by the same rule. When language models answer (no ensemble), the example fools
    them when it fools any of them.

    People-judged kinds (chat): `models` are the answers the writer's claim is about; `judgement` is what people
    decided (`{"confirmed": bool}`), None while they have not: the verdict is then pending (`fooled` None). The
    kind's rule reads the judgement, so "fooled" means "a confirmed failure"."""
    kind, config = task.kind_impl, task.typed_config
    rows = tuple(models)
    if kind.judged_by == PEOPLE:
        fooled = None if judgement is None else bool(kind.is_fooled(config, target, dict(judgement)))
        return Verdict(kind.answered_by, PEOPLE, fooled, _plain(ensemble_prediction), rows, (fooled,) * len(rows))
    if kind.judged_by != RULE:
        raise ValueError(f"task kind {kind.name!r} is judged by {kind.judged_by!r}; expected {RULE!r} or {PEOPLE!r}")
    flags = tuple(None if row.get("prediction") is None else bool(kind.is_fooled(config, target, row["prediction"]))
                  for row in rows)
    if kind.answered_by == LANGUAGE_MODELS and ensemble_prediction is None:
        answered = [flag for flag in flags if flag is not None]
        fooled = any(answered) if answered else None
    elif ensemble_prediction is None:
        raise ValueError(f"a {kind.name} verdict needs the ensemble's prediction: its rule reads it")
    else:
        fooled = bool(kind.is_fooled(config, target, ensemble_prediction))
    return Verdict(kind.answered_by, RULE, fooled, _plain(ensemble_prediction), rows, flags)


def _plain(prediction: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return prediction if prediction is None or isinstance(prediction, dict) else dict(prediction)
