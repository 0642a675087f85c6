"""Tokenising in length-sorted batches with dynamic padding, and mean pooling.

SST-2 phrases are short (9 words on average), so sorting by length and padding each batch only to its own
longest row is what makes the frozen pass fast (≈330 sentences/s for MiniLM on 2 cores).

A row is one text, or a pair `(text, text_pair)` (NLI: premise and hypothesis), which the tokenizer encodes
as two segments ([CLS] a [SEP] b [SEP], with token type ids where the family has them), never as one joined
string. Any encoder family runs here (`zoo.encoders`): the model is called with what its tokenizer gives it
(no token type ids for RoBERTa, DistilBERT, MPNet, ...). Batches go to the encoder's device (`zoo.device`); on a
GPU the frozen passes autocast to the device's precision (`zoo.device.amp_dtype`), on the CPU nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

MAX_LENGTH = 64
PAIR_MAX_LENGTH = 128

Text = str | tuple[str, str | None]  # one text, or a (first, second) pair of segments


def row_length(row: Text) -> int:
    return len(row) if isinstance(row, str) else sum(len(part or "") for part in row)


def tokenize(tokenizer, rows: Sequence[Text], max_length: int | None = None, **kwargs):
    """Tokenise texts, or pairs as two segments; padded to the longest row, as tensors."""
    if rows and not isinstance(rows[0], str):
        firsts, seconds = [r[0] for r in rows], [r[1] for r in rows]
        if any(s is not None for s in seconds):
            if any(s is None for s in seconds):
                raise ValueError("a batch mixes pairs and single texts")
            return tokenizer(firsts, seconds, padding=True, truncation=True,
                             max_length=max_length or PAIR_MAX_LENGTH, return_tensors="pt", **kwargs)
        rows = firsts
    return tokenizer(list(rows), padding=True, truncation=True, max_length=max_length or MAX_LENGTH,
                     return_tensors="pt", **kwargs)


@dataclass
class Batch:
    index: np.ndarray  # positions of these rows in the caller's list
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor | None = None  # segment ids of pairs


def length_sorted_batches(
    tokenizer, texts: Sequence[Text], batch_size: int, max_length: int | None = None
) -> Iterator[Batch]:
    """Batches over `texts` (texts or pairs) in length order (stable), each padded to its own longest row."""
    order = np.argsort([row_length(t) for t in texts], kind="stable")
    for start in range(0, len(order), batch_size):
        index = order[start : start + batch_size]
        enc = tokenize(tokenizer, [texts[i] for i in index], max_length)
        pair = not isinstance(texts[index[0]], str) and texts[index[0]][1] is not None
        yield Batch(index, enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids") if pair else None)


def device_of(module: torch.nn.Module) -> torch.device:
    """Where a model's weights are (the CPU for a model without any)."""
    param = next(module.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def model_inputs(batch: Batch, device: torch.device | None = None) -> dict[str, torch.Tensor]:
    """The keyword arguments an encoder of any family takes for a batch (token type ids only when the tokenizer
    gave them for pairs), on `device`."""
    inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    if batch.token_type_ids is not None:
        inputs["token_type_ids"] = batch.token_type_ids
    if device is not None and device.type != "cpu":
        inputs = {k: v.to(device, non_blocking=True) for k, v in inputs.items()}
    return inputs


def frozen_autocast(device: torch.device):
    """Mixed precision for a frozen (no-gradient) pass on a GPU; a no-op on the CPU."""
    from zoo.device import amp_dtype, autocast

    return autocast(device, amp_dtype(device))


def n_batches(n: int, batch_size: int) -> int:
    return (n + batch_size - 1) // batch_size


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(batch, seq) 0/1 mask → (batch, 1, 1, seq) additive attention mask, as a BERT block takes it."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean over tokens (sentence-transformers pooling, without the L2 norm: the norm of h matters
    to GradNorm, and a head on normalised features would make GradNorm a multiple of EL2N)."""
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(-2) / mask.sum(-2).clamp(min=1.0)


@torch.inference_mode()
def embed_texts(
    encoder, tokenizer, texts: Sequence[Text], batch_size: int = 64, progress: str | None = None
) -> np.ndarray:
    """Mean-pooled features of a frozen encoder, float32, in the order of `texts` (texts or pairs)."""
    encoder.eval()
    device = device_of(encoder)
    out = np.zeros((len(texts), hidden_size(encoder)), dtype=np.float32)
    batches = length_sorted_batches(tokenizer, texts, batch_size)
    for batch in tqdm(batches, total=n_batches(len(texts), batch_size), desc=progress, disable=progress is None):
        inputs = model_inputs(batch, device)
        with frozen_autocast(device):
            hidden = encoder(**inputs).last_hidden_state
        out[batch.index] = mean_pool(hidden.float(), inputs["attention_mask"]).cpu().numpy()
    return out


def hidden_size(encoder) -> int:
    """The width of an encoder's output (DistilBERT's config calls it `dim`; it is aliased as hidden_size)."""
    config = encoder.config
    return int(getattr(config, "hidden_size", None) or config.dim)
