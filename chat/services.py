"""The rules of a chat conversation (docs/chat/conversations.md). Views parse and answer; everything a writer may or
may not do, and what is saved, is decided here.

Flow. `start` assigns the targets (chat.assignment) and records them. `send` stores the writer's message and one
pending answer per slot in one transaction, before any model is called, and then queues one generation job per
answer (chat.jobs: a thread of the web process in the embedded default, a Celery worker with a broker), so the
request answers at once and two slots generate side by side. The page polls each answer. The job turns it ready or
failed (chat.jobs says how); a failed answer can be asked for again (`retry`); an answer whose job was lost is
queued again by the sweep.

The writer's judgements: a rating (0-100) of each answer on the slider scale, a pairwise choice (the better slot, or
a tie) at each turn on the pairwise scale, and marks of failing answers (a category of the task's taxonomy and the
reason), which validators judge later (chat.judging_api).

Blinding (`reveals_targets`): writers see slot names ("Model A") while the conversation is blinded. The target
names, and the model names (which give them away), are shown to the task's managers and experts, to the writer
when the task does not blind, and to everyone who may see the conversation once its round is closed: the round's
data is then collected, so knowing no longer changes how it is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from chat import assignment, jobs
from chat.history import history  # noqa: F401 - the turns a model reads, kept importable from here
from chat.models import Conversation, Failure, Message, Preference, Rating
from dynabench_site.errors import Conflict, InvalidInput
from tasks import guidelines, roles
from tasks.access import open_round
from tasks.kinds.base import clean_text
from tasks.kinds.chat import ChatConfig, ChatSettings
from tasks.models import Round, Task

MAX_REASON_CHARS = 2000


# --- reading ----------------------------------------------------------------------------------------------------


def chat_config(task: Task) -> ChatConfig:
    if task.kind != "chat":
        raise Conflict(f"task {task.slug!r} is not a chat task (its kind is {task.kind!r})", field="task")
    return task.typed_config


def settings_of(conversation: Conversation) -> ChatSettings:
    return conversation.round.task.typed_config.chat


def conversations(user, task: Task | None = None):
    """The user's own conversations, newest first (with what the list shows)."""
    rows = Conversation.objects.filter(writer=user).select_related("round__task").order_by("-created_at", "-id")
    return rows.filter(round__task=task) if task is not None else rows


def with_messages(queryset):
    """Conversations with their messages, ratings, marks and preferences read in a few queries."""
    return queryset.select_related("round__task", "writer").prefetch_related(
        Prefetch("messages", queryset=Message.objects.select_related("failure").prefetch_related("ratings")),
        "preferences",
    )


def may_see(user, conversation: Conversation) -> bool:
    """Its writer, and the task's managers (owners, admins). Anyone else: it does not exist for them (404)."""
    return conversation.writer_id == user.pk or roles.can_manage(user, conversation.round.task)


def reveals_targets(user, conversation: Conversation) -> bool:
    """Whether `user` may read the target and model names of `conversation` (the module's docstring: blinding)."""
    if not conversation.blinded or conversation.round.status == Round.Status.CLOSED:
        return True
    task = conversation.round.task
    if roles.can_manage(user, task):
        return True
    return conversation.writer_id != user.pk and roles.has_role(user, roles.EXPERT, task)


@dataclass(frozen=True)
class Turn:
    number: int
    user: Message | None
    answers: list[Message]
    preference: Preference | None


def turns(conversation: Conversation) -> list[Turn]:
    """The conversation as exchanges, in order (uses prefetched messages and preferences when there are)."""
    messages = sorted(conversation.messages.all(), key=lambda m: (m.turn, m.role != Message.Role.USER, m.slot or 0))
    preferences = {p.turn: p for p in conversation.preferences.all() if p.rater_id == conversation.writer_id}
    numbers = sorted({m.turn for m in messages})
    return [Turn(n, next((m for m in messages if m.turn == n and m.role == Message.Role.USER), None),
                 [m for m in messages if m.turn == n and m.role == Message.Role.ASSISTANT], preferences.get(n))
            for n in numbers]


def next_turn(conversation: Conversation) -> int:
    last = conversation.messages.filter(role=Message.Role.USER).order_by("-turn").values_list("turn", flat=True).first()
    return 0 if last is None else last + 1


