"""Tiny members as the cached-top recipe makes them: copies of one encoder whose embeddings and lower layers are
bit-identical and whose top layer(s), pooler and head differ per member (for the trunk-sharing tests)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from zoo import encoder, training
from zoo.heads import get_head


def _shake(parameters, generator: torch.Generator, std: float) -> None:
    with torch.no_grad():
        for parameter in parameters:
            parameter.add_(torch.randn(parameter.shape, generator=generator) * std)


def member_artifacts(root: Path, head: str, labels: list[str] | None = None, members: int = 3, top_layers: int = 1,
                     full: tuple[int, ...] = (), upload: tuple[int, ...] = ()) -> list[Path]:
    """`members` artifacts under `root` from one tiny encoder: member i's top `top_layers` layers, pooler and
    head are shaken with its own seed (the cached-top recipe trains exactly these). Members in `full` have
    every parameter shaken (a fully fine-tuned member); members in `upload` are another random model."""
    spec = training.TrainSpec(head=head, labels=list(labels or []), encoder=training.TINY, seed=0,
                              max_length=get_head(head).default_max_length // 2)
    training.seed_everything(0)
    base = training.build_model(spec)
    _shake([p for n, p in base.named_parameters() if "LayerNorm" not in n], torch.Generator().manual_seed(99), 0.2)
    tokenizer = encoder.load_tokenizer()
    paths = []
    for i in range(members):
        generator = torch.Generator().manual_seed(1000 + i)
        if i in upload:
            training.seed_everything(500 + i)
            model = training.build_model(spec)
            _shake([p for n, p in model.named_parameters() if "LayerNorm" not in n], generator, 0.2)
        else:
            model = copy.deepcopy(base)
            layers = model.base_model.encoder.layer
            frozen = set()
            if i not in full:
                frozen = {id(p) for p in model.base_model.embeddings.parameters()}
                for layer in list(layers)[:len(layers) - top_layers]:
                    frozen |= {id(p) for p in layer.parameters()}
            _shake([p for n, p in model.named_parameters() if id(p) not in frozen and "LayerNorm" not in n],
                   generator, 0.2)
        paths.append(training.save_artifact(model, tokenizer, spec, {"note": "trunk-sharing test member"},
                                            Path(root) / f"m{i}", {"seed": i}))
    return paths
