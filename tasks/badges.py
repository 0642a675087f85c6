"""Badges people hold on a task, for the leaderboards that show them.

Badges are derived from examples, votes and gold answers by the crowd app (`crowd.badges`), which sits
above every app that shows a leaderboard. So, as with `tasks.figures`, the crowd app provides them here
when it is ready (`CrowdConfig.ready`) and the leaderboards ask this module. Without a provider nobody
holds a badge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

BadgeRow = dict[str, str]  # {"code", "name", "description"}
_provider: Callable[[Any], dict[str, list[BadgeRow]]] | None = None


def provide(badges_by_username: Callable[[Any], dict[str, list[BadgeRow]]]) -> None:
    global _provider
    _provider = badges_by_username


def by_username(task) -> dict[str, list[BadgeRow]]:
    """username -> the badges that person holds on `task`."""
    return _provider(task) if _provider else {}


def add_to(rows: list[dict[str, Any]], task) -> list[dict[str, Any]]:
    """Leaderboard rows (each with a `username`) with their `badges` added."""
    held = by_username(task)
    for row in rows:
        row["badges"] = held.get(row["username"], [])
    return rows
