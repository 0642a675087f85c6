from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Count, Q


def rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def _counts() -> dict[str, Count]:
    """The per-state counts behind every figure (prefixed: aggregate names may not shadow fields)."""
    return {
        "n_collected": Count("id"),
        "n_fooled": Count("id", filter=Q(fooled=True)),
        "n_verified": Count("id", filter=Q(consensus="verified")),
        "n_verified_fooled": Count("id", filter=Q(fooled=True, consensus="verified")),
        "n_rejected": Count("id", filter=Q(consensus="rejected")),
        "n_flagged": Count("id", filter=Q(consensus="flagged")),
        "n_disputed": Count("id", filter=Q(consensus="disputed")),
    }


def _with_rates(row: dict[str, Any]) -> dict[str, Any]:
    raw = {key.removeprefix("n_"): value for key, value in row.items()}
    decided = raw["verified"] + raw["rejected"] + raw["flagged"]
    return {
        **raw,
        "decided": decided,
        "mer": rate(raw["fooled"], raw["collected"]),
        "vmer": rate(raw["verified_fooled"], raw["collected"]),
        "rejection_rate": rate(raw["rejected"], decided),
        "flag_rate": rate(raw["flagged"], decided),
    }


class ExampleQuerySet(models.QuerySet):
    """The one place where example figures are derived from rows (never kept as counters)."""

    def collected(self) -> ExampleQuerySet:
        """Examples that count: not retracted."""
        return self.filter(retracted=False)

    def figures(self) -> dict[str, Any]:
        """MER (fooled / collected), vMER (verified fooled / collected), rejection and flag rates."""
        return _with_rates(self.collected().aggregate(**_counts()))

    def figures_by(self, field: str) -> dict[Any, dict[str, Any]]:
        """The same figures per value of `field` (e.g. "round__number"), in one grouped query."""
        rows = self.collected().values(field).annotate(**_counts()).order_by()
        return {row.pop(field): _with_rates(row) for row in rows}

    def leaderboard(self) -> list[dict[str, Any]]:
        """Per writer, ranked by verified fooled, then vMER, then MER (ties by name)."""
        board = [{"username": name, **figures} for name, figures in self.figures_by("author__username").items()]
        board.sort(key=lambda r: (-r["verified_fooled"], -(r["vmer"] or 0), -(r["mer"] or 0), r["username"]))
        for rank, row in enumerate(board, start=1):
            row["rank"] = rank
        return board
