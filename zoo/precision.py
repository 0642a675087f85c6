"""Lower-precision arithmetic on the CPU: whether this CPU multiplies bfloat16 natively, and the autocast
context that runs a model's matrix products in a given precision (None: float32). Used by word occlusion
(`explain.occlusion_dtype`) and training (`recipes.training_dtype`). No Django imports (packed into TorchServe
archives with `runtime.py`)."""

from __future__ import annotations

import contextlib
import functools

import torch


@functools.cache
def native_bf16() -> bool:
    """Whether the CPU multiplies bfloat16 in hardware (AMX or AVX-512 BF16). Elsewhere bfloat16 is emulated and
    slower than float32, so callers keep float32."""
    cpu = getattr(torch, "cpu", None)
    try:
        return bool(cpu._is_amx_tile_supported() or cpu._is_avx512_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def autocast(dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """CPU autocast to `dtype` in the calling thread (autocast state is per thread), or nothing for None."""
    return torch.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()
