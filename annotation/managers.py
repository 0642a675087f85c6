from __future__ import annotations

from django.db import models
from django.db.models import Count, Q


def rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


class ExampleQuerySet(models.QuerySet):
    def collected(self) -> ExampleQuerySet:
        """Examples that count: scored and not retracted."""
        return self.filter(retracted=False)

    def figures(self) -> dict[str, float | int | None]:
        """MER (fooled / collected) and vMER (verified fooled / collected), derived from the rows."""
        agg = self.collected().aggregate(
            collected=Count("id"),
            fooled=Count("id", filter=Q(fooled=True)),
            verified_fooled=Count("id", filter=Q(fooled=True, consensus="verified")),
            rejected=Count("id", filter=Q(consensus="rejected")),
            flagged=Count("id", filter=Q(consensus="flagged")),
        )
        return {
            **agg,
            "mer": rate(agg["fooled"], agg["collected"]),
            "vmer": rate(agg["verified_fooled"], agg["collected"]),
        }
