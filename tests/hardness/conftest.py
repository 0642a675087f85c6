from __future__ import annotations

import pytest
import torch

from research.hardbench.data import TextSet, load_sst2


@pytest.fixture(autouse=True)
def one_torch_thread():
    """On the shared 2-core machine two torch threads oversubscribe and run many times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tokenizer():
    from zoo.encoder import load_tokenizer

    return load_tokenizer()


@pytest.fixture
def tiny_encoder():
    """A tiny randomly initialised BERT sharing the real tokenizer's vocabulary (fast)."""
    from transformers import BertModel

    from zoo.encoder import tiny_config

    torch.manual_seed(0)
    return BertModel(tiny_config()).eval()


@pytest.fixture
def sst2_slice(data_dir) -> TextSet:
    """The first 48 rows of the real SST-2 train file."""
    return load_sst2(data_dir, "train", max_rows=48)
