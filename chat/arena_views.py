"""The arena page (docs/chat/arena.md): GET /tasks/<slug>/arena/[?round=N].

Who may open it: whoever may see the task — the rule of the task's model leaderboard (rounds' leaderboard page):
anyone, signed in or not, on a public active task; owners and admins on a hidden one. Only a chat task has an
arena (others: 404). The page names the targets with their settings: the arena is where blinding ends.

The figures are `chat.arena.board`'s (the API answers the same); this module only words them for people.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import render
from django.urls import path

from chat import arena
from chat.arena_api import arena_round, arena_task
from tasks.access import task_for


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _ranking(ranking: dict[str, Any] | None) -> dict[str, str] | None:
    if not ranking:
        return None
    rank = str(ranking["rank"])
    if ranking["rank_low"] is not None and ranking["rank_low"] != ranking["rank_high"]:
        rank = f"{ranking['rank_low']}–{ranking['rank_high']}"
    interval = ""
    if ranking["score_low"] is not None:
        interval = f"{ranking['score_low']:.0f}–{ranking['score_high']:.0f}"
    return {"score": f"{ranking['score']:.0f}", "interval": interval, "rank": rank,
            "strength": f"{ranking['strength']:+.2f}"}


def _rating(rating: dict[str, Any] | None) -> dict[str, str] | None:
    if not rating:
        return None
    interval = f"{rating['low']:.1f}–{rating['high']:.1f}" if rating["low"] is not None else ""
    return {"mean": f"{rating['mean']:.1f}", "interval": interval, "n": rating["n"]}


def page_context(data: dict[str, Any]) -> dict[str, Any]:
    """`arena.board`'s figures as the template shows them (percentages, intervals, "5/8")."""
    categories = data["categories"]
    rows = []
    for place, model in enumerate(data["models"], start=1):
        rows.append({
            **model, "place": place if data["enough"] else None, "shown_ranking": _ranking(model["ranking"]),
            "shown_rating": _rating(model["rating"]),
            "shown_failures": [{"category": c["name"], "label": c["label"], **cell,
                                "shown_rate": _percent(cell["rate"]),
                                "shown_interval": "" if cell["low"] is None else
                                f"{_percent(cell['low'])}–{_percent(cell['high'])}"}
                               for c in categories for cell in [model["failures"][c["name"]]]],
        })
    matrix = data["matrix"]
    lines = [{"name": name, "cells": [None if cell is None else
                                      {**cell, "shown_rate": f"{100 * cell['rate']:.0f}%",
                                       "shown_count": f"{_number(cell['wins'])}/{cell['n']}"}
                                      for cell in matrix["cells"][i]]}
             for i, name in enumerate(matrix["models"])]
    return {"arena": data, "rows": rows, "matrix_models": matrix["models"], "matrix_lines": lines,
            "ranked": data["enough"]}


def arena_page(request, slug: str):
    task = arena_task(task_for(request, slug))
    round_ = arena_round(task, request.GET.get("round"))
    data = arena.board(task, round_)
    return render(request, "chat/arena.html", {"task": task, "round": round_, **page_context(data)})


urlpatterns = [
    path("tasks/<slug:slug>/arena/", arena_page, name="chat-arena"),
]
