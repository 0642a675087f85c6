"""Use cases of the create flow: contexts, submission, the sandbox, the writer's actions, figures and inspiration.

Scoring (the model verdict) lives in annotation.scoring; submit() only saves the example and, once the
transaction has committed, enqueues the scoring job (annotation.jobs), so a model server that is down never
loses an example.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from annotation import assistant, duplicates, jobs, scoring
from annotation.feedback import APPEALABLE
from annotation.models import Example, Suggestion
from annotation.sampling import get_strategy
from dynabench_site import errors
from modelzoo import opponent
from study import arms
from tasks import guidelines
from tasks.access import open_round
from tasks.kinds import InputError, TaskConfig
from tasks.kinds.base import clean_text
from tasks.models import Context, LabeledItem, Round, Task

MAX_TIME_SPENT_MS = 24 * 3600 * 1000
MAX_REASON_CHARS = 1000
MAX_EXPLANATION_CHARS = 2000


class Conflict(errors.Conflict):
    """The request is well formed but the state forbids it (closed round, validated example): HTTP 409."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


@dataclass(frozen=True)
class Submission:
    """What a writer sends; every part is validated by the task kind on the server."""

    input: Any
    target: Any
    context_id: int | None = None
    round_number: int | None = None
    idempotency_key: str | None = None
    time_spent_ms: int | None = None
    suggestion_id: int | None = None  # the writing assistant's request the writer had open (annotation.assistant)
    suggestion_choice: int | None = None  # the candidate they took, when they took one


@dataclass(frozen=True)
class CleanSubmission:
    round: Round
    context: Context | None
    input: dict[str, str]
    target: Any
    model_input: dict[str, str]


@dataclass
class SubmitResult:
    example: Example
    created: bool
    notes: dict[str, Any] = field(default_factory=dict)


# --- rounds and contexts -------------------------------------------------------------------------


def current_round(task: Task, number: int | None = None) -> Round:
    """The task's open round; `number`, when given, must be that round (else the writer's page is stale)."""
    current = open_round(task)
    if current is None:
        raise Conflict("round", f"task {task.slug!r} has no open round; submissions are closed")
    if number is not None and number != current.number:
        raise Conflict("round", f"round {number} is not open; the open round is {current.number}")
    return current


def context_candidates(task: Task, round: Round) -> QuerySet[Context]:
    """Contexts a writer may see in `round`: the round's own and the task's shared pool."""
    return Context.objects.filter(task=task).filter(Q(round=round) | Q(round__isnull=True))


def next_context(task: Task, round: Round, exclude: int | None = None) -> Context | None:
    """A context chosen by the task's sampling strategy; counts the use."""
    candidates = context_candidates(task, round)
    strategy = get_strategy(task.typed_config.sampling)
    context = strategy(candidates.exclude(pk=exclude)) if exclude is not None else None
    if context is None:  # nothing excluded, or the shown context is the only one: serve it again
        context = strategy(candidates)
    if context is not None:
        if context.round_id == round.pk:
            context.round = round  # the caller's round, already in memory (the answer names its number)
        Context.objects.filter(pk=context.pk).update(times_used=F("times_used") + 1)
        context.times_used += 1
    return context


def needs_context(task: Task, config: TaskConfig) -> bool:
    return bool(task.kind_impl.model_context_fields(config))


def resolve_context(task: Task, round: Round, context_id: Any, config: TaskConfig) -> Context | None:
    if context_id is None:
        if needs_context(task, config):
            raise InputError("context_id", "is required: this task's model reads the shown context")
        return None
    if not isinstance(context_id, int) or isinstance(context_id, bool):
        raise InputError("context_id", "must be an integer id")
    context = Context.objects.filter(pk=context_id).select_related("round").first()
    if context is None or context.task_id != task.pk:
        raise InputError("context_id", f"context {context_id} does not belong to task {task.slug!r}")
    if context.round_id is not None and context.round_id != round.pk:
        raise InputError(
            "context_id", f"context {context_id} belongs to round {context.round.number}, not to the open round {round.number}"
        )
    return context


# --- validation and submission -------------------------------------------------------------------


def clean_submission(task: Task, sub: Submission) -> CleanSubmission:
    """Validate everything the writer sent against the task kind; raises InputError or Conflict."""
    config = task.typed_config
    kind = task.kind_impl
    round = current_round(task, sub.round_number)
    context = resolve_context(task, round, sub.context_id, config)
    payload = context.payload if context is not None else {}
    cleaned_input = kind.clean_input(config, payload, sub.input)
    target = kind.clean_target(config, payload, sub.target)
    _check_time_spent(sub.time_spent_ms)
    return CleanSubmission(round, context, cleaned_input, target, kind.model_input(config, payload, cleaned_input))


