"""Per-sample gradient norms over the top encoder block and the linear head (`gradnorm_deep`).

The paper's code loops over examples with batch size one and calls backward for each. Here the lower blocks
run batched without gradients; only the top block and the head are differentiated, per sample. Word embeddings
(and every lower block, and the relative-position modules every block shares) are left out of the norm.

Any family of `zoo.encoders` works: the lower blocks and the top block run through the family's own forward code
(`zoo.families.trunk_view`, `run_layers`), on the encoder's device (`zoo.device`), in full precision. Methods:

- "ghost" (default): the norms from one batched backward (`_sq_norm`). It is exact when every parameter of the
  top block and the head belongs to a Linear or LayerNorm applied once to per-sample rows; that is checked on
  each batch (BERT, RoBERTa, XLM-R, ELECTRA, DistilBERT, MPNet pass), and where it does not hold (DeBERTa's
  relative-position projections reuse the attention's weights on shared embeddings, v1 has bias vectors of its own)
  the exact per-sample loop runs instead;
- "loop": exact, one backward per sample through the top block only (batched lower blocks), any family;
- "vmap": per-sample gradients with torch.func.vmap(grad(...)) over a copy of the top block called directly, for
  the families whose layer is BERT's (`VMAP_FAMILIES`); refused for the others.

ALBERT cannot be split (one layer group reused at every depth): its "top block" is that shared group, and its
per-sample gradient, through every use of it, comes from one full forward and backward per sample.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from tqdm.auto import tqdm

from hardness.encoding import (
    Text,
    additive_mask,
    device_of,
    length_sorted_batches,
    mean_pool,
    model_inputs,
    n_batches,
    tokenize,
)
from zoo import families

VMAP_FAMILIES = ("bert", "roberta", "xlm-roberta", "electra")  # layers called as BERT's: layer(hidden, 4-D mask)


def _top_hidden(encoder, hidden: torch.Tensor, mask: torch.Tensor, start: int) -> torch.Tensor:
    """The encoder's last block run on the hidden states entering it (the family's own code)."""
    if start >= 1:
        return families.run_layers(encoder, hidden, mask, start)
    return families.tail_view(encoder, 0)(inputs_embeds=hidden, attention_mask=mask).last_hidden_state


class TopBlockHead(nn.Module):
    """The encoder's last block (its own module, run through the family's forward) + pooling + a copy of the head."""

    def __init__(self, encoder, head: nn.Linear):
        super().__init__()
        problem = families.split_problem(encoder)
        if problem:
            raise ValueError(f"no top block to run alone: {problem}")
        blocks = families.layers(encoder)
        self.block = blocks[-1]
        self.head = copy.deepcopy(head).to(device_of(encoder)).eval()
        self.__dict__["encoder"] = encoder  # not registered: its other weights are not this module's parameters
        self.start = len(blocks) - 1

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(mean_pool(_top_hidden(self.encoder, hidden, mask, self.start), mask))


class DirectTopBlockHead(nn.Module):
    """For "vmap": a copy of a BERT-like last block called directly (eager attention, a 4-D additive mask), so
    that torch.func sees plain ops."""

    def __init__(self, encoder, head: nn.Linear):
        super().__init__()
        if families.family_name(encoder) not in VMAP_FAMILIES:
            raise ValueError(f"the vmap method runs BERT-like blocks only ({', '.join(VMAP_FAMILIES)}), not "
                             f"{families.family_name(encoder)!r}: use method 'ghost' or 'loop'")
        self.block = copy.deepcopy(families.layers(encoder)[-1]).eval()
        self.block.attention.self.config._attn_implementation = "eager"
        self.head = copy.deepcopy(head).to(device_of(encoder)).eval()

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(mean_pool(self.block(hidden, additive_mask(mask, hidden.dtype)), mask))


def _per_sample_norms(model: TopBlockHead, hidden: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss_fn(p: dict, h: torch.Tensor, m: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = functional_call(model, (p, buffers), (h.unsqueeze(0), m.unsqueeze(0)))
        return nn.functional.cross_entropy(logits, y.unsqueeze(0))

    grads = vmap(grad(loss_fn), in_dims=(None, 0, 0, 0))(params, hidden, mask, labels)
    return torch.sqrt(sum(g.pow(2).flatten(1).sum(1) for g in grads.values()))


def _sq_norm(mod: nn.Module, a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Per-sample squared gradient norm of one Linear / LayerNorm from its input a and output gradient g.

    Linear: the weight gradient of sample i is Σ_t g_t a_tᵀ, and ‖Σ_t g_t a_tᵀ‖² = Σ_{t,u} (a_t·a_u)(g_t·g_u),
    which needs s² dot products instead of a d_in × d_out matrix per sample ("ghost norm").
    Padded positions have g_t = 0 (nothing downstream reads them), so they drop out by themselves.
    """
    if a.dim() == 2:  # the head sees one pooled vector per sample
        a, g = a[:, None], g[:, None]
    bias = g.sum(1).pow(2).sum(-1) if mod.bias is not None else 0.0
    if isinstance(mod, nn.LayerNorm):
        if mod.weight is None:
            return bias
        xhat = nn.functional.layer_norm(a, mod.normalized_shape, eps=mod.eps)
        return (g * xhat).sum(1).pow(2).sum(-1) + bias
    weight = (torch.einsum("bsi,bti->bst", a, a) * torch.einsum("bso,bto->bst", g, g)).sum((1, 2))
    return weight + bias


