"""Labelled sets: what training and evaluation receive, ready (inputs, targets and their content keys).

Where a set comes from is not the library's business: the site builds them from imported rows and JSONL files
(`modelzoo.data`) and from a round's dataset export (`rounds.datasets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LabelledSet:
    name: str
    inputs: list[dict[str, str]] = field(default_factory=list)
    targets: list[Any] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # content keys: the lineage fingerprint

    def add(self, model_input: dict[str, str], target: Any, key: str) -> None:
        self.inputs.append(model_input)
        self.targets.append(target)
        self.keys.append(key)

    def extend(self, other: LabelledSet) -> LabelledSet:
        for i, t, k in zip(other.inputs, other.targets, other.keys, strict=True):
            self.add(i, t, k)
        return self
