"""The demo chat task's recorded conversations: `manage.py load_demo` (tasks) sends `demo_task_loaded` for each demo
task; for a chat task whose JSON lists "conversations" (tasks/demo/chat.json), this stores them in its open round,
so that a fresh `make run` has answers to judge, an arena with a few preferences and a round to download before
anyone has chatted.

They are recordings, not inventions: each answer is what the packaged SmolLM2-135M-Instruct said through
`Provider.converse` under the target's settings (system prompt, temperature, max_tokens; seed 1), as the JSON's
"recorded" note says; the writer's picks and marks were written by hand. Their messages carry `usage.recorded`, so
they can be told from live ones. Idempotent: a task that has any conversation already is left alone.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from chat.models import Conversation, Failure, Message, Preference

SETTING_KEYS = ("system_prompt", "temperature", "max_tokens", "seed")


def target_settings(task, names: list[str], recorded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target's settings as the recording was made: the task's, with the recording's model name, seed and
    max_tokens (the recordings were made at 96 tokens; the demo's live targets answer at most 64, for latency)."""
    chat = task.typed_config.chat
    out = {}
    for name in names:
        target = chat.target(name)
        out[name] = {"provider": target.provider.provider, **{key: getattr(target, key) for key in SETTING_KEYS},
                     "model": recorded.get("model", ""), "seed": recorded.get("seed", target.seed),
                     "max_tokens": recorded.get("max_tokens", target.max_tokens)}
    return out


def load_conversations(sender, task, data: dict[str, Any], **kwargs) -> int:
    """Store the recorded conversations of a demo chat task in its open round; returns how many were stored."""
    recorded = data.get("conversations") or []
    round_ = task.current_round
    if not task.kind_impl.generative or not recorded or round_ is None:
        return 0
    if Conversation.objects.filter(round__task=task).exists():
        return 0
    recorded_with = data.get("recorded") or {}
    users = {u.username: u for u in User.objects.filter(username__in={c["writer"] for c in recorded})}
    stored = 0
    with transaction.atomic():
        for spec in recorded:
            writer = users.get(spec["writer"])
            if writer is None:
                continue
            store(task, round_, writer, spec, recorded_with)
            stored += 1
    return stored


def store(task, round_, writer: User, spec: dict[str, Any], recorded: dict[str, Any]) -> Conversation:
    chat, model = task.typed_config.chat, recorded.get("model", "")
    convo = Conversation.objects.create(round=round_, writer=writer, scale=chat.scale, blinded=chat.blinded,
                                        targets=spec["targets"], state=Conversation.State.CLOSED,
                                        target_settings=target_settings(task, spec["targets"], recorded))
    now = timezone.now()
    for number, turn in enumerate(spec["turns"]):
        Message.objects.create(conversation=convo, turn=number, role=Message.Role.USER, text=turn["user"])
        winner = turn.get("winner")
        answers = []
        for slot, text in enumerate(turn["answers"]):
            answers.append(Message.objects.create(
                conversation=convo, turn=number, role=Message.Role.ASSISTANT, slot=slot, target=spec["targets"][slot],
                text=text, state=Message.State.READY, chosen=slot == (winner if winner is not None else 0),
                model=model, usage={"recorded": "demo"}, ready_at=now, attempts=1))
        if chat.scale == "pairwise":
            Preference.objects.create(conversation=convo, turn=number, rater=writer, winner_slot=winner,
                                      reason=turn.get("reason", ""))
        for mark in turn.get("failures", []):
            Failure.objects.create(message=answers[mark["slot"]], author=writer, category=mark["category"],
                                   reason=mark["reason"])
    return convo
