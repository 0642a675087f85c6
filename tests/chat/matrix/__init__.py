"""The chat kind's part of the site's permission matrix (tests/site/test_permission_matrix.py).

`build(world)` adds a chat task to the matrix's world (`world.chat`, a `ChatWorld`): the same personas, an open
round, the annotator's conversation with a ready answer that they rated and marked as failing, and someone else's
conversation. Each part's rows live in its own module (conversation, judging, arena, exports, pages) and use
`Row`, `expect` and the outcome constants of the matrix, passed in as `m` to avoid an import cycle:
each module defines `rows(m) -> list[Row]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chat.models import Conversation, Failure, Message, Rating
from tests.chat.matrix import arena, conversation, exports, judging, pages
from tests.factories import RoundFactory, TaskFactory

PARTS = (conversation, judging, arena, exports, pages)


@dataclass
class ChatWorld:
    task: Any
    round: Any
    conversation: Conversation  # the annotator's, one exchange, the answer rated and marked failing
    answer: Message
    failure: Failure
    others: Conversation  # the validator's own conversation (someone else's for the annotator)


def build(people: dict[str, Any]) -> ChatWorld:
    task = TaskFactory(slug="chat", kind="chat")
    task.owners.add(people["owner"])
    round_ = RoundFactory(task=task, number=1)
    convo = Conversation.objects.create(round=round_, writer=people["annotator"], scale="slider",
                                        targets=["helpful"], target_settings={"helpful": {"provider": "local"}})
    Message.objects.create(conversation=convo, turn=0, role="user", text="What is the capital of Australia?")
    answer = Message.objects.create(conversation=convo, turn=0, role="assistant", slot=0, target="helpful",
                                    text="Sydney.", state="ready", chosen=True)
    Rating.objects.create(message=answer, rater=people["annotator"], score=10)
    failure = Failure.objects.create(message=answer, author=people["annotator"], category="wrong",
                                     reason="The capital is Canberra.")
    others = Conversation.objects.create(round=round_, writer=people["validator"], scale="slider",
                                         targets=["playful"], target_settings={})
    Message.objects.create(conversation=others, turn=0, role="user", text="Tell me a joke.")
    return ChatWorld(task, round_, convo, answer, failure, others)


def rows(m: Any) -> list:
    return [row for part in PARTS for row in part.rows(m)]
