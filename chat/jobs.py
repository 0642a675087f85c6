"""The chat kind's jobs: a target writes its answer (`chat.generate_answer`), and the sweep that queues again an
answer whose job was lost (`chat.sweep_pending`).

One job per answer. In the embedded default (no broker) each runs in a thread of the web process
(`background_thread`, as the writing assistant's job): the request that sent the message has answered already, the
two answers of a pairwise turn are written side by side, and the local model stays loaded in the process. With a
broker they go to the Celery workers (two answers side by side when the worker runs two processes or more).

What the job does (`run`): it claims the pending answer, builds the history (chat.history.history), calls the
target's provider (`Provider.converse`) under the conversation's recorded settings, and stores the answer as plain
text under the site's text rule, with the tokens, the seconds and the provider's name for the model. A provider that
is down, slow or over its quota (a retryable `ProviderError`) is tried again, CHAT_GENERATION_ATTEMPTS calls in all,
CHAT_RETRY_BACKOFF_SECONDS apart and doubling (an HTTP provider also retries each call twice itself); then the answer
fails with a sentence for the writer (the error's own message, which names the endpoint, never its address). A
misconfigured target or an unusable answer fails at once. Whatever else goes wrong, the answer ends failed, never
pending for ever (the page would wait). The writer may ask again (POST /api/chat/messages/<id>/retry/).

Lost jobs. A job that never ran (the broker was down, the worker died, the web process restarted mid-thread) leaves
its answer pending; the writer's message is saved either way. `sweep_pending` (Celery beat every minute: the line
is in docs/chat/conversations.md) queues again every answer queued longer ago than CHAT_PENDING_GRACE_SECONDS.
Queueing twice is harmless: the answer is written by whichever job finishes first, the other's write is refused
(the update is conditional on the answer still being pending).
"""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from chat import assignment
from chat.history import history
from chat.models import Message
from dynabench_site.jobs import dispatch
from dynabench_site.text import text_problem
from modelzoo.llm import provider_for
from tasks.kinds.chat import slot_name
from zoo.llm.base import ProviderError
from zoo.llm.prompts import plain_text

log = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 8000
NOT_QUEUED = "{slot} could not start (the job queue does not answer); your message is saved. Ask again in a moment."
UNAVAILABLE = "{slot} could not answer: {reason}. Your message is saved; ask again in a moment."
CONFIG = "{slot} is not set up correctly ({reason}); the task's owners can fix it. Your message is saved."
UNUSABLE = "{slot} answered nothing usable this time. Ask again."
CRASHED = "{slot} failed this time. Your message is saved; ask again."


def attempts_allowed() -> int:
    return max(1, int(settings.CHAT_GENERATION_ATTEMPTS))


def backoff_seconds(attempt: int) -> float:
    """Wait before the call after `attempt` (1, 2, …) failed: CHAT_RETRY_BACKOFF_SECONDS, doubling, at most 30 s."""
    return min(float(settings.CHAT_RETRY_BACKOFF_SECONDS) * 2 ** (attempt - 1), 30.0)


def grace_seconds() -> float:
    """How long an answer may stay pending before the sweep queues it again: longer than the slowest answer can
    take (each call's timeout, times its tries, plus the backoff), so a running job is rarely queued twice."""
    return float(settings.CHAT_PENDING_GRACE_SECONDS)


@shared_task(name="chat.generate_answer", acks_late=True, ignore_result=True)
def generate_answer(message_id: int) -> str:
    """Write one pending answer (idempotent: a ready or failed answer is left as it is)."""
    return run(message_id)


# The embedded default runs it in a thread of the web process (dynabench_site.jobs): the request answers at once.
generate_answer.background_thread = True


def enqueue_answer(message_id: int) -> None:
    """Queue the answer's job once the current transaction commits; a queue that does not answer fails the answer
    at once, with the reason (the writer asks again)."""
    dispatch(generate_answer, message_id, on_failure=lambda exc: not_queued(message_id))


def not_queued(message_id: int) -> None:
    answer = Message.objects.filter(pk=message_id).first()
    if answer is not None:
        _fail(message_id, NOT_QUEUED.format(slot=slot_name(answer.slot or 0)))


def run(message_id: int) -> str:
    try:
        return _run(message_id)
    except Exception:
        log.exception("chat answer %s: the job failed", message_id)
        answer = Message.objects.filter(pk=message_id).first()
        _fail(message_id, CRASHED.format(slot=slot_name(answer.slot or 0) if answer else "The model"))
        return "failed"


def _claim(message_id: int) -> Message | None:
    """The pending answer, with its `queued_at` renewed (so the sweep leaves a running job alone); None if it is not
    pending any more."""
    answer = (Message.objects.select_related("conversation__round__task")
              .filter(pk=message_id, role=Message.Role.ASSISTANT, state=Message.State.PENDING).first())
    if answer is None:
        return None
    usage = {**(answer.usage or {}), "queued_at": timezone.now().isoformat()}
    if not Message.objects.filter(pk=message_id, state=Message.State.PENDING).update(usage=usage):
        return None
    answer.usage = usage
    return answer


