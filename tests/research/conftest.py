"""The reproduction runs on the hardness library: the same fixtures (one torch thread, tiny encoder)."""

from tests.hardness.conftest import one_torch_thread, tiny_encoder, tokenizer  # noqa: F401
