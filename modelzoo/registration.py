"""Eager, idempotent registration of the deployed ensembles on the model backend.

A round's ensemble is made ready to serve by the backend (`Backend.register`: on TorchServe, one model per
ensemble). It is registered:
- when it is deployed (`services.deploy_ensemble` calls the backend's `prepare`, and the receiver below
  answers `modelzoo.signals.ensemble_deployed`);
- when the model server starts: `manage.py torchserve_register` registers every open round's ensemble and every
  ensemble a study arm scores with (`served_ensembles`; TorchServe forgets its models when it stops: it runs with
  `--ncs`).
Never while scoring: a model the server does not know answers a retryable error and the job is retried.
Every step is idempotent (an archive already built is reused; a 409 "already registered" is success).
This module asks the backend only through its contract (`zoo.serving.base.Backend`) and never names one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from modelzoo.models import Ensemble, ModelVersion
from modelzoo.serving import get_backend
from zoo.serving import Backend, ModelRef
from zoo.types import BackendError

log = logging.getLogger(__name__)


@dataclass
class Registered:
    round: str
    model: str  # what the backend serves the ensemble under (on TorchServe: its model)
    members: list[str]


def open_round_ensembles() -> list[Ensemble]:
    """The active ensemble of every open round."""
    return list(Ensemble.objects.filter(active=True, round__status="open")
                .select_related("round__task").order_by("round__task__slug", "round__number"))


# Apps above add the ensembles they score with besides the open rounds' (a study arm's own target ensemble:
# `study.apps`), so that a model server that starts again serves them too.
_SOURCES: list[Callable[[], Iterable[Ensemble]]] = []


def provide_ensembles(source: Callable[[], Iterable[Ensemble]]) -> None:
    if source not in _SOURCES:
        _SOURCES.append(source)


def served_ensembles() -> list[Ensemble]:
    """Every ensemble that must be served: the open rounds' and those the apps above provide, each once."""
    found = {ensemble.pk: ensemble for ensemble in open_round_ensembles()}
    for source in _SOURCES:
        for ensemble in source():
            found.setdefault(ensemble.pk, ensemble)
    return list(found.values())


def register_ensemble(versions: list[ModelVersion], round_label: str = "", backend: Backend | None = None) -> Registered:
    """Register one ensemble on `backend` (default: the configured one) and wait until it serves."""
    backend = backend or get_backend()
    name = backend.register([ModelRef.of(v) for v in versions])
    return Registered(round_label, name, [v.name for v in versions])


def register_open_rounds(backend: Backend | None = None) -> tuple[list[Registered], list[tuple[str, BackendError]]]:
    """Register every ensemble that must be served (`served_ensembles`: every open round's, and a study arm's own);
    returns (registered, failures) and keeps going after a failure."""
    done, failed = [], []
    for ensemble in served_ensembles():
        label = str(ensemble.round)
        try:
            done.append(register_ensemble(ensemble.ordered_members(), label, backend))
        except BackendError as exc:
            failed.append((label, exc))
    return done, failed


def prune(keep: set[str], backend: Backend | None = None) -> list[str]:
    """Release the ensembles the backend serves that are not in `keep` (ensembles replaced since)."""
    return (backend or get_backend()).prune(keep)


def on_ensemble_deployed(sender, round, versions, **kwargs) -> None:  # noqa: A002 - the signal's argument name
    """Register a newly deployed ensemble at once. A model server that is down is logged, not raised:
    `manage.py torchserve_register` registers it when the server starts."""
    try:
        registered = register_ensemble(list(versions), str(round))
    except BackendError as exc:
        log.warning("could not register the ensemble of %s on the model backend now (%s); `manage.py "
                    "torchserve_register` registers it when the model server is up", round, exc)
        return
    log.info("%s: ensemble registered on the model backend as %s", round, registered.model)
