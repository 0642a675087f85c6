"""Permission-matrix rows for a chat round's downloads (chat.exports_api): researchers, the task's owners and admins,
as for a researchers' snapshot of the classification datasets (exports.access.can_download); signed out: log in."""

from __future__ import annotations

from typing import Any

ROUTE = "api/tasks/<slug:slug>/rounds/<str:number>/chat/<str:dataset>/"


def rows(m: Any) -> list:
    """`m` is tests.site.test_permission_matrix (Row, expect, p, the outcomes); paths read `w.chat` (ChatWorld)."""
    downloads = [m.Row(ROUTE, "GET", m.p(f"/api/tasks/chat/rounds/1/chat/{name}/"), m.RESEARCHERS, note=f"({name})")
                 for name in ("conversations", "preferences", "red-team", "card", "bundle")]
    return [
        *downloads,
        m.Row(ROUTE, "GET", m.p("/api/tasks/chat/rounds/1/chat/ratings/"),
              m.expect(m.DENY, researcher=m.BAD, owner=m.BAD, admin=m.BAD), note="(an unknown dataset: 400)"),
        m.Row(ROUTE, "GET", m.p("/api/tasks/sentiment/rounds/1/chat/conversations/"),
              m.expect(m.DENY, researcher=m.BAD, owner=m.BAD, admin=m.BAD), note="(not a chat task: 400)"),
    ]
