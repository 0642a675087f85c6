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
        raw = self.collected().aggregate(
            n_collected=Count("id"),
            n_fooled=Count("id", filter=Q(fooled=True)),
            n_verified_fooled=Count("id", filter=Q(fooled=True, consensus="verified")),
            n_rejected=Count("id", filter=Q(consensus="rejected")),
            n_flagged=Count("id", filter=Q(consensus="flagged")),
        )
        agg = {key.removeprefix("n_"): value for key, value in raw.items()}
        return {
            **agg,
            "mer": rate(agg["fooled"], agg["collected"]),
            "vmer": rate(agg["verified_fooled"], agg["collected"]),
        }