def _check_time_spent(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TIME_SPENT_MS:
        raise InputError("time_spent_ms", f"must be an integer between 0 and {MAX_TIME_SPENT_MS}")


def _check_key(key: Any) -> str | None:
    if key is None or key == "":
        return None
    if not isinstance(key, str) or len(key) > 100 or not key.isprintable():
        raise InputError("idempotency_key", "must be a printable string of at most 100 characters")
    return key


def submit(user, task: Task, sub: Submission, *, word_map: bool = True) -> SubmitResult:
    """Save a writer's example (before any model is called) and enqueue its scoring after commit.

    `word_map=False` asks for the verdict alone: no word map is computed after it (its state says
    "unavailable", not requested; `annotation.scoring.NOT_REQUESTED`). The round simulation submits so: maps are no part
    of the verdict and cost most of its time. The writer's page and the API always ask for one.

    The same idempotency key from the same user on the same task returns the first example instead of a
    second one (the same key on another task is another example); the
    same model input (`annotation.duplicates`) without that key is a duplicate and refused (409). A writer who has not
    acknowledged the task's current guidelines is asked to first (409).
    """
    key = _check_key(sub.idempotency_key)
    if key is not None and (first := _by_key(user, task, key)) is not None:
        return SubmitResult(first, created=False)
    guidelines.check_acknowledged(user, task)
    clean = clean_submission(task, sub)
    arm, language = arms.for_submission(task, user)  # the study's arm (assigned once) and the language: never changed
    word_map = word_map and (arm is None or arm.model_in_loop)  # nobody's page shows a hidden verdict's map
    shown = clean.context.payload if clean.context else None
    fingerprint = duplicates.fingerprint(task, shown, clean.input)
    try:
        with transaction.atomic():
            # The database is the arbiter of duplicates (annotation.duplicates): the unique constraint on (author,
            # round, model_key) refuses the writer's racing copy at the insert; a lock taken before the check makes
            # linked accounts' racing copies wait for each other's commit, so the check sees the winner.
            duplicates.check_not_duplicate(user, task, shown, clean.input, key=fingerprint, lock=True)
            origin = assistant.provenance(user, task, clean.round, sub.suggestion_id, sub.suggestion_choice,
                                          clean.input)
            example = Example.objects.create(
                round=clean.round, context=clean.context, author=user, input=clean.input, target=clean.target,
                idempotency_key=key, model_key=fingerprint, time_spent_ms=sub.time_spent_ms, suggestion=origin.suggestion,
                assistance=origin.assistance, suggested_text=origin.suggested_text, edit_distance=origin.edit_distance,
                arm=arm, language=language,
                metadata={"kind": task.kind, "sampling": task.typed_config.sampling,
                          **({} if word_map else {"word_map": False})},  # read when another job batches it
            )
            jobs.enqueue_scoring(example.pk, word_map=word_map)  # runs once this transaction commits
    except IntegrityError:
        # Two requests with the same key raced (the first one won: a replay), or the same model input did (a
        # duplicate, 409 as from the check).
        if key is not None and (first := _by_key(user, task, key)) is not None:
            return SubmitResult(first, created=False)
        duplicates.check_not_duplicate(user, task, shown, clean.input, key=fingerprint)
        raise
    return SubmitResult(example, created=True)


def ask_assistant(user, task: Task, context_id: Any, target: Any, round_number: int | None = None) -> Suggestion:
    """Save a pending request to the writing assistant and queue its job (annotation.assistant). The same checks
    as a submission (the open round, the context, the label, the guidelines read), so the writer learns of a
    problem before writing; a task with the assistant off, or of a kind it cannot help, is a 409."""
    assistant.check_enabled(task, user)
    guidelines.check_acknowledged(user, task)
    config = task.typed_config
    round_ = current_round(task, round_number)
    context = resolve_context(task, round_, context_id, config)
    label = task.kind_impl.clean_target(config, context.payload if context else {}, target)
    suggestion = Suggestion.objects.create(round=round_, context=context, author=user, target=label,
                                           provider=config.assistant.provider.provider)
    jobs.enqueue_suggestion(suggestion.pk)  # once this request's transaction commits
    return suggestion


def _by_key(user, task: Task, key: str) -> Example | None:
    """The writer's first example under this key on this task. Every keyed submission asks, and almost every
    answer is "none": the probe reads the key's primary key alone (a full model select costs ≈ 5× more to compile,
    docs/benchmarks/load.md, run O); a replay then reads the example with what its response shows."""
    pk = (Example.objects.filter(author=user, round__task=task, idempotency_key=key)
          .order_by("pk").values_list("pk", flat=True).first())
    if pk is None:
        return None
    return Example.objects.select_related("round__task", "context", "author").get(pk=pk)


def sandbox_verdict(task: Task, sub: Submission, user=None) -> dict[str, Any]:
    """Validate and score a would-be example without storing anything (BackendError propagates). The verdict is
    decided and shaped as a stored one (`scoring.verdicts.verdict_of`, the verdict seam), the opponent's row
    included. A writer whose study arm has no model in the loop is refused (409); one whose arm has its own
    ensemble is answered by that ensemble."""
    if user is not None:
        arms.check_shows_models(task, user)
    clean = clean_submission(task, sub)
    ensemble = arms.scoring_ensemble(arms.arm_of(task, user)) if user is not None else None
    predicted = scoring.predict(clean.round, [clean.model_input], explain=True,  # nothing is stored: map now
                                **({"ensemble": ensemble} if ensemble else {}))[0]
    rival = opponent.verdict_entry(task, clean.model_input, clean.target)  # the opponent's row, as in a verdict
    verdict = scoring.verdict_of(task, clean.target, predicted, rival)
    return {
        "sandbox": True,
        "round": clean.round.number,
        "context_id": clean.context.pk if clean.context else None,
        "input": clean.input,
        "target": clean.target,
        **verdict.record(),
        "explanation": predicted.get("explanation"),
        "model_versions": predicted["model_versions"],
    }


# --- the writer's actions ------------------------------------------------------------------------


def retract(example: Example) -> Example:
    """The writer withdraws an example; it no longer counts (allowed until validators decided on it)."""
    if example.consensus != Example.Consensus.UNVALIDATED and not example.retracted:
        raise Conflict("retracted", "the example has already been validated and can no longer be retracted")
    Example.objects.filter(pk=example.pk).update(retracted=True)
    example.refresh_from_db()
    return example


def flag(example: Example, reason: Any) -> Example:
    text = clean_text("reason", reason, MAX_REASON_CHARS)
    Example.objects.filter(pk=example.pk).update(flagged=True, flag_reason=text)
    example.refresh_from_db()
    return example


def appeal(example: Example, reason: Any) -> Example:
    """The writer asks an expert to look again at a rejection (rejected or flagged by the validators); once."""
    text = clean_text("reason", reason, MAX_REASON_CHARS)
    if example.appealed_at is not None:
        raise Conflict("appeal", "you have already appealed this example; an expert decides it")
    if example.retracted or example.consensus not in APPEALABLE:
        state = "retracted" if example.retracted else example.get_consensus_display().lower()
        raise Conflict("appeal", f"only a rejected or flagged example can be appealed; this one is {state}")
    updated = Example.objects.filter(pk=example.pk, appealed_at__isnull=True).update(
        appeal_reason=text, appealed_at=timezone.now()
    )
    if not updated:  # a second request raced the first
        raise Conflict("appeal", "you have already appealed this example; an expert decides it")
    example.refresh_from_db()
    return example


def explain(example: Example, text: Any) -> Example:
    """Keep the writer's explanation of why the model was wrong with the example."""
    cleaned = clean_text("writer_explanation", text, MAX_EXPLANATION_CHARS)
    Example.objects.filter(pk=example.pk).update(writer_explanation=cleaned)
    example.refresh_from_db()
    return example


# --- figures and inspiration ---------------------------------------------------------------------


def writer_figures(user, task: Task | None = None) -> dict[str, Any]:
    """The writer's own figures: examples, fooled, verified fooled, MER, vMER, retractions, pending."""
    mine = Example.objects.filter(author=user)
    if task is not None:
        mine = mine.filter(round__task=task)
    figures = mine.figures()
    figures["retracted"] = mine.filter(retracted=True).count()
    figures["pending"] = mine.collected().filter(scoring_state=Example.Scoring.PENDING).count()
    return figures


def inspiration(task: Task, round: Round, limit: int = 5) -> dict[str, list[dict[str, Any]]]:
    """Verified fooling examples of this round, and the hardness-seeded hard examples of this round."""
    fooling = (
        Example.objects.collected()
        .filter(round=round, fooled=True, consensus=Example.Consensus.VERIFIED)
        .select_related("context")
        .order_by("-id")[:limit]
    )
    seeds = LabeledItem.objects.filter(task=task, seed_round=round).order_by(
        F("hardness_score").desc(nulls_last=True), "id"
    )[:limit]
    return {
        "fooling_examples": [_fooling_row(e) for e in fooling],
        "hard_examples": [_seed_row(item) for item in seeds],
    }


def _fooling_row(example: Example) -> dict[str, Any]:
    return {
        "context": example.context.payload if example.context else {},
        "input": example.input,
        "target": example.target,
        "model_prediction": example.ensemble_prediction,
    }


def _seed_row(item: LabeledItem) -> dict[str, Any]:
    return {"context": item.context, "input": item.input, "target": item.target, "hardness_score": item.hardness_score}
