"""Permission-matrix rows for conversations (chat.api): annotators start and write their own conversations; a
conversation is its writer's, readable by the task's owners and admins too (who may not write in it: 403), and does
not exist for anyone else (404). The annotator's conversation (`w.chat.conversation`) is on the slider scale, one
exchange long, its answer ready, rated and marked failing; `w.chat.others` is the validator's."""

from __future__ import annotations

from typing import Any


def rows(m: Any) -> list:
    """`m` is tests.site.test_permission_matrix (Row, expect, p, the outcomes); paths read `w.chat` (ChatWorld)."""
    convo = "/api/chat/conversations/{w.chat.conversation.pk}/"
    answer = "/api/chat/messages/{w.chat.answer.pk}/"
    writer_only = m.expect(m.HIDDEN, annotator=m.OK, owner=m.DENY, admin=m.DENY)
    writer_past_checks = m.expect(m.HIDDEN, annotator=m.ALLOWED, owner=m.DENY, admin=m.DENY)
    return [
        m.Row("api/tasks/<slug:slug>/chat/conversations/", "GET", m.p("/api/tasks/chat/chat/conversations/"),
              m.SIGNED),
        m.Row("api/tasks/<slug:slug>/chat/conversations/", "POST", m.p("/api/tasks/chat/chat/conversations/"),
              m.WRITERS, json=True),
        m.Row("api/chat/conversations/<int:pk>/", "GET", m.p(convo), m.AUTHOR_OR_OWNERS),
        m.Row("api/chat/conversations/<int:pk>/", "GET", m.p("/api/chat/conversations/{w.chat.others.pk}/"),
              m.expect(m.HIDDEN, only=("validator", "owner", "admin")), note="someone else's"),
        m.Row("api/chat/conversations/<int:pk>/messages/", "POST", m.p(convo + "messages/"), writer_only,
              lambda w, u: {"text": "And the capital of New Zealand?"}, json=True),
        m.Row("api/chat/conversations/<int:pk>/preferences/", "POST", m.p(convo + "preferences/"), writer_past_checks,
              lambda w, u: {"turn": 0, "winner": 0}, json=True, note="(a slider conversation: 409)"),
        m.Row("api/chat/conversations/<int:pk>/close/", "POST", m.p(convo + "close/"), writer_only, json=True),
        m.Row("api/chat/messages/<int:pk>/", "GET", m.p(answer), m.AUTHOR_OR_OWNERS),
        m.Row("api/chat/messages/<int:pk>/retry/", "POST", m.p(answer + "retry/"), writer_past_checks, json=True,
              note="(a ready answer: 409)"),
        m.Row("api/chat/messages/<int:pk>/rating/", "POST", m.p(answer + "rating/"), writer_only,
              lambda w, u: {"score": 40}, json=True),
        m.Row("api/chat/messages/<int:pk>/failure/", "POST", m.p(answer + "failure/"), writer_past_checks,
              lambda w, u: {"category": "wrong", "reason": "Canberra."}, json=True, note="(already marked: 409)"),
        m.Row("api/chat/messages/<int:pk>/failure/", "DELETE", m.p(answer + "failure/"), writer_only),
    ]
