"""Permission-matrix rows for the arena (chat.arena_views, chat.arena_api): like the task's model leaderboard,
anyone who may see the task may see its arena, signed in or not (the chat task of the matrix is public). A task
of another kind has no arena (404 for everyone), and a round the task does not have is 404 too."""

from __future__ import annotations

from typing import Any


def rows(m: Any) -> list:
    """`m` is tests.site.test_permission_matrix (Row, expect, p, the outcomes); paths read `w.chat` (ChatWorld)."""
    nobody = m.expect(m.HIDDEN, anonymous=m.HIDDEN)
    return [
        m.Row("tasks/<slug:slug>/arena/", "GET", m.p("/tasks/chat/arena/"), m.EVERYONE),
        m.Row("tasks/<slug:slug>/arena/", "GET", m.p("/tasks/chat/arena/?round=1"), m.EVERYONE, note="one round"),
        m.Row("tasks/<slug:slug>/arena/", "GET", m.p("/tasks/sentiment/arena/"), nobody, note="not a chat task"),
        m.Row("api/tasks/<slug:slug>/arena/", "GET", m.p("/api/tasks/chat/arena/"), m.EVERYONE),
        m.Row("api/tasks/<slug:slug>/arena/", "GET", m.p("/api/tasks/chat/arena/?round=9"), nobody,
              note="no such round"),
        m.Row("api/tasks/<slug:slug>/arena/", "GET", m.p("/api/tasks/sentiment/arena/"), nobody,
              note="not a chat task"),
    ]
