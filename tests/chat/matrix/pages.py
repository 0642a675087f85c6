"""Permission-matrix rows for the writer's chat pages (chat.views): the conversations page is for the task's writers
(as the create page); a conversation's page is its writer's, readable by the task's owners and admins (as the API
lets them), and does not exist for anyone else (404). Another kind's task has no chat page at all."""

from __future__ import annotations

from typing import Any


def rows(m: Any) -> list:
    """`m` is tests.site.test_permission_matrix (Row, expect, p, the outcomes); paths read `w.chat` (ChatWorld)."""
    return [
        m.Row("tasks/<slug:slug>/chat/", "GET", m.p("/tasks/chat/chat/"), m.WRITERS),
        m.Row("tasks/<slug:slug>/chat/", "GET", m.p("/tasks/sentiment/chat/"), m.expect(m.HIDDEN),
              note="(not a chat task)"),
        m.Row("tasks/<slug:slug>/chat/", "GET", m.p("/tasks/hidden/chat/"), m.expect(m.HIDDEN), note="hidden"),
        m.Row("tasks/<slug:slug>/chat/<int:pk>/", "GET", m.p("/tasks/chat/chat/{w.chat.conversation.pk}/"),
              m.AUTHOR_OR_OWNERS),
        m.Row("tasks/<slug:slug>/chat/<int:pk>/", "GET", m.p("/tasks/chat/chat/{w.chat.others.pk}/"),
              m.expect(m.HIDDEN, only=("validator", "owner", "admin")), note="someone else's"),
        m.Row("tasks/<slug:slug>/chat/<int:pk>/", "GET", m.p("/tasks/sentiment/chat/{w.chat.conversation.pk}/"),
              m.expect(m.HIDDEN), note="(under another task)"),
    ]