def why_not_send(conversation: Conversation, settings: ChatSettings | None = None) -> str | None:
    """Why the writer may not send a message now, in words (None: they may). The one rule for the page and the API."""
    settings = settings or settings_of(conversation)
    if conversation.state == Conversation.State.CLOSED:
        return "this conversation is finished; start a new one"
    if conversation.round.status != Round.Status.OPEN:
        return "this conversation's round is closed; start a new conversation in the open round"
    exchanges = turns(conversation)
    if len(exchanges) >= settings.max_turns:
        return (f"this conversation has reached its limit of {settings.max_turns} messages; finish it and start a "
                "new one")
    if not exchanges:
        return None
    last = exchanges[-1]
    if any(a.state == Message.State.PENDING for a in last.answers):
        return "the models are still answering your last message; wait for their answers"
    if (conversation.scale == Conversation.Scale.PAIRWISE and last.preference is None
            and any(a.state == Message.State.READY for a in last.answers)):
        return "choose the better answer to your last message (or call it a tie) before you go on"
    return None


# --- checks -----------------------------------------------------------------------------------------------------


def check_writer(user, task: Task) -> None:
    """May `user` write on this chat task now: the annotator role on it, and its guidelines read."""
    if not roles.has_role(user, roles.ANNOTATOR, task):
        from dynabench_site.errors import NotPermitted
        from tasks.access import refusal

        raise NotPermitted(refusal(roles.ANNOTATOR))
    guidelines.check_acknowledged(user, task)


def check_own_open(user, conversation: Conversation) -> None:
    """Writing to a conversation: its writer only, still a writer on the task, the conversation open and its round
    too."""
    check_writer(user, conversation.round.task)
    if conversation.state == Conversation.State.CLOSED:
        raise Conflict("this conversation is finished; start a new one", field="conversation")
    if conversation.round.status != Round.Status.OPEN:
        raise Conflict("this conversation's round is closed; nothing more can be recorded in it",
                       field="conversation")


def _answer_of(user, message: Message) -> Message:
    if message.role != Message.Role.ASSISTANT:
        raise Conflict("this is your own message; only the models' answers can be rated or marked", field="message")
    check_own_open(user, message.conversation)
    return message


# --- writing ----------------------------------------------------------------------------------------------------


def lock(conversation_id: int) -> None:
    """Begin a transaction's writes on a conversation by touching it: the row is locked until the commit (PostgreSQL),
    and the database file's write lock is taken before anything is read (SQLite, the embedded default: a transaction
    that read first and then writes while another wrote meanwhile fails at once with "database is locked", where
    one that writes first waits its turn). Concurrent requests on one conversation are served one after the other."""
    Conversation.objects.filter(pk=conversation_id).update(updated_at=timezone.now())



def start(user, task: Task, rng=None) -> Conversation:
    """A new conversation of `user` on `task`'s open round, with its targets assigned and recorded."""
    config = chat_config(task)
    check_writer(user, task)
    round_ = open_round(task)
    if round_ is None:
        raise Conflict(f"task {task.slug!r} has no open round; conversations are closed", field="round")
    settings = config.chat
    names = assignment.choose_targets(user, task, settings, rng=rng)
    return Conversation.objects.create(round=round_, writer=user, scale=settings.scale, blinded=settings.blinded,
                                       targets=names, target_settings=assignment.snapshots(settings, names))


def send(user, conversation: Conversation, raw: Any) -> tuple[Message, list[Message]]:
    """Store the writer's message and one pending answer per slot, then queue their generation (after the commit).
    Nothing is called before both are saved: a model that is down, slow or lost never loses the message."""

    check_own_open(user, conversation)
    task = conversation.round.task
    config = task.typed_config
    text = task.kind_impl.clean_message(config, raw)
    with transaction.atomic():
        lock(conversation.pk)
        locked = Conversation.objects.select_related("round__task").get(pk=conversation.pk)
        refusal = why_not_send(locked, config.chat)
        if refusal is not None:
            raise Conflict(refusal, field="conversation")
        turn = next_turn(locked)
        message = Message.objects.create(conversation=locked, turn=turn, role=Message.Role.USER, text=text)
        queued = {"queued_at": timezone.now().isoformat()}
        answers = [Message.objects.create(conversation=locked, turn=turn, role=Message.Role.ASSISTANT, slot=slot,
                                          target=name, state=Message.State.PENDING, usage=dict(queued),
                                          # slider: the one answer is what the conversation goes on with
                                          chosen=locked.scale == Conversation.Scale.SLIDER)
                   for slot, name in enumerate(locked.targets)]
        for answer in answers:
            jobs.enqueue_answer(answer.pk)
    return message, answers


def retry(user, answer: Message) -> Message:
    """Ask again for a failed answer: pending again, with a fresh set of tries, and queued."""

    _answer_of(user, answer)
    if answer.state == Message.State.PENDING:
        raise Conflict("this answer is still being written; wait for it", field="message")
    if answer.state == Message.State.READY:
        raise Conflict("this answer is ready; only a failed answer can be asked for again", field="message")
    with transaction.atomic():
        again = Message.objects.filter(pk=answer.pk, state=Message.State.FAILED).update(
            state=Message.State.PENDING, error="", attempts=0, ready_at=None,
            usage={"queued_at": timezone.now().isoformat(), "retried": (answer.usage or {}).get("retried", 0) + 1})
        if again:
            jobs.enqueue_answer(answer.pk)
    answer.refresh_from_db()
    return answer


