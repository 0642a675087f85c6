"""The model library's environment flags (`ZOO_*`), read by name with a typed reader.

The library runs without Django (TorchServe, scripts), so it reads its few process-level switches from the
environment itself, here, and refuses a value it does not understand, naming the variable: a typo such as
`ZOO_FIRST_TOKEN=of` raises instead of quietly meaning "on". Every flag is listed in FLAGS (documented in
docs/modelzoo.md, "Environment flags").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

__all__ = ["FLAGS", "choice", "flag", "integer", "text"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

# name -> (default, meaning): the one list of the library's environment flags.
FLAGS: dict[str, tuple[str, str]] = {
    "ZOO_TORCH_THREADS": ("1", "torch intra-op threads per process; 0 = torch's own choice (zoo.runtime)"),
    "ZOO_MEMBER_THREADS": ("0", "TorchServe: threads running an ensemble's members; 0 = min(members, CPUs)"),
    "ZOO_SHARE_TRUNK": ("on", "members with the same frozen lower layers run them once per batch (zoo.trunk)"),
    "ZOO_FIRST_TOKEN": ("on", "a classifier's last layer computes the first token alone (zoo.trunk)"),
    "ZOO_DEVICE": ("auto", "where models compute: auto (a CUDA GPU when there is one), cpu, cuda or cuda:N; CUDA asked "
                           "for and absent is an error at start (zoo.device)"),
    "ZOO_MPNET_DIR": ("var/encoders/all-mpnet-base-v2", "where `make mpnet` unpacks the opt-in all-mpnet-base-v2 "
                                                       "(zoo.encoders.mpnet_folder)"),
    "ZOO_OCCLUSION_PRECISION": ("auto", "an occlusion map's batch: auto, bf16 or fp32 (zoo.explain)"),
}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def flag(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    """An on/off flag: 1/0, true/false, yes/no, on/off (any case); unset or empty: `default`."""
    value = _raw(name, environ)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{name}={value!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def choice(name: str, default: str, choices: Sequence[str], *, aliases: Mapping[str, str] | None = None,
           environ: Mapping[str, str] | None = None) -> str:
    """One of `choices` (any case); `aliases` map other spellings to one of them; unset or empty: `default`."""
    value = _raw(name, environ)
    if value is None:
        return default
    value = value.lower()
    value = (aliases or {}).get(value, value)
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of: {', '.join(choices)}")
    return value


def integer(name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None) -> int:
    """A whole number, at least `minimum`; unset or empty: `default`."""
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{name}={number} must be at least {minimum}")
    return number


def text(name: str, default: str = "", *, environ: Mapping[str, str] | None = None) -> str:
    """A free value (a path, a device spelling the caller checks), stripped; unset or empty: `default`."""
    value = _raw(name, environ)
    return default if value is None else value
