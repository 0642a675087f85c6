"""Permission-matrix rows for this part of the chat kind (gathered by tests/chat/matrix/__init__.py)."""

from __future__ import annotations

from typing import Any


def rows(m: Any) -> list:
    """`m` is tests.site.test_permission_matrix (Row, expect, p, the outcomes); paths read `w.chat` (ChatWorld)."""
    return []
