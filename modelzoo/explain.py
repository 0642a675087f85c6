"""Token attributions merged to words: a fast gradient method and Captum's LayerIntegratedGradients.

No Django imports (packed into TorchServe archives with `runtime.py`). Which logits are attributed (a label's,
or a QA span's start and end) is the head spec's choice (`HeadSpec.explained_logits`). Integrated gradients
attribute to the predicted class *logit* (on the softmax probability the convergence delta is far worse), with
fewer steps for long inputs; the method, steps and delta are recorded with every attribution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

FAST = "input_x_gradient"
IG = "integrated_gradients"
METHODS = (FAST, IG)
IG_MAX_STEPS = 32  # Gauss-Legendre: delta ~1e-5 at 32 steps on a 20-token input (1e-2 at 8)
IG_MIN_STEPS = 8
IG_TOKEN_BUDGET = 768  # steps x tokens per attribution: long inputs get fewer steps


def ig_steps(n_tokens: int) -> int:
    return max(IG_MIN_STEPS, min(IG_MAX_STEPS, IG_TOKEN_BUDGET // max(n_tokens, 1)))


def explain(predictor: Any, model_input: dict[str, str], method: str, target: Any) -> dict[str, Any]:
    """Attribute the logits that the predictor's head names for `target` (one word list per logit)."""
    if method not in METHODS:
        raise ValueError(f"unknown explanation method {method!r}; known: {', '.join(METHODS)}")
    encoding = predictor.encode([model_input], offsets=True)
    texts = predictor.segments(model_input)
    offsets, seq_ids = encoding["offset_mapping"][0].tolist(), encoding.sequence_ids(0)
    args = predictor.model_args(encoding)
    explained = predictor.spec.explained_logits(target, predictor.labels, offsets, seq_ids)
    results = {key: attribute(predictor.model, args, pick, method) for key, pick in explained.logits.items()}
    first = next(iter(results.values()))
    return {"method": method, "target": explained.name, "delta": _worst([r["delta"] for r in results.values()]),
            "steps": first["steps"], **{key: merge_words(r["scores"], offsets, seq_ids, texts) for key, r in results.items()}}


def _worst(deltas: list[float | None]) -> float | None:
    return None if any(d is None for d in deltas) else max(abs(d) for d in deltas)


def attribute(model: torch.nn.Module, args: dict[str, torch.Tensor], pick: Callable, method: str) -> dict[str, Any]:
    if method == FAST:
        return input_x_gradient(model, args, pick)
    return integrated_gradients(model, args, pick)


def input_x_gradient(model: torch.nn.Module, args: dict[str, torch.Tensor], pick: Callable) -> dict[str, Any]:
    """Gradient of the target logit times the word embedding, summed over the hidden size."""
    embeds = model.get_input_embeddings()(args["input_ids"]).detach().requires_grad_(True)
    rest = {k: v for k, v in args.items() if k != "input_ids"}
    logit = pick(model(inputs_embeds=embeds, **rest)).sum()
    (grad,) = torch.autograd.grad(logit, embeds)
    scores = (grad * embeds).sum(-1)[0].detach()
    return {"scores": scores.tolist(), "delta": None, "steps": 1}


def integrated_gradients(model: torch.nn.Module, args: dict[str, torch.Tensor], pick: Callable) -> dict[str, Any]:
    """LayerIntegratedGradients over the word embeddings, from a baseline of [PAD] (special tokens kept)."""
    from captum.attr import LayerIntegratedGradients  # here: captum loads matplotlib, which only IG needs

    input_ids = args["input_ids"]
    rest_names = [k for k in ("attention_mask", "token_type_ids") if k in args]

    def forward(ids: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        return pick(model(input_ids=ids, **dict(zip(rest_names, rest, strict=True))))

    steps = ig_steps(input_ids.shape[1])
    lig = LayerIntegratedGradients(forward, model.get_input_embeddings())
    attributions, delta = lig.attribute(
        input_ids, baselines=baseline_ids(model, input_ids), additional_forward_args=tuple(args[k] for k in rest_names),
        n_steps=steps, internal_batch_size=steps, return_convergence_delta=True,
    )
    return {"scores": attributions.sum(-1)[0].detach().tolist(), "delta": float(delta.abs().max()), "steps": steps}


def baseline_ids(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    pad = model.config.pad_token_id or 0
    baseline = torch.full_like(input_ids, pad)
    special = _special_ids(model)
    keep = torch.isin(input_ids, torch.tensor(sorted(special))) if special else torch.zeros_like(input_ids, dtype=torch.bool)
    return torch.where(keep, input_ids, baseline)


def _special_ids(model: torch.nn.Module) -> set[int]:
    cfg = model.config
    ids = {getattr(cfg, name, None) for name in ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id")}
    return {i for i in ids if i is not None} or {101, 102}  # BERT [CLS]/[SEP] when the config does not say


def merge_words(scores: list[float], offsets: list[list[int]], seq_ids: list[int | None],
                texts: tuple[str, str | None]) -> list[dict[str, Any]]:
    """Sum sub-word scores into whitespace-delimited words, then scale so the largest |score| is 1."""
    words: list[dict[str, Any]] = []
    last_end, last_seg = -1, None
    for score, (start, end), seg in zip(scores, offsets, seq_ids, strict=True):
        if seg is None or end <= start:
            continue  # special tokens and padding
        if seg == last_seg and start == last_end and words:
            words[-1]["end"], words[-1]["score"] = end, words[-1]["score"] + score
        else:
            words.append({"start": start, "end": end, "score": score, "segment": seg})
        last_end, last_seg = end, seg
    return normalise([{"word": (texts[w["segment"]] or "")[w["start"]:w["end"]], "score": w["score"],
                       "segment": w["segment"]} for w in words])


def normalise(words: list[dict[str, Any]]) -> list[dict[str, Any]]:
    peak = max((abs(w["score"]) for w in words), default=0.0)
    for w in words:
        w["score"] = float(w["score"] / peak) if peak > 0 else 0.0
    return words