def _run(message_id: int) -> str:
    answer = _claim(message_id)
    if answer is None:
        return "skipped"
    started = time.perf_counter()
    conversation = answer.conversation
    chat_settings = conversation.round.task.typed_config.chat
    name = slot_name(answer.slot or 0)
    queued_s = (timezone.now() - answer.created_at).total_seconds()
    try:
        target = assignment.target_of(conversation, answer.target, chat_settings)
        turns = history(conversation, answer.turn, chat_settings)
        provider = provider_for(target.provider)
    except ProviderError as exc:
        _fail(message_id, CONFIG.format(slot=name, reason=exc.message))
        return "failed"
    tries = 0
    while True:
        tries += 1
        Message.objects.filter(pk=message_id, state=Message.State.PENDING).update(attempts=tries)
        try:
            generation = provider.converse(turns, system=target.system_prompt, max_tokens=target.max_tokens,
                                           temperature=target.temperature, seed=target.seed)
            break
        except ProviderError as exc:
            log.warning("chat answer %s (%s, try %s): %s (%s)", message_id, answer.target, tries, exc.detail, exc.kind)
            if exc.retryable and tries < attempts_allowed():
                time.sleep(backoff_seconds(tries))
                continue
            template = UNAVAILABLE if exc.retryable else CONFIG if exc.kind == "config" else UNAVAILABLE
            _fail(message_id, template.format(slot=name, reason=_sentence(exc.message)),
                  usage={**_counters(answer), "tries": tries, "job_s": round(time.perf_counter() - started, 3)})
            return "failed"
    text = usable(generation.texts[0] if generation.texts else "")
    usage: dict[str, Any] = {**_counters(answer), **generation.usage.as_dict(), "tries": tries, "queued_s": round(queued_s, 3),
                             "job_s": round(time.perf_counter() - started, 3)}
    model = plain_text(generation.model)[:200]
    if not text:
        _fail(message_id, UNUSABLE.format(slot=name), usage=usage, model=model)
        return "failed"
    written = Message.objects.filter(pk=message_id, state=Message.State.PENDING).update(
        state=Message.State.READY, text=text, error="", model=model, usage=usage, ready_at=timezone.now())
    return "ready" if written else "skipped"


def _counters(answer: Message) -> dict[str, int]:
    """How often the writer asked again (`retried`) and the sweep queued it again (`requeued`): kept in the usage."""
    return {key: answer.usage[key] for key in ("retried", "requeued") if key in (answer.usage or {})}


def usable(text: str) -> str:
    """A model's answer as it may be stored and shown: plain text (no markup, control or format characters), at most
    MAX_ANSWER_CHARS, passing the site's text rule; "" when nothing usable is left."""
    text = "\n".join(re.sub(r"[ ]{2,}", " ", line).strip() for line in plain_text(text).splitlines()).strip()
    if len(text) > MAX_ANSWER_CHARS:
        text = text[:MAX_ANSWER_CHARS].rsplit(" ", 1)[0] + "…"
    if not text or text_problem(text) is not None:
        return ""
    return text


def _sentence(message: str) -> str:
    return plain_text(message).strip().rstrip(".")


def _fail(message_id: int, error: str, **fields: Any) -> None:
    Message.objects.filter(pk=message_id, state=Message.State.PENDING).update(
        state=Message.State.FAILED, error=plain_text(error)[:2000], ready_at=timezone.now(), **fields)


# --- the sweep --------------------------------------------------------------------------------------------------


def _queued_at(answer: Message) -> datetime:
    raw = (answer.usage or {}).get("queued_at")
    try:
        return datetime.fromisoformat(raw) if raw else answer.created_at
    except (TypeError, ValueError):
        return answer.created_at


@shared_task(name="chat.sweep_pending", ignore_result=True)
def sweep_pending(limit: int = 500) -> int:
    """Queue again every answer pending for longer than the grace period (its job was lost). Idempotent: an answer
    is renewed (`queued_at`) as it is queued, so the next sweep leaves it for another grace period."""
    cutoff = timezone.now() - timedelta(seconds=grace_seconds())
    stale = [a for a in Message.objects.filter(role=Message.Role.ASSISTANT, state=Message.State.PENDING,
                                               created_at__lt=cutoff).order_by("created_at")[:limit]
             if _queued_at(a) < cutoff]
    count = 0
    for answer in stale:
        usage = {**(answer.usage or {}), "queued_at": timezone.now().isoformat(),
                 "requeued": (answer.usage or {}).get("requeued", 0) + 1}
        if Message.objects.filter(pk=answer.pk, state=Message.State.PENDING, usage=answer.usage).update(usage=usage):
            enqueue_answer(answer.pk)
            count += 1
    if count:
        log.info("chat sweep: %s answer(s) whose job was lost queued again", count)
    return count
