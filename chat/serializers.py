"""What the chat API reads and answers (chat.api). Requests are strict (an unknown field is a 400 naming it);
answers are built as plain dicts by `conversation_data` / `answer_data` (which apply the blinding rule of
chat.services.reveals_targets) and described by the serializers below, which also shape them for OpenAPI."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from chat import services
from chat.models import Conversation, Message
from tasks.kinds.chat import slot_name


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, naming each (as annotation's requests do)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["the body must be a JSON object"]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: [f"is not an accepted field; accepted: {', '.join(self.fields) or 'none'}"] for name in unknown})
        return super().to_internal_value(data)


# --- requests ---------------------------------------------------------------------------------------------------


class StartSerializer(StrictSerializer):
    """No fields: the server assigns the targets."""


class MessageRequestSerializer(StrictSerializer):
    text = serializers.JSONField(help_text="the writer's message (the task's length limit; the site's text rule)")


class PreferenceRequestSerializer(StrictSerializer):
    turn = serializers.IntegerField(min_value=0, help_text="the turn whose two answers are compared")
    winner = serializers.IntegerField(min_value=0, allow_null=True, help_text="the better slot (0 = Model A), or "
                                                                             "null for a tie")
    reason = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, default="",
                                   help_text="why (optional)")


class RatingRequestSerializer(StrictSerializer):
    score = serializers.IntegerField(min_value=0, max_value=100, help_text="0 (useless) to 100 (excellent)")


class FailureRequestSerializer(StrictSerializer):
    category = serializers.CharField(help_text="one of the task's failure categories (the conversation's "
                                               "`categories`)")
    reason = serializers.CharField(allow_blank=True, trim_whitespace=False, help_text="why it fails (required)")


# --- answers ----------------------------------------------------------------------------------------------------


class FailureMarkSerializer(serializers.Serializer):
    category = serializers.CharField()
    reason = serializers.CharField()
    consensus = serializers.CharField(help_text="unvalidated, confirmed, rejected or disputed")
    can_retract = serializers.BooleanField()


class AnswerSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    conversation = serializers.IntegerField()
    turn = serializers.IntegerField()
    slot = serializers.IntegerField()
    slot_name = serializers.CharField(help_text='"Model A", "Model B": what a writer sees of the target')
    target = serializers.CharField(allow_null=True, help_text="the target's name; null while blinded for you")
    model = serializers.CharField(allow_null=True, help_text="the provider's model name; null while blinded for you")
    state = serializers.CharField(help_text="pending, ready or failed")
    text = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True, help_text="why there is no answer, for the writer")
    chosen = serializers.BooleanField(help_text="the answer the conversation goes on with")
    attempts = serializers.IntegerField()
    rating = serializers.IntegerField(allow_null=True)
    failure = FailureMarkSerializer(allow_null=True)
    usage = serializers.DictField(help_text="tokens in and out, seconds, tries")
    created_at = serializers.DateTimeField()
    ready_at = serializers.DateTimeField(allow_null=True)
    links = serializers.DictField(child=serializers.CharField())


class UserMessageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    created_at = serializers.DateTimeField()


class PreferenceSerializer(serializers.Serializer):
    winner = serializers.IntegerField(allow_null=True, help_text="the better slot, null for a tie")
    reason = serializers.CharField(allow_blank=True)


class TurnSerializer(serializers.Serializer):
    turn = serializers.IntegerField()
    message = UserMessageSerializer(allow_null=True)
    answers = AnswerSerializer(many=True)
    preference = PreferenceSerializer(allow_null=True)


class SlotSerializer(serializers.Serializer):
    slot = serializers.IntegerField()
    name = serializers.CharField()
    target = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)


class CategorySerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()


class ConversationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    round = serializers.IntegerField()
    writer = serializers.CharField()
    scale = serializers.CharField(help_text="slider or pairwise")
    state = serializers.CharField(help_text="open or closed")
    blinded = serializers.BooleanField(help_text="whether the target names are hidden for you")
    slots = SlotSerializer(many=True)
    max_turns = serializers.IntegerField()
    max_message_chars = serializers.IntegerField()
    turns_used = serializers.IntegerField()
    can_send = serializers.BooleanField()
    waiting_for = serializers.CharField(allow_null=True, help_text="why you may not send a message now")
    categories = CategorySerializer(many=True)
    turns = TurnSerializer(many=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    links = serializers.DictField(child=serializers.CharField())


class ConversationRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    round = serializers.IntegerField()
    scale = serializers.CharField()
    state = serializers.CharField()
    turns_used = serializers.IntegerField()
    slots = SlotSerializer(many=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    link = serializers.CharField()


class SentSerializer(serializers.Serializer):
    message = UserMessageSerializer()
    answers = AnswerSerializer(many=True)
    conversation = serializers.CharField(help_text="the conversation's address")


# --- building answers -------------------------------------------------------------------------------------------


def answer_links(pk: int) -> dict[str, str]:
    return {name: reverse(f"api-chat-message-{name}", args=[pk]) for name in ("self", "retry", "rating", "failure")}


def answer_data(answer: Message, reveal: bool, writer_id: int | None = None) -> dict[str, Any]:
    writer_id = writer_id if writer_id is not None else answer.conversation.writer_id
    rating = next((r.score for r in answer.ratings.all() if r.rater_id == writer_id), None)
    failure = getattr(answer, "failure", None)  # none: the reverse one-to-one raises AttributeError
    usage = {k: v for k, v in (answer.usage or {}).items() if k != "queued_at"}
    return {
        "id": answer.pk, "conversation": answer.conversation_id, "turn": answer.turn, "slot": answer.slot or 0,
        "slot_name": slot_name(answer.slot or 0), "target": answer.target if reveal else None,
        "model": (answer.model or None) if reveal else None, "state": answer.state, "text": answer.text,
        "error": answer.error, "chosen": answer.chosen, "attempts": answer.attempts, "rating": rating,
        "failure": None if failure is None else {
            "category": failure.category, "reason": failure.reason, "consensus": failure.consensus,
            "can_retract": failure.consensus == failure.Consensus.UNVALIDATED and not failure.judgements.exists()},
        "usage": usage, "created_at": answer.created_at, "ready_at": answer.ready_at, "links": answer_links(answer.pk),
    }


def slots_data(conversation: Conversation, reveal: bool) -> list[dict[str, Any]]:
    snapshots = conversation.target_settings or {}
    return [{"slot": slot, "name": slot_name(slot), "target": name if reveal else None,
             "model": ((snapshots.get(name) or {}).get("model") or None) if reveal else None}
            for slot, name in enumerate(conversation.targets or [])]


def conversation_links(pk: int) -> dict[str, str]:
    return {"self": reverse("api-chat-conversation", args=[pk]),
            "messages": reverse("api-chat-conversation-messages", args=[pk]),
            "preferences": reverse("api-chat-conversation-preferences", args=[pk]),
            "close": reverse("api-chat-conversation-close", args=[pk])}


def conversation_data(conversation: Conversation, user) -> dict[str, Any]:
    reveal = services.reveals_targets(user, conversation)
    chat = conversation.round.task.typed_config.chat
    exchanges = services.turns(conversation)
    refusal = services.why_not_send(conversation, chat)
    return {
        "id": conversation.pk, "task": conversation.round.task.slug, "round": conversation.round.number,
        "writer": conversation.writer.username, "scale": conversation.scale, "state": conversation.state,
        "blinded": not reveal, "slots": slots_data(conversation, reveal), "max_turns": chat.max_turns,
        "max_message_chars": chat.max_message_chars, "turns_used": len(exchanges),
        "can_send": refusal is None and conversation.writer_id == user.pk, "waiting_for": refusal,
        "categories": [{"name": name, "description": text} for name, text in chat.categories()],
        "turns": [{
            "turn": t.number,
            "message": None if t.user is None else {"id": t.user.pk, "text": t.user.text,
                                                    "created_at": t.user.created_at},
            "answers": [answer_data(a, reveal, conversation.writer_id) for a in t.answers],
            "preference": None if t.preference is None else {"winner": t.preference.winner_slot,
                                                             "reason": t.preference.reason},
        } for t in exchanges],
        "created_at": conversation.created_at, "updated_at": conversation.updated_at,
        "links": conversation_links(conversation.pk),
    }


def conversation_row(conversation: Conversation, user) -> dict[str, Any]:
    reveal = services.reveals_targets(user, conversation)
    return {"id": conversation.pk, "task": conversation.round.task.slug, "round": conversation.round.number,
            "scale": conversation.scale, "state": conversation.state,
            "turns_used": getattr(conversation, "turns_used", 0), "slots": slots_data(conversation, reveal),
            "created_at": conversation.created_at, "updated_at": conversation.updated_at,
            "link": reverse("api-chat-conversation", args=[conversation.pk])}
