"""Eager, idempotent registration of the deployed ensembles on TorchServe.

A round's ensemble becomes one TorchServe model (`modelzoo.serving.torchserve.ensemble_name`). It is
registered:
- when it is deployed (`services.deploy_ensemble` calls the backend's `prepare`, and the receiver below
  answers `modelzoo.signals.ensemble_deployed`);
- when TorchServe starts: `manage.py torchserve_register` registers every open round's ensemble (TorchServe
  forgets its models when it stops: it runs with `--ncs`).
Never while scoring: a model TorchServe does not know answers a retryable error and the job is retried.
Every step is idempotent (an archive already built is reused; a 409 "already registered" is success).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from modelzoo.models import Ensemble, ModelVersion
from modelzoo.serving import ModelRef, get_backend
from modelzoo.types import BackendError

log = logging.getLogger(__name__)


@dataclass
class Registered:
    round: str
    model: str  # the TorchServe model that serves the ensemble
    members: list[str]


def open_round_ensembles() -> list[Ensemble]:
    """The active ensemble of every open round."""
    return list(Ensemble.objects.filter(active=True, round__status="open")
                .select_related("round__task").order_by("round__task__slug", "round__number"))


def register_ensemble(versions: list[ModelVersion], round_label: str = "") -> Registered:
    """Register one ensemble on TorchServe (whatever MODEL_BACKEND says) and wait until it serves."""
    backend = get_backend("torchserve")
    name = backend.register([ModelRef.of(v) for v in versions])
    return Registered(round_label, name, [v.name for v in versions])


def register_open_rounds() -> tuple[list[Registered], list[tuple[str, BackendError]]]:
    """Register every open round's ensemble; returns (registered, failures) and keeps going after a failure."""
    done, failed = [], []
    for ensemble in open_round_ensembles():
        label = str(ensemble.round)
        try:
            done.append(register_ensemble(ensemble.ordered_members(), label))
        except BackendError as exc:
            failed.append((label, exc))
    return done, failed


def prune(keep: set[str]) -> list[str]:
    """Unregister the ensemble models TorchServe holds that are not in `keep` (ensembles replaced since)."""
    from modelzoo.serving.torchserve import ensemble_ids

    backend = get_backend("torchserve")
    dropped = [name for name in backend.client.models() if ensemble_ids(name) is not None and name not in keep]
    for name in dropped:
        backend.unregister(name)
    return dropped


def on_ensemble_deployed(sender, round, versions, **kwargs) -> None:  # noqa: A002 - the signal's argument name
    """Register a newly deployed ensemble at once when TorchServe serves the models. TorchServe being down is
    logged, not raised: `manage.py torchserve_register` registers it when TorchServe starts."""
    if settings.MODEL_BACKEND != "torchserve":
        return
    try:
        registered = register_ensemble(list(versions), str(round))
    except BackendError as exc:
        log.warning("could not register the ensemble of %s on TorchServe now (%s); `manage.py "
                    "torchserve_register` registers it when TorchServe is up", round, exc)
        return
    log.info("%s: ensemble registered on TorchServe as %s", round, registered.model)
