"""The explanation methods, by name: the one list every other follows (no torch, no Django).

`METHOD_SPECS` is the registry. The site's MODEL_EXPLANATION_METHOD setting (dynabench_site/settings.py), the
task setting `explanation_method` (tasks/kinds/base.py), the create page (its config carries `described()`, so
create.js names the method a map was made with) and `zoo.explain` (which method runs) all read it. Importing this
module loads nothing heavy, so the settings can. Adding a method: one spec here and its function in
`zoo.explain.GRADIENTS` (or a branch of its own, as occlusion has).
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.registry import Registry


@dataclass(frozen=True)
class MethodSpec:
    name: str  # what configurations, requests and stored explanations say
    label: str  # what pages show
    about: str  # how the map's legend names the method
    approximate: bool = False  # the scores' sign can mislead: the legend says so


OCCLUSION = "occlusion"
INPUT_X_GRADIENT = "input_x_gradient"
INTEGRATED_GRADIENTS = "integrated_gradients"

METHOD_SPECS: Registry[MethodSpec] = Registry("explanation method")
for _spec in (
    # faithful by construction: the drop in the ensemble's probability of its answer without the word
    MethodSpec(OCCLUSION, "word occlusion", "word occlusion"),
    # gradient of the target logit x the word embedding
    MethodSpec(INPUT_X_GRADIENT, "input × gradient", "input × gradient", approximate=True),
    # Captum LayerIntegratedGradients from a [PAD] baseline
    MethodSpec(INTEGRATED_GRADIENTS, "integrated gradients", "integrated gradients from a blank ([PAD]) input"),
):
    METHOD_SPECS.register(_spec.name, _spec)
METHODS: tuple[str, ...] = tuple(METHOD_SPECS)
DEFAULT_METHOD = OCCLUSION
METHOD_NAMES: dict[str, str] = {name: spec.label for name, spec in METHOD_SPECS.items()}


def check_method(method: str) -> None:
    METHOD_SPECS.lookup(method)  # an unknown method: UnknownName (a ValueError) naming the known ones


def described() -> list[dict[str, object]]:
    """The methods as pages receive them (name, label, approximate), in the registry's order."""
    return [{"name": s.name, "label": s.label, "approximate": s.approximate} for s in METHOD_SPECS.values()]
