"""Randomised arms: who is assigned to which condition, and what a condition changes for the writer
(docs/study/arms.md).

Assignment (`assign`). A participant of a task whose study is enabled and has active arms is assigned once, at
random, and never again: the arm, the participant's `sequence` (the n-th assignment of the task, from 0) and the
time are recorded; editing, reweighting or deactivating arms later changes nothing already assigned. Two modes
(`Study.assignment`):

- balanced: permuted blocks. Block b holds every active arm `weight × BLOCK_REPEATS` times, shuffled by a generator
  seeded with (the study's seed, b); the n-th participant gets `schedule[n]`. After any number of participants the
  arms' counts differ from their weights' shares by at most one block's worth, and the same seed gives the same
  schedule (`schedule`).
- random: each participant drawn alone, weighted, with a generator seeded with (seed, n): reproducible, unbalanced.

Concurrency: the study's row is locked (`select_for_update`) while the next sequence number is taken, so two people
joining at once get distinct numbers and distinct places in the schedule; the sequence is also unique in the
database.

Who is assigned: anyone who works on the task (the gate, `study.gate`, assigns after consent and the pre-survey;
a submission or the write page assigns a person the gate did not), except the task's owners and admins (they set
the study up; their own examples carry no arm), people found ineligible and people who withdrew.

What an arm changes (`Standing`, read on every submission from the access cache, `dynabench_site.access_cache`):
- `assistant` off: the writing assistant is not offered, and a request for it is a 409 (`check_assistant`);
- `model_in_loop` off (standard collection, scored afterwards): the writer sees "saved" only, never the models'
  answers, verdict or word map (`hides_verdict`); the example is scored as usual, so the comparison has its MER;
  owners and validators see verdicts as always;
- `ensemble` set: the writer's examples are scored against that ensemble (of the same task) instead of the round's
  live one (`annotation.scoring`), and the verdict records which model versions answered.

Participants are not told their condition (a blind study): `mine` says what their page does, never the arm's name.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from dynabench_site import access_cache
from dynabench_site.errors import Conflict, InvalidInput
from dynabench_site.text import text_problem
from modelzoo.models import Ensemble, ModelVersion
from study import texts
from study.models import Arm, Participant, Study
from tasks import roles
from tasks.models import Task

BLOCK_REPEATS = 2  # a balanced block holds each arm weight × this many times (a block of 2 is too guessable)
MAX_WEIGHT = 20
MAX_ARMS = 20
MAX_NAME = 200
MAX_DESCRIPTION = 2000
MAX_SEED = 2**31 - 1


# --- the schedule ---------------------------------------------------------------------------------


def _order(arms: list[Arm]) -> list[Arm]:
    return sorted(arms, key=lambda a: (a.position, a.pk))


def block(arms: list[Arm], seed: int, number: int) -> list[int]:
    """Block `number` of a balanced schedule: the arms' ids, each weight × BLOCK_REPEATS times, shuffled by a
    generator seeded with (seed, number) alone (a string seed: the same on every machine and Python run)."""
    ids = [arm.pk for arm in _order(arms) for _ in range(arm.weight * BLOCK_REPEATS)]
    random.Random(f"arms:{seed}:block:{number}").shuffle(ids)
    return ids


def schedule(arms: list[Arm], seed: int, count: int) -> list[int]:
    """The first `count` places of a balanced schedule (arm ids): `schedule[n]` is the n-th participant's arm."""
    size = sum(arm.weight for arm in arms) * BLOCK_REPEATS
    if not size:
        return []
    out: list[int] = []
    for number in range(-(-count // size)):
        out += block(arms, seed, number)
    return out[:count]


def pick(study: Study, arms: list[Arm], sequence: int) -> Arm:
    """The arm of the participant with this sequence number, by the study's mode."""
    ordered = _order([arm for arm in arms if arm.weight > 0])
    by_id = {arm.pk: arm for arm in ordered}
    if study.assignment == Study.Assignment.RANDOM:
        rng = random.Random(f"arms:{study.seed}:draw:{sequence}")
        return rng.choices(ordered, weights=[arm.weight for arm in ordered])[0]
    size = sum(arm.weight for arm in ordered) * BLOCK_REPEATS
    return by_id[block(ordered, study.seed, sequence // size)[sequence % size]]


# --- assignment -----------------------------------------------------------------------------------


def _assignable(arms: list[Arm]) -> bool:
    return any(arm.active and arm.weight > 0 for arm in arms)


def _participant(task: Task, user) -> Participant:
    """The person's participant row (made at the first call; unique per task and user)."""
    found = Participant.objects.filter(task=task, user=user).select_related("arm").first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return Participant.objects.create(task=task, user=user, language=texts.language_code(get_language()))
    except IntegrityError:  # made meanwhile by a parallel request of the same person
        return Participant.objects.select_related("arm").get(task=task, user=user)


def assign(task: Task, user) -> Participant:
    """The person's participant record, assigned to an arm when the task's study is enabled and has active arms and
    the person has none yet (never changed once assigned). Owners and admins, ineligible people and people who
    withdrew are recorded but not assigned."""
    participant = _participant(task, user)
    if participant.arm_id is not None or roles.can_manage(user, task):
        return participant
    if participant.eligible is False or participant.withdrawn_at is not None:
        return participant
    with transaction.atomic():
        study = Study.objects.select_for_update().filter(task=task, enabled=True).first()  # the assigners' queue
        if study is None:
            return participant
        arms = [arm for arm in Arm.objects.filter(task=task, active=True, weight__gt=0)]
        if not _assignable(arms):
            return participant
        fresh = Participant.objects.select_for_update().get(pk=participant.pk)
        if fresh.arm_id is not None:  # a parallel request of the same person assigned it first
            return Participant.objects.select_related("arm").get(pk=participant.pk)
        last = Participant.objects.filter(task=task, sequence__isnull=False).aggregate(n=Max("sequence"))["n"]
        sequence = 0 if last is None else last + 1
        arm = pick(study, arms, sequence)
        now = timezone.now()
        Participant.objects.filter(pk=participant.pk, arm__isnull=True).update(arm=arm, sequence=sequence,
                                                                               assigned_at=now)
    participant.arm, participant.sequence, participant.assigned_at = arm, sequence, now
    access_cache.bump()  # a queryset update sends no signal; the person's cached standing is stale now
    return participant


@dataclass(frozen=True)
class Standing:
    """What a person's arm means on a task, as every submission reads it (cached)."""

    study_on: bool  # the task's study is enabled and has arms to assign to
    arm: Arm | None
    language: str = ""  # the participant's recorded language

    @property
    def needs_assignment(self) -> bool:
        return self.study_on and self.arm is None


NO_STUDY = Standing(False, None)


def standing(task: Task, user) -> Standing:
    """The person's arm on the task and whether the task's study assigns arms: from the access cache when a request
    read it lately (any write to a study, an arm or a participant replaces the access generation), else two
    indexed reads. Never writes."""
    if not getattr(user, "is_authenticated", False):
        return NO_STUDY
    name = access_cache.key("arm", task.pk, user.pk)
    found, generation = access_cache.lookup(name)
    if found is not access_cache.MISSING:
        return found
    found = _read_standing(task, user)
    access_cache.put(name, found, generation)
    return found


def _read_standing(task: Task, user) -> Standing:
    participant = Participant.objects.filter(task=task, user=user).select_related("arm").first()
    arm = participant.arm if participant is not None else None
    language = participant.language if participant is not None else ""
    if arm is not None:
        return Standing(True, arm, language)
    on = Study.objects.filter(task=task, enabled=True, task__arms__active=True, task__arms__weight__gt=0).exists()
    if not on and participant is None:
        return NO_STUDY
    return Standing(on, None, language)


def arm_of(task: Task, user) -> Arm | None:
    """The person's arm on the task, or None (cheap: the access cache; see `standing`)."""
    return standing(task, user).arm


def for_submission(task: Task, user) -> tuple[Arm | None, str]:
    """The arm and language an example of this person carries (set once, at submission): `joined`'s arm, and the
    interface's language (the participant's choice) or, without one, the participant's recorded language."""
    found = standing(task, user)
    return _joined(task, user, found), texts.language_code(get_language() or found.language or None)


def joined(task: Task, user) -> Arm | None:
    """For the write page: the person's arm, assigning one first when the study assigns arms and they have none
    (a person the gate did not assign)."""
    return _joined(task, user, standing(task, user))


def _joined(task: Task, user, found: Standing) -> Arm | None:
    if found.needs_assignment and not roles.can_manage(user, task):
        return assign(task, user).arm
    return found.arm


# --- what an arm changes --------------------------------------------------------------------------


def offers_assistant(task: Task, user) -> bool:
    """Whether the person's arm allows the writing assistant (True outside a study)."""
    arm = arm_of(task, user) if user is not None else None
    return arm is None or arm.assistant


class AssistantOff(Conflict):
    code = "assistant_off"


def check_assistant(task: Task, user) -> None:
    if not offers_assistant(task, user):
        raise AssistantOff(_("In this study you write without the writing assistant: it is not offered to you on "
                             "this task. Write your own example; submitting works as usual."))


def shows_models(task: Task, user) -> bool:
    """Whether the person sees the models' answers and verdicts (False in a "no model in the loop" arm)."""
    arm = arm_of(task, user) if user is not None else None
    return arm is None or arm.model_in_loop


def hides_verdict(example: Any, viewer: Any) -> bool:
    """Whether `viewer` must not see `example`'s verdict: they wrote it in an arm without the model in the loop.
    Its owners and validators see it as usual. Reads the writer's cached standing, no query of its own."""
    if viewer is None or example.arm_id is None or example.author_id != getattr(viewer, "pk", None):
        return False
    arm = arm_of(example.round.task, viewer)
    if arm is not None and arm.pk == example.arm_id:
        return not arm.model_in_loop
    return not Arm.objects.filter(pk=example.arm_id).values_list("model_in_loop", flat=True).first()


class NoModelInTheLoop(Conflict):
    code = "no_model_in_loop"


def check_shows_models(task: Task, user) -> None:
    """The sandbox (a verdict without storing) is a 409 for a writer whose arm has no model in the loop."""
    if not shows_models(task, user):
        raise NoModelInTheLoop(_("In this study your examples are collected without the models in the loop: the "
                                 "sandbox's verdicts are not offered to you. Submit your example: it is saved."))


def scoring_ensemble(arm: Arm | None) -> int | None:
    """The ensemble an arm's examples are scored against (None: the round's live ensemble)."""
    return arm.ensemble_id if arm is not None else None


def ensemble_for(task: Task, user_id: int) -> int | None:
    """The ensemble a person's texts are scored against on the task (a job's lookup by id: one indexed read)."""
    return (Participant.objects.filter(task=task, user_id=user_id, arm__isnull=False)
            .values_list("arm__ensemble_id", flat=True).first())


# --- the owner's arms -----------------------------------------------------------------------------


ARM_FIELDS = ("key", "name", "description", "assistant", "model_in_loop", "ensemble", "weight", "position", "active")
CONDITION_FIELDS = ("assistant", "model_in_loop", "ensemble")


def arms_of(task: Task) -> list[Arm]:
    """The task's arms with their participants and examples counted (`participant_count`, `example_count`)."""
    return list(Arm.objects.filter(task=task).select_related("ensemble__round")
                .annotate(participant_count=Count("participants", distinct=True),
                          example_count=Count("examples", distinct=True))
                .order_by("position", "id"))


def study_of(task: Task) -> Study | None:
    return Study.objects.filter(task=task).first()


def _used(arm: Arm) -> bool:
    return arm.pk is not None and (Participant.objects.filter(arm=arm).exists() or arm.examples.exists())


def _bool(data: dict, name: str) -> bool:
    value = data[name]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "on", "1", "yes", "false", "off", "0", "no", ""}:
        return value.lower() in {"true", "on", "1", "yes"}
    raise InvalidInput(_("must be true or false"), field=name)


def _whole(data: dict, name: str, low: int, high: int) -> int:
    value = data[name]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(_("must be a whole number from %(low)s to %(high)s") % {"low": low, "high": high},
                           field=name)
    return value


def _text(data: dict, name: str, limit: int, required: bool) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise InvalidInput(_("must be text"), field=name)
    value = value.strip()
    if required and not value:
        raise InvalidInput(_("is required"), field=name)
    if len(value) > limit:
        raise InvalidInput(_("is too long: at most %(limit)s characters") % {"limit": limit}, field=name)
    problem = text_problem(value) if value else None
    if problem:
        raise InvalidInput(problem, field=name)
    return value


def _ensemble(task: Task, value: Any) -> Ensemble | None:
    if value in (None, ""):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(_("must be an ensemble's id, or empty for the round's live ensemble"), field="ensemble")
    ensemble = Ensemble.objects.select_related("round").filter(pk=value).first()
    if ensemble is None or ensemble.round.task_id != task.pk:
        raise InvalidInput(_("ensemble %(id)s is not an ensemble of this task") % {"id": value}, field="ensemble")
    members = ensemble.ordered_members()
    if not members:
        raise InvalidInput(_("ensemble %(id)s has no models") % {"id": value}, field="ensemble")
    gone = [m.name for m in members if m.status not in (ModelVersion.Status.READY, ModelVersion.Status.DEPLOYED)]
    if gone:
        raise InvalidInput(_("ensemble %(id)s cannot score: %(names)s retired or failed")
                           % {"id": value, "names": ", ".join(gone)}, field="ensemble")
    return ensemble


def clean_arm(task: Task, data: dict, arm: Arm | None = None) -> dict[str, Any]:
    """The fields of `data` an owner may set, validated (InvalidInput names the field). A new arm needs `key` and
    `name`; an arm's key never changes (exports name it); an arm with participants or examples keeps its condition
    (assistant, model in the loop, ensemble): their examples must stay comparable, so add another arm instead."""
    if not isinstance(data, dict):
        raise InvalidInput(_("the body must be an object of the arm's fields"))
    unknown = sorted(set(data) - set(ARM_FIELDS))
    if unknown:
        raise InvalidInput(_("is not an arm's field; accepted: %(fields)s") % {"fields": ", ".join(ARM_FIELDS)},
                           field=unknown[0])
    out: dict[str, Any] = {}
    if arm is None:
        for name in ("key", "name"):
            if name not in data:
                raise InvalidInput(_("is required"), field=name)
    if "key" in data:
        key = _text(data, "key", 40, True).lower()
        if arm is not None and key != arm.key:
            raise InvalidInput(_("an arm's key never changes (exports and the comparison name it)"), field="key")
        if not all(c.isascii() and (c.isalnum() or c in "-_") for c in key):
            raise InvalidInput(_("use letters, digits, hyphens and underscores only"), field="key")
        if arm is None and Arm.objects.filter(task=task, key=key).exists():
            raise InvalidInput(_("this task already has an arm %(key)s") % {"key": key}, field="key")
        out["key"] = key
    if "name" in data:
        out["name"] = _text(data, "name", MAX_NAME, True)
    if "description" in data:
        out["description"] = _text(data, "description", MAX_DESCRIPTION, False)
    for name in ("assistant", "model_in_loop", "active"):
        if name in data:
            out[name] = _bool(data, name)
    if "weight" in data:
        out["weight"] = _whole(data, "weight", 0, MAX_WEIGHT)
    if "position" in data:
        out["position"] = _whole(data, "position", 0, 1000)
    if "ensemble" in data:
        out["ensemble"] = _ensemble(task, data["ensemble"])
    if arm is not None and _used(arm):
        now = {"assistant": arm.assistant, "model_in_loop": arm.model_in_loop, "ensemble": arm.ensemble_id}
        asked = {name: (value.pk if isinstance(value, Ensemble) else value)
                 for name, value in out.items() if name in CONDITION_FIELDS}
        changed = [name for name, value in asked.items() if now[name] != value]
        if changed:
            raise Conflict(_("arm %(key)s already has participants or examples: its condition (%(fields)s) is fixed "
                             "so that their examples stay comparable. Add another arm and deactivate this one.")
                           % {"key": arm.key, "fields": ", ".join(changed)}, field=changed[0])
    return out


def create_arm(task: Task, data: dict) -> Arm:
    fields = clean_arm(task, data)
    if Arm.objects.filter(task=task).count() >= MAX_ARMS:
        raise Conflict(_("a task has at most %(n)s arms") % {"n": MAX_ARMS})
    if "position" not in fields:
        fields["position"] = (Arm.objects.filter(task=task).aggregate(p=Max("position"))["p"] or 0) + 1
    try:
        with transaction.atomic():
            arm = Arm.objects.create(task=task, **fields)
    except IntegrityError as exc:
        raise InvalidInput(_("this task already has an arm %(key)s") % {"key": fields["key"]}, field="key") from exc
    _prepare(arm)
    return arm


def update_arm(arm: Arm, data: dict) -> Arm:
    fields = clean_arm(arm.task, data, arm)
    for name, value in fields.items():
        setattr(arm, name, value)
    arm.save()
    if "ensemble" in fields:
        _prepare(arm)
    return arm


def delete_arm(arm: Arm) -> None:
    """Only an arm nobody was assigned to and no example carries; otherwise deactivate it (`active: false`)."""
    if _used(arm):
        raise Conflict(_("arm %(key)s has participants or examples and is kept in the study's record; deactivate it "
                         "instead (new participants are then not assigned to it)") % {"key": arm.key})
    arm.delete()


def _prepare(arm: Arm) -> None:
    """Make an arm's own ensemble ready on the model backend now (as deploying a round's ensemble does); a model
    server that is down is no error here: scoring waits and retries."""
    if arm.ensemble_id is None:
        return
    from modelzoo.serving import ModelRef, get_backend
    from zoo.types import BackendError

    with contextlib.suppress(BackendError):
        get_backend().prepare([ModelRef.of(v) for v in arm.ensemble.ordered_members()])


def update_settings(task: Task, data: dict) -> Study:
    """The assignment's seed and mode. Fixed once anyone was assigned: the schedule must stay the one recorded."""
    if not isinstance(data, dict):
        raise InvalidInput(_("the body must be an object with seed and assignment"))
    unknown = sorted(set(data) - {"seed", "assignment"})
    if unknown:
        raise InvalidInput(_("is not a setting of the assignment; accepted: seed, assignment"), field=unknown[0])
    fields: dict[str, Any] = {}
    if "seed" in data:
        fields["seed"] = _whole(data, "seed", 0, MAX_SEED)
    if "assignment" in data:
        if data["assignment"] not in Study.Assignment.values:
            raise InvalidInput(_("must be one of: %(modes)s") % {"modes": ", ".join(Study.Assignment.values)},
                               field="assignment")
        fields["assignment"] = data["assignment"]
    with transaction.atomic():
        study, _created = Study.objects.select_for_update().get_or_create(task=task)
        changed = {k: v for k, v in fields.items() if getattr(study, k) != v}
        if changed and Participant.objects.filter(task=task, arm__isnull=False).exists():
            raise Conflict(_("participants have been assigned already: the seed and the mode are fixed so the "
                             "recorded schedule stays the one that assigned them"), field=next(iter(changed)))
        for name, value in changed.items():
            setattr(study, name, value)
        if changed:
            study.save()
    return study


def counts(task: Task) -> dict[int, int]:
    """Participants assigned to each arm (arm id -> count)."""
    return dict(Participant.objects.filter(task=task, arm__isnull=False).values_list("arm").annotate(n=Count("id")))


def mine(task: Task, user) -> dict[str, Any]:
    """What a participant may know of their condition: what their page does, never the arm's name (blind)."""
    found = standing(task, user)
    arm = found.arm
    return {
        "in_study": found.study_on or arm is not None,
        "assigned": arm is not None,
        "assistant": arm.assistant if arm is not None else True,
        "model_in_loop": arm.model_in_loop if arm is not None else True,
    }


# --- the access cache's invalidation --------------------------------------------------------------


def served_ensembles() -> list[Ensemble]:
    """The own target ensembles of the active arms of enabled studies: a model server that starts again registers
    them too (modelzoo.registration.provide_ensembles, connected in StudyConfig.ready)."""
    ids = (Arm.objects.filter(active=True, ensemble__isnull=False, task__study__enabled=True)
           .values_list("ensemble_id", flat=True))
    return list(Ensemble.objects.filter(pk__in=ids).select_related("round__task"))


__all__ = ["BLOCK_REPEATS", "Standing", "arm_of", "assign", "block", "check_assistant", "hides_verdict", "pick",
           "schedule", "standing"]
