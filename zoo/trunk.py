"""Members that share a frozen trunk compute it once.

The cached-top recipe (`zoo.recipes`) freezes the embeddings and the lower encoder layers and trains only
the top blocks and the head of each member, so the members of one ensemble carry bit-identical lower layers.
`SharedEnsemble` finds that out when it is built, by comparing the tensors themselves (never a flag: an upload or
a fully fine-tuned member shares nothing and is run on its own), and then runs, for a batch, the embeddings and
the first `k` encoder layers ONCE and only `layers[k:]` + pooler + head per member.

It reuses the model's own modules and forward code, as the recipe does while training: the trunk is a view of
the first member's base model (e.g. `BertModel` with `encoder.layer = layers[:k]` and no pooler; its own forward
builds the attention mask with transformers' mask helper), and each member's tail is a view of the whole model
(`...ForSequenceClassification` / `...ForQuestionAnswering`) whose embeddings pass `inputs_embeds` through and
whose encoder holds `layers[k:]`: its forward builds the same mask from the same 2-D attention mask, runs the
remaining layers, the pooler and the head, and returns the usual output (logits, or start/end logits for QA), so
decoding and explanations are unchanged. Views share the parameters (no memory); the numbers are the same as a
full forward of each member (same operations on the same batch). Where each family keeps its embeddings,
layers and relative-position tables, and which families can be cut at all, is `zoo.families`' table: every
family the library runs but ALBERT (one layer group's weights at every depth), whose members run alone.

Sharing needs: the same tokenizer (same object, or the same serialised tokenizer), head, max length, trunk
configuration, and bit-identical embeddings (and relative-position tables) + layers[0:k] (1 <= k < layers). `ZOO_SHARE_TRUNK=0` turns it off.
No Django imports (packed into TorchServe archives with `runtime.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import torch

from zoo import device as _device
from zoo import families, precision
from zoo.flags import flag

# Configuration keys that decide what the embeddings and the encoder layers compute (besides their weights).
TRUNK_CONFIG_KEYS = ("hidden_size", "num_attention_heads", "intermediate_size", "hidden_act", "layer_norm_eps",
                     "max_position_embeddings", "type_vocab_size", "vocab_size", "position_embedding_type",
                     "is_decoder", "add_cross_attention", "chunk_size_feed_forward", "pad_token_id",
                     "_attn_implementation", "model_type", "dim", "n_layers", "n_heads", "hidden_dim",
                     "activation", "sinusoidal_pos_embds", "embedding_size", "relative_attention",
                     "max_relative_positions", "position_buckets", "pos_att_type", "norm_rel_ebd", "share_att_key",
                     "position_biased_input", "conv_kernel_size", "conv_act", "conv_groups",
                     "relative_attention_num_buckets", "num_hidden_groups", "inner_group_num")


def sharing_enabled() -> bool:
    return flag("ZOO_SHARE_TRUNK", True)


@dataclass
class Group:
    """Members (indices into the ensemble) that run one trunk of `k` layers; k == 0: a member on its own."""

    members: list[int]
    k: int = 0
    lead: int = field(init=False)

    def __post_init__(self) -> None:
        self.lead = self.members[0]

    @property
    def shared(self) -> bool:
        return self.k > 0 and len(self.members) > 1


# -- views of the model's own modules (zoo.families: where each family keeps them) ------------------


Passthrough = families.Passthrough
_view = families.view


def _structure(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.ModuleList] | None:
    """(base model, its encoder layers) when the model's family can be cut into a trunk and a tail
    (`zoo.families`: every family but ALBERT), else None (the member runs its own full forward)."""
    if not families.can_split(model):
        return None
    return families.base_of(model), families.layers(model)


def trunk_view(model: torch.nn.Module, k: int) -> torch.nn.Module:
    """The base model cut after layer k-1, without its pooler: `view(input_ids=...).last_hidden_state`."""
    return families.trunk_view(model, k)


def tail_view(model: torch.nn.Module, k: int, first_token: bool | None = None) -> torch.nn.Module:
    """The whole model from layer k on: `view(inputs_embeds=trunk hidden states, attention_mask=...)`. When the
    head reads only the first token (`reads_first_token_only`: plain BERT's sequence classifier;
    `first_token=False` or ZOO_FIRST_TOKEN=0: never), its last layer computes that token alone
    (`FirstTokenLayer`: the same logits)."""
    last = None
    if (first_token_enabled() if first_token is None else first_token) and reads_first_token_only(model):
        layers = families.layers(model)
        if len(layers) > k:
            last = FirstTokenLayer(layers[-1])
    return families.tail_view(model, k, last)


# -- the last layer of a classifier: the first token alone ---------------------------------------------


def first_token_enabled() -> bool:
    return flag("ZOO_FIRST_TOKEN", True)


def reads_first_token_only(model: torch.nn.Module) -> bool:
    """Whether nothing but the first token of the last layer reaches the model's output: BERT's sequence
    classifier, whose pooler reads [CLS] (exact classes only: a subclass may read more)."""
    from transformers.models.bert import modeling_bert as bert

    if type(model) is not bert.BertForSequenceClassification:
        return False
    base, config = model.base_model, model.config
    return (type(base) is bert.BertModel and type(base.pooler) is bert.BertPooler and not config.is_decoder
            and not config.add_cross_attention
            and all(type(layer) is bert.BertLayer for layer in base.encoder.layer))


class FirstTokenLayer(torch.nn.Module):
    """A BERT encoder layer that computes its output for the first token only ([batch, 1, hidden]): keys and
    values of every token (the first token attends to all of them), the query, attention output and
    feed-forward block of the first token alone. The last layer of a classifier whose pooler reads [CLS] needs
    nothing more: in a 24-token row it does about a fifth of a full layer's arithmetic, and the logits are the
    same (tests/modelzoo/test_trunk_sharing.py). Same parameters as the wrapped layer (a view)."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                *_: Any, **kwargs: Any) -> torch.Tensor:
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
        from transformers.models.bert.modeling_bert import eager_attention_forward
        from transformers.pytorch_utils import apply_chunking_to_forward

        layer = self.layer
        attention = layer.attention.self
        batch, length = hidden_states.shape[:2]
        first = hidden_states[:, :1]
        size = attention.attention_head_size
        query = attention.query(first).view(batch, 1, -1, size).transpose(1, 2)
        key = attention.key(hidden_states).view(batch, length, -1, size).transpose(1, 2)
        value = attention.value(hidden_states).view(batch, length, -1, size).transpose(1, 2)
        if attention_mask is not None and attention_mask.dim() == 4 and attention_mask.shape[-2] > 1:
            attention_mask = attention_mask[:, :, :1]  # the first query's row of a [batch, 1, query, key] mask
        interface = ALL_ATTENTION_FUNCTIONS.get_interface(attention.config._attn_implementation,
                                                          eager_attention_forward)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("encoder_attention_mask", "cache", "use_cache")}
        context, _ = interface(attention, query, key, value, attention_mask,
                               dropout=attention.dropout.p if attention.training else 0.0,
                               scaling=attention.scaling, **kwargs)
        attended = layer.attention.output(context.reshape(batch, 1, -1).contiguous(), first)
        return apply_chunking_to_forward(layer.feed_forward_chunk, layer.chunk_size_feed_forward, layer.seq_len_dim,
                                         attended)