def _ghost_modules(model: nn.Module) -> list[nn.Module] | None:
    """The Linear / LayerNorm modules whose parameters are all of `model`'s, or None when some parameter belongs
    to something else (a bias vector of its own, a custom norm): then ghost norms would miss it."""
    modules = [m for m in model.modules() if isinstance(m, nn.Linear | nn.LayerNorm)]
    covered = {id(p) for m in modules for p in m.parameters(recurse=False)}
    return modules if all(id(p) in covered for p in model.parameters()) else None


def _ghost_norms(model: nn.Module, hidden: torch.Tensor, mask: torch.Tensor,
                 labels: torch.Tensor) -> torch.Tensor | None:
    """The same per-sample norms from one ordinary batched backward (no per-sample gradient is built).

    None where the formula does not hold for this model: a parameter outside a Linear / LayerNorm, a module run
    more than once (DeBERTa-v2 projects its shared relative embeddings with the attention's own weights) or on
    rows that are not one sample's (a shared input)."""
    modules = _ghost_modules(model)
    if modules is None:
        return None
    head = getattr(model, "head", None)
    seen: list[tuple[nn.Module, torch.Tensor, torch.Tensor]] = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: seen.append((mod, inp[0].detach(), out))) for m in modules]
    try:
        with torch.enable_grad():
            loss = nn.functional.cross_entropy(model(hidden, mask), labels, reduction="sum")
            if sorted(id(m) for m, _, _ in seen) != sorted(id(m) for m in modules):
                return None
            n = len(labels)
            if any(a.shape[0] != n or a.dim() != (2 if m is head else 3) for m, a, _ in seen):
                return None
            grads = torch.autograd.grad(loss, [out for _, _, out in seen])
    finally:
        for hook in hooks:
            hook.remove()
    with torch.no_grad():
        return torch.sqrt(sum(_sq_norm(mod, a, g) for (mod, a, _), g in zip(seen, grads, strict=True)))


