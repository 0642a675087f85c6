"""Model heads: one module per kind of model output, registered here by name.

A head spec (`zoo.heads.base.HeadSpec`) is everything the zoo needs to know about one kind of output:
how its model is built and loaded, how training examples become features, how outputs become predictions,
which logits an explanation attributes, and its defaults (max length, ensemble aggregation). Task kinds name
their head by string (`TaskKind.head`, e.g. "qa"); everything else asks `get_head(name)`.

Adding a head (token tagging, generation, ...) is one module with a `HeadSpec` subclass and one line in
`HEADS`. The registry holds dotted paths and imports a head on first use, because `ModelVersion.head` reads
the names for its choices while Django loads its apps and the head modules import torch and transformers
(keeping them out of `manage.py` start-up). No Django anywhere in this package: it is packed into every
TorchServe archive with `runtime.py` and `explain.py` (see `zoo/archive.py`).
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

from zoo.registry import Registry

if TYPE_CHECKING:
    from zoo.heads.base import HeadSpec

# name -> (label for people, "module.Class" of its HeadSpec). The names are stored in ModelVersion.head.
HEADS: Registry[tuple[str, str]] = Registry("model head")
HEADS.register("classification", ("Classification", "zoo.heads.classification.ClassificationHead"))
HEADS.register("qa", ("Span extraction (QA)", "zoo.heads.qa.QAHead"))


def head_choices() -> list[tuple[str, str]]:
    return [(name, label) for name, (label, _) in HEADS.items()]


@cache
def get_head(name: str) -> HeadSpec:
    _, path = HEADS.lookup(name)
    module, _, cls = path.rpartition(".")
    return getattr(import_module(module), cls)()


__all__ = ["HEADS", "get_head", "head_choices"]
