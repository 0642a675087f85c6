"""Permission-matrix rows for judging marked answers (chat.judging_api, chat.judging_views): validators judge,
experts and owners decide, everyone sees the figures. The failure is the annotator's (`w.chat.failure`): the
annotator holds no validator role, so their refusal is the role's; judging one's own is tested in
tests/chat/test_judging.py."""

from __future__ import annotations

from typing import Any


def rows(m: Any) -> list:
    """`m` is tests.site.test_permission_matrix (Row, expect, p, the outcomes); paths read `w.chat` (ChatWorld)."""
    judgement = lambda w, u: {"verdict": "confirmed", "category": "wrong", "rating": 10}  # noqa: E731
    decision = lambda w, u: {"verdict": "confirmed", "category": "wrong", "rating": 5,  # noqa: E731
                             "reason": "Canberra is the capital."}
    return [
        m.Row("api/tasks/<slug:slug>/chat/judge/next/", "GET", m.p("/api/tasks/chat/chat/judge/next/"), m.VALIDATORS),
        m.Row("api/tasks/<slug:slug>/chat/judge/next/", "GET", m.p("/api/tasks/hidden/chat/judge/next/"),
              m.expect(m.HIDDEN), note="hidden, and not a chat task: 404 for all"),
        m.Row("api/tasks/<slug:slug>/chat/figures/", "GET", m.p("/api/tasks/chat/chat/figures/"), m.EVERYONE),
        m.Row("api/tasks/<slug:slug>/chat/disputed/", "GET", m.p("/api/tasks/chat/chat/disputed/"), m.EXPERTS),
        m.Row("api/chat/failures/<int:pk>/judgements/", "POST", m.p("/api/chat/failures/{w.chat.failure.pk}/judgements/"),
              m.VALIDATORS, judgement, json=True),
        m.Row("api/chat/failures/<int:pk>/decision/", "POST", m.p("/api/chat/failures/{w.chat.failure.pk}/decision/"),
              m.EXPERTS, decision, json=True),
        m.Row("tasks/<slug:slug>/chat/judge/", "GET", m.p("/tasks/chat/chat/judge/"), m.VALIDATORS),
        m.Row("tasks/<slug:slug>/chat/disputed/", "GET", m.p("/tasks/chat/chat/disputed/"), m.EXPERTS),
    ]