def _loop_norms(model: nn.Module, hidden: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Exact: one forward and backward per sample through the top block and the head only."""
    params = [p for p in model.parameters()]
    out = torch.zeros(len(labels), dtype=torch.float64)
    with torch.enable_grad():
        for i in range(len(labels)):
            loss = nn.functional.cross_entropy(model(hidden[i : i + 1], mask[i : i + 1]), labels[i : i + 1])
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            out[i] = float(torch.sqrt(sum(g.double().pow(2).sum() for g in grads if g is not None)))
    return out


METHODS = {"vmap": _per_sample_norms, "ghost": _ghost_norms, "loop": _loop_norms}


def top_block_inputs(encoder, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                     token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
    """Hidden states entering the last block (lower blocks run once, batched, without autograd)."""
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None:
        inputs["token_type_ids"] = token_type_ids
    with torch.inference_mode():
        hidden = families.trunk_view(encoder, len(families.layers(encoder)) - 1)(**inputs).last_hidden_state
    return hidden.clone()


def top_parameters(encoder) -> list[nn.Parameter]:
    """The encoder parameters the deep norm covers: the last block's (ALBERT: its shared layer group's)."""
    blocks = families.layers(encoder)
    if blocks is None:
        raise ValueError(f"no transformer layers found in the {families.family_name(encoder)!r} model "
                         f"{type(encoder).__name__}")
    return list(blocks[-1].parameters())


def _full_forward_norms(encoder, head: nn.Linear, inputs: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Exact, for a model that cannot be split (ALBERT): a full forward and backward per sample."""
    params = [*top_parameters(encoder), *head.parameters()]
    out = torch.zeros(len(labels), dtype=torch.float64)
    with torch.enable_grad():
        for i in range(len(labels)):
            row = {k: v[i : i + 1] for k, v in inputs.items()}
            hidden = encoder(**row).last_hidden_state
            logits = head(mean_pool(hidden, row["attention_mask"]))
            grads = torch.autograd.grad(nn.functional.cross_entropy(logits, labels[i : i + 1]), params,
                                        allow_unused=True)
            out[i] = float(torch.sqrt(sum(g.double().pow(2).sum() for g in grads if g is not None)))
    return out


def gradnorm_deep(
    encoder, head: nn.Linear, tokenizer, texts: Sequence[Text], labels: np.ndarray,
    batch_size: int = 32, progress: str | None = None, method: str = "ghost",
) -> np.ndarray:
    """‖∂loss/∂(top block, head)‖ per example, in the order of `texts` (texts, or pairs as two segments).

    method "ghost" (default): the same norms from one batched backward through the block (see `_sq_norm`;
    the exact loop where the formula does not hold for the family); "loop": one backward per sample through the
    top block; "vmap": per-sample gradients with torch.func.vmap(grad(...)) (BERT-like families). All equal the
    naive per-example loop; on CPU ghost is 3.4x faster than that loop, vmap 1.6x (docs/benchmarks/hardness.md)."""
    if method not in METHODS:
        raise ValueError(f"unknown gradnorm_deep method {method!r}; one of {', '.join(METHODS)}")
    encoder.eval()
    device = device_of(encoder)
    splittable = families.can_split(encoder)
    if splittable:
        model = DirectTopBlockHead(encoder, head) if method == "vmap" else TopBlockHead(encoder, head)
    else:  # ALBERT: the shared layer group, through every use of it
        full_head = copy.deepcopy(head).to(device).eval()
    out = np.zeros(len(texts), dtype=np.float64)
    batches = length_sorted_batches(tokenizer, texts, batch_size)
    for b in tqdm(batches, total=n_batches(len(texts), batch_size), desc=progress, disable=progress is None):
        inputs = model_inputs(b, device)
        y = torch.from_numpy(labels[b.index]).to(device)
        if not splittable:
            out[b.index] = _full_forward_norms(encoder, full_head, inputs, y).cpu().numpy()
            continue
        hidden = top_block_inputs(encoder, **inputs)
        norms = METHODS[method](model, hidden, inputs["attention_mask"], y)
        if norms is None:  # ghost does not hold for this family: the exact loop, from now on
            method = "loop"
            norms = _loop_norms(model, hidden, inputs["attention_mask"], y)
        out[b.index] = norms.detach().cpu().numpy()
    return out


def gradnorm_deep_naive(encoder, head: nn.Linear, tokenizer, texts: Sequence[Text], labels: np.ndarray) -> np.ndarray:
    """The reference: one example at a time, full forward, `loss.backward()`, norm of the same parameters."""
    encoder.eval()
    device = device_of(encoder)
    head = copy.deepcopy(head).to(device)
    params = [*top_parameters(encoder), *head.parameters()]
    out = np.zeros(len(texts), dtype=np.float64)
    for i, text in enumerate(texts):
        enc = {k: v.to(device) for k, v in tokenize(tokenizer, [text]).items()}
        hidden = encoder(**enc).last_hidden_state
        loss = nn.functional.cross_entropy(head(mean_pool(hidden, enc["attention_mask"])),
                                           torch.tensor([int(labels[i])], device=device))
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        out[i] = float(torch.sqrt(sum(g.pow(2).sum() for g in grads if g is not None)))
    return out
