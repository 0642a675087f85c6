from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from hardness.deep import gradnorm_deep, gradnorm_deep_naive
from hardness.encoding import embed_texts
from hardness.heads import probs_of
from hardness.scores import head_gradnorm


def _head(dim: int, seed: int = 1) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(dim, 2)


def test_closed_form_head_gradnorm_equals_autograd_per_example_norm(tiny_encoder, tokenizer, sst2_slice):
    feats = embed_texts(tiny_encoder, tokenizer, sst2_slice.texts)
    head = _head(feats.shape[1])
    expected = []
    for h, y in zip(torch.from_numpy(feats), torch.from_numpy(sst2_slice.labels), strict=True):
        loss = nn.functional.cross_entropy(head(h[None]), y[None])
        grads = torch.autograd.grad(loss, list(head.parameters()))
        expected.append(float(torch.sqrt(sum(g.pow(2).sum() for g in grads))))
    closed = head_gradnorm(probs_of(head, feats), feats, sst2_slice.labels)
    np.testing.assert_allclose(closed, expected, rtol=1e-5)


@pytest.mark.parametrize("method", ["vmap", "ghost"])
def test_gradnorm_deep_equals_naive_per_example_backward_loop(tiny_encoder, tokenizer, sst2_slice, method):
    head = _head(tiny_encoder.config.hidden_size)
    batched = gradnorm_deep(tiny_encoder, head, tokenizer, sst2_slice.texts, sst2_slice.labels, 16, method=method)
    naive = gradnorm_deep_naive(tiny_encoder, head, tokenizer, sst2_slice.texts, sst2_slice.labels)
    np.testing.assert_allclose(batched, naive, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("method", ["vmap", "ghost"])
def test_gradnorm_deep_does_not_depend_on_batch_padding(tiny_encoder, tokenizer, sst2_slice, method):
    head = _head(tiny_encoder.config.hidden_size)
    texts, labels = sst2_slice.texts[:12], sst2_slice.labels[:12]
    one = gradnorm_deep(tiny_encoder, head, tokenizer, texts, labels, batch_size=1, method=method)
    many = gradnorm_deep(tiny_encoder, head, tokenizer, texts, labels, batch_size=12, method=method)
    np.testing.assert_allclose(one, many, rtol=1e-4, atol=1e-6)


def test_gradnorm_deep_leaves_word_embeddings_out(tiny_encoder, tokenizer, sst2_slice):
    """Changing the word-embedding matrix changes inputs, not the set of parameters the norm covers."""
    from hardness.deep import TopBlockHead

    model = TopBlockHead(tiny_encoder, _head(tiny_encoder.config.hidden_size))
    names = [n for n, _ in model.named_parameters()]
    assert all(n.startswith(("block.", "head.")) for n in names)
    assert not any("word_embeddings" in n for n in names)
