"""The turns a target model reads when it answers (chat.jobs), kept apart from chat.services so that the job and
the services (which queue the job) do not import each other."""

from __future__ import annotations

from chat.models import Conversation, Message
from tasks.kinds.chat import ChatSettings


def history(conversation: Conversation, turn: int, settings: ChatSettings | None = None) -> list[dict[str, str]]:
    """The turns sent to a model answering `turn`: the last `history_turns` earlier exchanges, each the writer's
    message and the answer the conversation went on with (slider: the one answer; pairwise: the chosen slot, slot 0
    on a tie), then the message of `turn`. An exchange without a usable answer (it failed and the writer went on)
    is left out whole, so the turns still alternate."""
    settings = settings or conversation.round.task.typed_config.chat
    messages = list(Message.objects.filter(conversation=conversation, turn__lte=turn).order_by("turn", "slot"))
    users = {m.turn: m for m in messages if m.role == Message.Role.USER}
    chosen = {m.turn: m for m in messages
              if m.role == Message.Role.ASSISTANT and m.chosen and m.state == Message.State.READY and m.text}
    pairs = [(users[n].text, chosen[n].text) for n in sorted(users) if n < turn and n in chosen]
    out: list[dict[str, str]] = []
    for said, answered in pairs[-settings.history_turns:] if pairs else []:
        out += [{"role": "user", "content": said}, {"role": "assistant", "content": answered}]
    out.append({"role": "user", "content": users[turn].text})
    return out
