"""Helpers for tests (any app's): tiny, randomly initialised models registered and deployed in seconds.

    from modelzoo.testing import deploy_tiny_ensemble
    ensemble = deploy_tiny_ensemble(open_round, members=2)   # then modelzoo.services.predict_for_round works

Artifacts go to settings.MODEL_STORE (point it at a tmp folder in tests, e.g. with the `settings` fixture).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from modelzoo import services
from modelzoo.models import Ensemble, ModelVersion
from zoo import encoder, training
from zoo.heads import get_head


def tiny_artifact(out_dir: Path | str, head: str, labels: list[str] | None = None, seed: int = 0) -> Path:
    """An untrained tiny model (a few MB) with the real tokenizer; no database needed."""
    # Half the head's usual max length (64 tokens for classification, 128 for QA) keeps test models quick.
    spec = training.TrainSpec(head=head, labels=list(labels or []), encoder=training.TINY, seed=seed,
                              max_length=get_head(head).default_max_length // 2)
    training.seed_everything(seed)
    model = training.build_model(spec)
    return training.save_artifact(model, encoder.load_tokenizer(), spec, {"note": "untrained tiny test model"},
                                  Path(out_dir), {"seed": seed})


def build_tiny_artifact(task, out_dir: Path | str, seed: int = 0) -> Path:
    """An untrained tiny model for the task's head and labels."""
    spec = services.default_spec(task)
    return tiny_artifact(out_dir, spec.head, spec.labels, seed)


def tiny_model(task, seed: int = 0) -> ModelVersion:
    folder = Path(settings.MODEL_STORE) / task.slug / f"tiny-seed{seed}"
    if not (folder / "zoo.json").is_file():
        build_tiny_artifact(task, folder, seed)
    return services.register_artifact(task, folder, name=f"{task.slug}-tiny-{seed}")


def deploy_tiny_ensemble(round_, members: int = 2) -> Ensemble:
    versions = [tiny_model(round_.task, seed) for seed in range(members)]
    return services.deploy_ensemble(round_, versions)