def _ready(answer: Message, what: str) -> None:
    if answer.state != Message.State.READY:
        raise Conflict(f"this answer is {answer.get_state_display().lower()}; only a ready answer can be {what}",
                       field="message")


def rate(user, answer: Message, score: int) -> Rating:
    """The writer's rating (0-100) of a ready answer; rating again replaces it."""
    _answer_of(user, answer)
    _ready(answer, "rated")
    if isinstance(score, bool) or not isinstance(score, int) or not 0 <= score <= 100:
        raise InvalidInput("must be a whole number from 0 to 100", field="score")
    rating, _ = Rating.objects.update_or_create(message=answer, rater=user, defaults={"score": score})
    return rating


def prefer(user, conversation: Conversation, turn: Any, winner: Any, reason: Any = "") -> Preference:
    """The writer's choice between the two answers of a turn (`winner` a slot, or None for a tie). The chosen answer
    (slot 0 on a tie) is what the conversation goes on with; the choice can change until the next message."""
    check_own_open(user, conversation)
    if conversation.scale != Conversation.Scale.PAIRWISE:
        raise Conflict("this conversation rates each answer on a slider; there is no pair to choose from",
                       field="conversation")
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise InvalidInput("must be the number of a turn of this conversation", field="turn")
    reason = _optional_text("reason", reason)
    exchanges = {t.number: t for t in turns(conversation)}
    if turn not in exchanges:
        raise InvalidInput(f"this conversation has no turn {turn}", field="turn")
    if turn != max(exchanges):
        raise Conflict("the conversation went on after this turn with the answer you chose; only the last turn's "
                       "choice can change", field="turn")
    answers = {a.slot: a for a in exchanges[turn].answers}
    if winner is not None:
        if isinstance(winner, bool) or not isinstance(winner, int) or winner not in answers:
            raise InvalidInput(f"must be a slot of this turn ({', '.join(str(s) for s in sorted(answers))}) or null "
                               "for a tie", field="winner")
        _ready(answers[winner], "chosen")
    elif any(a.state != Message.State.READY for a in answers.values()):
        raise Conflict("a tie needs both answers; one of them is not ready", field="winner")
    chosen = 0 if winner is None else winner
    with transaction.atomic():
        lock(conversation.pk)
        preference, _ = Preference.objects.update_or_create(conversation=conversation, turn=turn, rater=user,
                                                            defaults={"winner_slot": winner, "reason": reason})
        Message.objects.filter(conversation=conversation, turn=turn, role=Message.Role.ASSISTANT).update(chosen=False)
        Message.objects.filter(conversation=conversation, turn=turn, role=Message.Role.ASSISTANT,
                               slot=chosen).update(chosen=True)
    return preference


def mark_failure(user, answer: Message, category: Any, reason: Any) -> Failure:
    """Mark a ready answer as failing: a category of the task's taxonomy and the reason (required). One per answer."""
    _answer_of(user, answer)
    _ready(answer, "marked as failing")
    task = answer.conversation.round.task
    config = task.typed_config
    category = task.kind_impl.clean_target(config, {}, category)
    reason = clean_text("reason", reason, MAX_REASON_CHARS)
    with transaction.atomic():
        lock(answer.conversation_id)
        if Failure.objects.filter(message=answer).exists():
            raise Conflict("this answer is already marked as failing; retract that mark first to change it",
                           field="message")
        return Failure.objects.create(message=answer, author=user, category=category, reason=reason)


def retract_failure(user, answer: Message) -> None:
    """The writer takes back their mark, while no validator has judged it."""
    _answer_of(user, answer)
    failure = Failure.objects.filter(message=answer).first()
    if failure is None:
        raise Conflict("this answer is not marked as failing", field="message")
    if failure.consensus != Failure.Consensus.UNVALIDATED or failure.judgements.exists():
        raise Conflict("validators have judged this mark already; it can no longer be retracted", field="message")
    failure.delete()


def close(user, conversation: Conversation) -> Conversation:
    """Finish the conversation (answers still being written are kept when they come)."""
    check_writer(user, conversation.round.task)
    if conversation.state != Conversation.State.CLOSED:
        Conversation.objects.filter(pk=conversation.pk).update(state=Conversation.State.CLOSED,
                                                               updated_at=timezone.now())
        conversation.refresh_from_db()
    return conversation


def _optional_text(field: str, value: Any) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    return clean_text(field, value, MAX_REASON_CHARS)


# --- what the model reads ---------------------------------------------------------------------------------------