def _views(predictor: Any) -> dict[tuple, torch.nn.Module]:
    views = predictor.__dict__.get("_trunk_views")
    if views is None:
        views = predictor.__dict__.setdefault("_trunk_views", {})
    return views


def _trunk_of(predictor: Any, k: int) -> torch.nn.Module:
    views = _views(predictor)
    if ("trunk", k) not in views:
        views[("trunk", k)] = trunk_view(predictor.model, k)
    return views[("trunk", k)]


def _tail_of(predictor: Any, k: int) -> torch.nn.Module:
    views = _views(predictor)
    key = ("tail", k, first_token_enabled())
    if key not in views:
        views[key] = tail_view(predictor.model, k, key[2])
    return views[key]


# -- detection ----------------------------------------------------------------------------------------


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.data_ptr() == b.data_ptr() and a.stride() == b.stride():
        return True
    a, b = a.detach().reshape(-1), b.detach().reshape(-1)
    if a.is_floating_point() or a.is_complex():  # bit patterns, not values (-0.0 vs 0.0, NaN)
        a, b = a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)
    return bool(torch.equal(a, b))


def same_tensors(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """Every parameter and buffer of the two modules has the same name, dtype, shape and bits."""
    ta = list(a.named_parameters()) + list(a.named_buffers())
    tb = list(b.named_parameters()) + list(b.named_buffers())
    return len(ta) == len(tb) and all(na == nb and _bits_equal(x, y) for (na, x), (nb, y) in zip(ta, tb, strict=True))


def tokenizer_key(tokenizer: Any) -> str:
    """What the tokenizer does, as a digest: the serialised fast tokenizer (vocabulary, normaliser, templates;
    not the truncation and padding state the last call left on it), or the vocabulary and settings of a slow
    one. Cached on the tokenizer."""
    cached = getattr(tokenizer, "_zoo_key", None)
    if cached:
        return cached
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # without the truncation and padding a call leaves set on it
        text = json.dumps({k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")},
                          sort_keys=True)
    else:
        text = json.dumps(sorted(tokenizer.get_vocab().items()))
    extra = repr((type(tokenizer).__name__, getattr(tokenizer, "padding_side", None),
                  getattr(tokenizer, "truncation_side", None), getattr(tokenizer, "pad_token_id", None),
                  getattr(tokenizer, "mask_token_id", None)))
    key = hashlib.sha256((text + extra).encode("utf-8")).hexdigest()
    with contextlib.suppress(AttributeError):
        tokenizer._zoo_key = key
    return key


def _encoding_key(predictor: Any) -> tuple:
    """Members with the same key turn the same inputs into the same batch."""
    return (tokenizer_key(predictor.tokenizer), predictor.head, predictor.max_length)


def _config_key(model: torch.nn.Module) -> tuple:
    config = model.config
    return (type(model.base_model),) + tuple(repr(getattr(config, key, None)) for key in TRUNK_CONFIG_KEYS)


def _fixed(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules outside the layers that a trunk decides and every tail uses (embeddings, ELECTRA's projection,
    relative-position tables: `families.trunk_modules(model, 0)`)."""
    return families.trunk_modules(model, 0)


def _layer_parts(model: torch.nn.Module, i: int) -> list[torch.nn.Module]:
    """Layer i and what the encoder runs right after it (DeBERTa-v2's convolution after layer 0)."""
    return [families.layers(model)[i], *(families.after_first(model) if i == 0 else ())]


def shared_layers(a: Any, b: Any) -> int:
    """How many leading encoder layers predictors `a` and `b` share bit for bit (with identical embeddings and
    relative-position tables, tokenizer, head and max length); 0 when they cannot share a trunk. At most all
    layers but the last: a tail runs at least one layer."""
    sa, sb = _structure(a.model), _structure(b.model)
    if sa is None or sb is None:
        return 0
    if a is b:
        return len(sa[1]) - 1
    if len(sa[1]) != len(sb[1]):
        return 0
    if _encoding_key(a) != _encoding_key(b) or _config_key(a.model) != _config_key(b.model):
        return 0
    if a.model.training or b.model.training:
        return 0
    fa, fb = _fixed(a.model), _fixed(b.model)
    if len(fa) != len(fb) or not all(same_tensors(x, y) for x, y in zip(fa, fb, strict=True)):
        return 0
    k = 0
    for i in range(len(sa[1]) - 1):
        pa, pb = _layer_parts(a.model, i), _layer_parts(b.model, i)
        if len(pa) != len(pb) or not all(same_tensors(x, y) for x, y in zip(pa, pb, strict=True)):
            break
        k += 1
    return k


_MADV_PAGEOUT = 21  # Linux >= 5.4: reclaim these pages (a hint: the data stay the same)


def _file_mappings() -> list[tuple[int, int]]:
    """(start, end) of this process's memory mappings of files, sorted (Linux; empty elsewhere)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end))
    return sorted(out)


def release_pages(modules: Sequence[torch.nn.Module]) -> None:
    """Hand back to the kernel the pages that comparing the tensors read in. Weights loaded from safetensors are
    a private mapping of the file, read in lazily: a forward touches only the rows of the word embeddings it
    looks up, but a comparison reads every byte (~47 MB per MiniLM member), which would otherwise stay in the
    worker's RSS. Only tensors inside a mapping of a file are concerned (weights in ordinary memory, e.g. a model
    built in this process, are left alone), and MADV_PAGEOUT never changes the data: a page is read back from the
    file when next used. Elsewhere than Linux this does nothing."""
    try:
        import bisect
        import ctypes
        import mmap

        madvise = ctypes.CDLL("libc.so.6", use_errno=True).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return
    mappings = _file_mappings()
    starts = [m[0] for m in mappings]
    page = mmap.PAGESIZE
    for module in modules:
        for tensor in list(module.parameters()) + list(module.buffers()):
            start = tensor.data_ptr()
            end = start + tensor.numel() * tensor.element_size()
            at = bisect.bisect_right(starts, start) - 1
            if at < 0 or end > mappings[at][1]:
                continue  # not (wholly) in a file mapping
            first, last = -(-start // page) * page, end // page * page  # whole pages inside the tensor
            if last > first:
                madvise(first, last - first, _MADV_PAGEOUT)


def plan(predictors: Sequence[Any], share: bool | None = None) -> list[Group]:
    """Groups of members that share a trunk (each with the layers all of them share), in member order; every
    other member is a group of its own (k = 0)."""
    share = sharing_enabled() if share is None else share
    groups: list[Group] = []
    compared: dict[int, Any] = {}
    for i, predictor in enumerate(predictors):
        if share:
            for group in groups:
                if group.k == 0 and len(group.members) > 1:
                    continue
                k = shared_layers(predictors[group.lead], predictor)
                compared.update({id(predictors[group.lead]): predictors[group.lead], id(predictor): predictor})
                if k >= 1:
                    group.k = k if len(group.members) == 1 else min(group.k, k)
                    group.members.append(i)
                    break
            else:
                groups.append(Group([i]))
        else:
            groups.append(Group([i]))
    for group in groups:
        if len(group.members) == 1:
            group.k = 0
    touched = [p.model for p in compared.values() if _structure(p.model)]
    release_pages([m for model in touched for m in families.trunk_modules(model, len(families.layers(model)))])
    return groups


_plans: dict[tuple[int, ...], tuple[tuple[weakref.ref, ...], bool, list[Group]]] = {}
_plans_lock = threading.Lock()


def cached_plan(predictors: Sequence[Any], share: bool | None = None) -> list[Group]:
    """`plan`, remembered for the same predictor objects (weak references: a predictor that was unloaded and
    whose id is reused is never mistaken for the old one)."""
    share = sharing_enabled() if share is None else share
    key = tuple(id(p) for p in predictors)
    with _plans_lock:
        found = _plans.get(key)
        if found and found[1] == share and all(r() is p for r, p in zip(found[0], predictors, strict=True)):
            return found[2]
    groups = plan(predictors, share)
    with _plans_lock:
        for stale in [k for k, (refs, _, _) in _plans.items() if any(r() is None for r in refs)]:
            del _plans[stale]
        _plans[key] = (tuple(weakref.ref(p) for p in predictors), share, groups)
    return groups


# -- the ensemble ------------------------------------------------------------------------------------


def _precision(predictor: Any, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """The autocast a member runs under: on a GPU the device's precision (bfloat16, else float16; float32 for a
    model that cannot run lower, `Predictor.autocast_ok`), in whichever thread runs it; on the CPU `dtype`."""
    where = getattr(predictor, "device", None)
    if where is not None and where.type != "cpu":
        return _device.autocast(where, predictor.amp_dtype if getattr(predictor, "autocast_ok", True) else None)
    return precision.autocast(dtype)


class SharedEnsemble(list):
    """The members (runtime.Predictor, in order) of one ensemble, with the trunks they share. A list of the
    predictors, so that it goes wherever a list of members goes (`explain.explain_ensemble`)."""

    def __init__(self, predictors: Sequence[Any], share: bool | None = None, groups: list[Group] | None = None,
                 pool: Executor | None = None):
        super().__init__(predictors)
        self.groups = groups if groups is not None else cached_plan(self, share)
        self.pool = pool  # runs the members' tails in parallel when a call gives no pool (the TorchServe worker's)

    @classmethod
    def of(cls, predictors: Sequence[Any]) -> SharedEnsemble:
        return predictors if isinstance(predictors, SharedEnsemble) else cls(predictors)

    def describe(self) -> list[tuple[list[int], int]]:
        """[(member indices, shared layers)] per group, e.g. [([0, 1, 2], 4)]: three members, one 4-layer trunk."""
        return [(list(g.members), g.k) for g in self.groups]

    def subset(self, indices: Sequence[int]) -> SharedEnsemble:
        """The members at `indices` (in that order) with the trunks they share (no new comparison)."""
        where = {m: i for i, m in enumerate(indices)}
        groups = []
        for group in self.groups:
            kept = [m for m in indices if m in group.members]
            if kept:
                groups.append(Group([where[m] for m in kept], group.k if len(kept) > 1 else 0))
        groups.sort(key=lambda g: g.lead)
        return SharedEnsemble([self[m] for m in indices], groups=groups, pool=self.pool)

    def group_of(self, member: int) -> Group:
        return next(g for g in self.groups if member in g.members)

    # -- forward passes ---------------------------------------------------------------------------

    def forward(self, group: Group, args: dict[str, torch.Tensor], members: Sequence[int] | None = None,
                pool: Executor | None = None, autocast: torch.dtype | None = None) -> dict[int, Any]:
        """The model outputs of `members` (default: the whole group) for one batch of model arguments: the
        group's trunk once (under its lead's lock), then each member's tail (under its own lock); a member on
        its own runs its full forward. Under torch.inference_mode; `autocast` (e.g. torch.bfloat16): run the
        matrix products in that precision (CPU autocast, set in whichever thread runs each part)."""
        members = list(group.members if members is None else members)
        pool = pool if pool is not None else self.pool
        if not group.shared:
            return {m: self._full(m, args, autocast) for m in members}
        lead = self[group.lead]
        with lead.lock, torch.inference_mode(), _precision(lead, autocast):
            hidden = _trunk_of(lead, group.k)(**args).last_hidden_state
        rest = {"inputs_embeds": hidden}
        if "attention_mask" in args:
            rest["attention_mask"] = args["attention_mask"]

        def tail(m: int) -> Any:
            with self[m].lock, torch.inference_mode(), _precision(self[m], autocast):
                return _tail_of(self[m], group.k)(**rest)

        if pool is not None and len(members) > 1:
            futures = {m: pool.submit(tail, m) for m in members}
            return {m: f.result() for m, f in futures.items()}
        return {m: tail(m) for m in members}

    def _full(self, m: int, args: dict[str, torch.Tensor], autocast: torch.dtype | None = None) -> Any:
        with self[m].lock, torch.inference_mode(), _precision(self[m], autocast):
            return self[m].model(**args)

    def predict(self, inputs: list[dict[str, str]], members: Sequence[int] | None = None,
                pool: Executor | None = None) -> list[list[dict[str, Any]]]:
        """Predictions [member][input] for `members` (default: all, in order), each group's trunk run once for
        the batch. Members on their own run `Predictor.predict` (in `pool` when given)."""
        members = list(range(len(self)) if members is None else members)
        pool = pool if pool is not None else self.pool
        if not inputs:
            return [[] for _ in members]
        wanted = set(members)
        out: dict[int, list[dict[str, Any]]] = {}
        futures = {}
        for group in self.groups:
            asked = [m for m in group.members if m in wanted]
            if not asked:
                continue
            if not group.shared or len(asked) == 1:
                for m in asked:
                    if pool is not None and len(members) > 1:
                        futures[m] = pool.submit(self[m].predict, inputs)
                    else:
                        out[m] = self[m].predict(inputs)
                continue
            out.update(self._predict_group(group, asked, inputs, pool))
        out.update({m: f.result() for m, f in futures.items()})
        return [out[m] for m in members]

    def _predict_group(self, group: Group, asked: list[int], inputs: list[dict[str, str]],
                       pool: Executor | None) -> dict[int, list[dict[str, Any]]]:
        lead = self[group.lead]
        with lead.lock:  # the tokenizer is not shared between threads mid-call
            encoding = lead.encode(inputs, offsets=lead.spec.needs_offsets)
        if isinstance(encoding, list):  # mixed text pairs: one input at a time
            rows = [self._predict_group(group, asked, [i], pool) for i in inputs]
            return {m: [r[m][0] for r in rows] for m in asked}
        outputs = self.forward(group, lead.model_args(encoding), asked, pool)
        if getattr(lead, "device", torch.device("cpu")).type != "cpu":
            outputs = {m: _device.to_cpu(o) for m, o in outputs.items()}
        return {m: self[m].spec.decode(encoding, outputs[m], inputs, self[m].labels) for m in asked}
