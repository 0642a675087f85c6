"""The model zoo's line of `/healthz` (registered in `ModelzooConfig.ready`): the model backend, and each open
round's deployed ensemble with its members and whether the backend serves it."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from modelzoo.services import active_ensemble, active_members
from modelzoo.serving import ModelRef, make_backend
from tasks.models import Round


def deployed_ensembles() -> list[tuple[dict[str, Any], list[ModelRef]]]:
    """Each open round's active ensemble and its members (as shown, and as the backend is asked about them)."""
    found = []
    for round_ in Round.objects.filter(status=Round.Status.OPEN).select_related("task").order_by("task__slug"):
        ensemble = active_ensemble(round_)
        members = active_members(round_)
        shown = {"task": round_.task.slug, "round": round_.number, "ensemble": ensemble.pk if ensemble else None,
                 "members": [{"name": m.name, "serving_name": m.serving_name} for m in members]}
        found.append((shown, [ModelRef.of(m) for m in members]))
    return found


def check_models() -> dict[str, Any]:
    backend = settings.MODEL_BACKEND
    deployed = deployed_ensembles()
    ensembles = [shown for shown, _ in deployed]
    # A backend built now from the current settings; it says whether it answers and serves each ensemble.
    state = make_backend(backend).health([refs for _, refs in deployed], timeout_s=2.0)
    for ensemble, served in zip(ensembles, state.pop("ensembles", None) or [], strict=False):
        ensemble.update(served)
    return {**state, "backend": backend, "ensembles": ensembles}
