"""Where each encoder family keeps its parts: the one table the library reaches a model's layers through.

Training (`zoo.recipes`: frozen lower layers encoded once, top blocks per seed), trunk sharing (`zoo.trunk`:
members with bit-identical lower layers run them once) and anything else that runs part of an encoder (hardness,
explanations) ask this module instead of reaching into BERT's attributes.

For every family the library runs (`zoo.encoders.FAMILIES`) a `Family` says, relative to the base model
(`model.base_model`: `BertModel`, `DistilBertModel`, ...):

- ``embeddings``: the token embedding module (``embeddings`` everywhere);
- ``layers``: the path of the transformer layers' `ModuleList` (``encoder.layer``; DistilBERT
  ``transformer.layer``; ALBERT's ``encoder.albert_layer_groups`` are layer *groups*, reused across depth);
- ``before``: modules run between the embeddings and the first layer (ELECTRA's ``embeddings_project`` when its
  embedding size differs from the hidden size): part of the trunk, replaced by an identity in a tail;
- ``shared``: modules every layer uses (MPNet's ``encoder.relative_attention_bias``; DeBERTa's
  ``encoder.rel_embeddings`` and, v2, ``encoder.LayerNorm`` of them): frozen with the trunk and compared when
  members share one, kept in both views (the encoder computes the relative positions from the sequence length);
- ``after_first``: modules the encoder runs right after layer 0 (DeBERTa-v2's ``encoder.conv`` when
  ``conv_kernel_size`` > 0): part of a trunk of k >= 1 layers, removed from a tail that starts after layer 0;
- ``splittable``: whether the family can be cut into a trunk (layers[:k]) and a tail (layers[k:]) whose
  composition is the full model. ALBERT cannot: every depth reuses the same layer group's weights, so training
  "the top blocks" trains the bottom ones too. The cached-top recipe fine-tunes an ALBERT member whole
  (`zoo.recipes`), and trunk sharing leaves it alone (it runs its own full forward).

How one "calls layers with an attention mask": not layer by layer (each family's layer takes different
arguments: DeBERTa's relative positions and embeddings, MPNet's position bias, a 4-D or a 2-D mask), but through
views of the model's own modules that run its own forward code:

- `trunk_view(model, k)`: the base model with layers[:k] and no pooler —
  ``trunk_view(m, k)(input_ids=..., attention_mask=..., token_type_ids=...).last_hidden_state``;
- `tail_view(model, k)`: the whole model (head included) from layer k on —
  ``tail_view(m, k)(inputs_embeds=hidden, attention_mask=mask2d)`` gives the usual output (logits, or
  start/end logits);
- `segment_view(model, start, stop)`: the base model running layers[start:stop] only —
  ``segment_view(m, 2, 4)(inputs_embeds=hidden, attention_mask=mask2d).last_hidden_state`` (start 0: it takes
  ``input_ids`` and runs the embeddings); `run_layers(model, hidden, mask, start, stop)` calls it.

Views share the parameters (no copy); the model itself is never modified. `trunk_modules(model, k)` lists the
modules whose weights decide a k-layer trunk (what the recipe freezes and what sharing compares).
No Django imports (packed into TorchServe archives with `runtime.py`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Family:
    name: str
    layers: str = "encoder.layer"
    embeddings: str = "embeddings"
    before: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    after_first: tuple[str, ...] = ()
    splittable: bool = True
    why: str = ""  # why it cannot be split (splittable False)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("bert"),
    Family("roberta"),
    Family("xlm-roberta"),
    Family("electra", before=("embeddings_project",)),
    Family("distilbert", layers="transformer.layer"),
    Family("mpnet", shared=("encoder.relative_attention_bias",)),
    Family("deberta", shared=("encoder.rel_embeddings",)),
    Family("deberta-v2", shared=("encoder.rel_embeddings", "encoder.LayerNorm"), after_first=("encoder.conv",)),
    Family("albert", layers="encoder.albert_layer_groups", splittable=False,
           why="ALBERT reuses one layer group's weights at every depth: its lower layers cannot stay frozen while "
               "its top ones train, and no trunk can be cut from it"),
)}


class Identity(torch.nn.Module):
    """Stands in for a module a tail must not run again (ELECTRA's embedding projection): returns its input."""

    def forward(self, hidden_states: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        return hidden_states


class Passthrough(torch.nn.Module):
    """Stands in for the embeddings of a tail: the trunk's hidden states come in as `inputs_embeds`."""

    def forward(self, input_ids=None, inputs_embeds=None, *_: Any, **__: Any) -> torch.Tensor:
        return inputs_embeds


# -- lookup -------------------------------------------------------------------------------------------


def family_name(model_or_config: Any) -> str | None:
    config = getattr(model_or_config, "config", model_or_config)
    return getattr(config, "model_type", None)


def family_of(model_or_config: Any) -> Family | None:
    """The table's entry for a model (or config), None for a family the library does not know."""
    return FAMILIES.get(family_name(model_or_config) or "")


def base_of(model: torch.nn.Module) -> torch.nn.Module | None:
    """The base model (`BertModel`, ...) of a model with a head, or the model itself when it is a base model."""
    prefix = getattr(model, "base_model_prefix", "")
    base = getattr(model, "base_model", None)
    if base is None:
        return None
    if base is not model and model._modules.get(prefix) is not base:
        return None
    return base


def _get(module: torch.nn.Module, path: str) -> torch.nn.Module | None:
    for part in path.split("."):
        if module is None:
            return None
        module = module._modules.get(part)
    return module


def embeddings(model: torch.nn.Module) -> torch.nn.Module | None:
    family, base = family_of(model), base_of(model)
    return _get(base, family.embeddings) if family and base is not None else None


def layers(model: torch.nn.Module) -> torch.nn.ModuleList | None:
    """The transformer layers (ALBERT: its layer groups) in order, or None when the model has no such list."""
    family, base = family_of(model), base_of(model)
    found = _get(base, family.layers) if family and base is not None else None
    return found if isinstance(found, torch.nn.ModuleList) and len(found) else None


def split_problem(model: torch.nn.Module) -> str | None:
    """Why the model cannot be cut into a trunk and a tail (None: it can)."""
    family = family_of(model)
    if family is None:
        return f"family {family_name(model)!r} is not in the table (zoo.families)"
    if not family.splittable:
        return family.why
    if base_of(model) is None or embeddings(model) is None or layers(model) is None:
        return f"the {family.name} model {type(model).__name__} does not have the expected layout"
    return None


def can_split(model: torch.nn.Module) -> bool:
    return split_problem(model) is None


def _present(model: torch.nn.Module, paths: tuple[str, ...]) -> list[torch.nn.Module]:
    base = base_of(model)
    return [m for m in (_get(base, p) for p in paths) if m is not None]


def after_first(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules the encoder runs right after layer 0 (DeBERTa-v2's convolution), part of any trunk k >= 1."""
    family = family_of(model)
    return _present(model, family.after_first) if family else []


def trunk_modules(model: torch.nn.Module, k: int) -> list[torch.nn.Module]:
    """The modules whose weights decide what a trunk of k layers computes (and that the tail's layers use):
    embeddings, the modules before the first layer, the shared relative-position modules, what runs after layer
    0 when k >= 1, and layers[:k]. Absent optional modules are skipped."""
    family = family_of(model)
    paths = (family.embeddings, *family.before, *family.shared, *(family.after_first if k >= 1 else ()))
    return _present(model, paths) + list(layers(model))[:k]


# -- views --------------------------------------------------------------------------------------------


def view(module: torch.nn.Module, replace: dict[str, torch.nn.Module | None]) -> torch.nn.Module:
    """A shallow copy of `module` (same parameters, same config) with some modules replaced, by dotted path
    (inner modules are viewed in turn), and hooks of its own (a hook put on the model itself, e.g. by a test,
    does not fire for its views). A path whose module is absent is skipped."""
    direct: dict[str, torch.nn.Module | None] = {}
    nested: dict[str, dict[str, torch.nn.Module | None]] = {}
    for path, value in replace.items():
        head, _, rest = path.partition(".")
        if head not in module._modules:
            continue
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, inner in nested.items():
        if head not in direct and module._modules[head] is not None:
            direct[head] = view(module._modules[head], inner)
    clone = copy.copy(module)
    clone.__dict__["_modules"] = {**module._modules, **direct}
    for key, value in module.__dict__.items():
        if "hook" in key and isinstance(value, dict):
            clone.__dict__[key] = type(value)()
    return clone


def _require_split(model: torch.nn.Module) -> Family:
    problem = split_problem(model)
    if problem:
        raise ValueError(f"cannot split this model: {problem}")
    return family_of(model)  # type: ignore[return-value]


def segment_view(model: torch.nn.Module, start: int, stop: int | None = None) -> torch.nn.Module:
    """The base model running layers[start:stop] (at least one layer) only, without its pooler: start 0 runs the embeddings (and the
    modules before the first layer) on `input_ids`; start > 0 takes the hidden states after layer start-1 as
    `inputs_embeds`. Called with a 2-D attention mask; `.last_hidden_state` is the output."""
    family = _require_split(model)
    base = base_of(model)
    replace: dict[str, torch.nn.Module | None] = {family.layers: torch.nn.ModuleList(list(layers(model))[start:stop])}
    if "pooler" in base._modules:
        replace["pooler"] = None
    if start > 0:
        replace[family.embeddings] = Passthrough()
        replace.update({p: Identity() for p in family.before})
        replace.update({p: None for p in family.after_first})
    return view(base, replace)


class _Reached(Exception):
    """Raised by `_Stop` with the hidden states that reached it."""


class _Stop(torch.nn.Module):
    """Stands in for the first layer of an embeddings-only trunk: raises with its input hidden states."""

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        raise _Reached(args[0] if args else kwargs.get("hidden_states", kwargs.get("x")))


class EmbeddingsTrunk(torch.nn.Module):
    """A trunk of no layer: the base model's own forward up to the first layer (embeddings, ELECTRA's projection,
    DeBERTa's input mask), stopped there. An encoder with no layer at all is not something every family runs
    (DeBERTa-v2's encoder returns nothing), so the first layer is replaced by `_Stop` instead."""

    def __init__(self, base_view: torch.nn.Module):
        super().__init__()
        self.__dict__["base_view"] = base_view  # a view of the model's modules, not registered (no new weights)

    def forward(self, **kwargs: Any) -> Any:
        from transformers.modeling_outputs import BaseModelOutput

        try:
            self.base_view(**kwargs)
        except _Reached as reached:
            return BaseModelOutput(last_hidden_state=reached.args[0])
        raise RuntimeError("the embeddings-only trunk reached no layer")


def trunk_view(model: torch.nn.Module, k: int) -> torch.nn.Module:
    """The base model cut after layer k-1, without its pooler: `view(input_ids=...).last_hidden_state`
    (k == 0: the embeddings' output, as the first layer receives it)."""
    if k >= 1:
        return segment_view(model, 0, k)
    family = _require_split(model)
    base = base_of(model)
    replace: dict[str, torch.nn.Module | None] = {family.layers: torch.nn.ModuleList([_Stop()])}
    if "pooler" in base._modules:
        replace["pooler"] = None
    return EmbeddingsTrunk(view(base, replace))


def tail_view(model: torch.nn.Module, k: int, last_layer: torch.nn.Module | None = None) -> torch.nn.Module:
    """The whole model (head included) from layer k on (k < the number of layers: an encoder with no layer is not
    something every family runs): `view(inputs_embeds=trunk hidden states, attention_mask=2-D mask)` returns the
    model's usual output. `last_layer`: a stand-in for the last layer (the
    trunk module's first-token shortcut)."""
    family = _require_split(model)
    tail = list(layers(model))[k:]
    if not tail:
        raise ValueError(f"a tail runs at least one layer: k={k} of {len(layers(model))}")
    if last_layer is not None and tail:
        tail[-1] = last_layer
    replace: dict[str, torch.nn.Module | None] = {family.layers: torch.nn.ModuleList(tail),
                                                  family.embeddings: Passthrough()}
    replace.update({p: Identity() for p in family.before})
    if k >= 1:
        replace.update({p: None for p in family.after_first})
    base = base_of(model)
    if base is model:
        return view(model, replace)
    prefix = model.base_model_prefix
    return view(model, {f"{prefix}.{path}": value for path, value in replace.items()})


def run_layers(model: torch.nn.Module, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None,
               start: int, stop: int | None = None) -> torch.Tensor:
    """The hidden states after layers[start:stop], given those after layer start-1 (start >= 1) and the 2-D
    attention mask (1: a token, 0: padding)."""
    if start < 1:
        raise ValueError("run_layers starts after the embeddings (start >= 1); use trunk_view for input ids")
    args = {"inputs_embeds": hidden_states}
    if attention_mask is not None:
        args["attention_mask"] = attention_mask
    return segment_view(model, start, stop)(**args).last_hidden_state
