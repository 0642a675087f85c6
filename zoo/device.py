"""Where the library computes: the device policy (`ZOO_DEVICE`) and mixed precision on it.

``ZOO_DEVICE``: ``auto`` (the default: the first CUDA device when there is one, else the CPU), ``cpu``, ``cuda``
or ``cuda:N``. Asking for CUDA where torch sees none raises `DeviceError` — callers check at start
(`check()`: the site's system check, a Celery worker's start, the TorchServe handler's initialize), never
a silent CPU run. On a GPU, training and inference autocast to bfloat16 where the card has it, else float16
(training then scales the loss with a `GradScaler`); on the CPU the existing policy holds (`zoo.precision`:
bfloat16 only where the CPU multiplies it natively, training in float32). No Django imports.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

import torch

from zoo import flags

FLAG = "ZOO_DEVICE"
_SPEC = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


class DeviceError(RuntimeError):
    """A device that was asked for and is not here; the message says what torch sees."""


def asked(value: str | None = None) -> str:
    """The device asked for: `value`, else ZOO_DEVICE, else "auto" (validated spelling)."""
    text = (value if value is not None else flags.text(FLAG)) or "auto"
    text = text.strip().lower()
    if not _SPEC.match(text):
        raise DeviceError(f"{FLAG}={text!r} is not one of: auto, cpu, cuda, cuda:N")
    return text


def resolve(value: str | None = None) -> torch.device:
    """The torch device for `value` (or ZOO_DEVICE). CUDA asked for and absent: DeviceError."""
    text = asked(value)
    if text == "auto":
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        build = "a CPU-only build of torch" if torch.version.cuda is None else f"torch built for CUDA {torch.version.cuda}"
        raise DeviceError(f"{FLAG}={text} but torch sees no CUDA device here ({build} {torch.__version__}); "
                          f"set {FLAG}=cpu or auto, or install a CUDA build of torch (docs/DEPLOY.md, GPUs)")
    device = torch.device(text)
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index >= torch.cuda.device_count():
        raise DeviceError(f"{FLAG}={text} but torch sees {torch.cuda.device_count()} CUDA device(s)")
    return torch.device("cuda", index)


def check(value: str | None = None) -> torch.device:
    """Resolve at start-up; the same errors as `resolve` (named so callers read as a start-up check)."""
    return resolve(value)


def pinned(device: torch.device | str | None = None, gpu_index: int | None = None) -> torch.device:
    """The device a worker uses: TorchServe passes the GPU it gives the worker (`gpu_id`); with ZOO_DEVICE
    auto or cuda that GPU is used, with ZOO_DEVICE=cpu the CPU."""
    if device is not None:
        return torch.device(device)
    text = asked()
    if gpu_index is not None and text in ("auto", "cuda") and torch.cuda.is_available():
        return torch.device("cuda", gpu_index)
    return resolve(text)


def amp_dtype(device: torch.device) -> torch.dtype | None:
    """The autocast precision on `device`: bfloat16 on a GPU that has it, else float16; None on the CPU (the
    CPU's own policy lives in zoo.precision)."""
    if device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """Autocast on the device's type to `dtype` (None: full precision)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def grad_scaler(device: torch.device, dtype: torch.dtype | None) -> Any:
    """A loss scaler for float16 training on a GPU (bfloat16 and float32 need none): None otherwise."""
    if device.type == "cuda" and dtype == torch.float16:
        return torch.amp.GradScaler("cuda")
    return None


def to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """A batch's tensors on `device` (non-blocking from pinned memory); other values as they are."""
    if device.type == "cpu":
        return batch
    return {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def to_cpu(output: Any) -> Any:
    """A model output with its tensors on the CPU (decoding and explanations read them there)."""
    if isinstance(output, torch.Tensor):
        return output.cpu()
    if hasattr(output, "items"):
        return type(output)(**{k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in output.items()})
    return output


def memory_gb(device: torch.device) -> float | None:
    """Total memory of a GPU in GiB (None on the CPU): sizes batches and token budgets."""
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).total_memory / 2**30


def batch_size_for(device: torch.device, asked_size: int, parameters: int) -> int:
    """The batch a device takes: the asked size on the CPU; on a GPU, the asked size unless the card's memory
    is too small for it at this model size (a rough bound: ~18 bytes per parameter for weights, gradients and
    AdamW state, activations proportional to the batch), never below 1."""
    gb = memory_gb(device)
    if gb is None:
        return asked_size
    free = gb * 2**30 - parameters * 18
    per_example = max(parameters * 0.6, 1.0)  # activations at 128 tokens, measured order of magnitude
    fits = int(free / per_example) if free > 0 else 1
    return max(1, min(asked_size, fits))


def describe(device: torch.device) -> dict[str, Any]:
    """What a report or a log line says of the device (the card's name on a GPU)."""
    if device.type != "cuda":
        return {"device": "cpu", "threads": torch.get_num_threads()}
    props = torch.cuda.get_device_properties(device)
    return {"device": str(device), "name": props.name, "memory_gb": round(props.total_memory / 2**30, 1),
            "bf16": torch.cuda.is_bf16_supported(), "cuda": torch.version.cuda}


def environment() -> dict[str, str]:
    """ZOO_DEVICE as this process sees it (for a job handed to another process)."""
    return {FLAG: os.environ.get(FLAG, "auto")}
