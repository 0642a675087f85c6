"""Typed readers for settings that come from environment variables.

Each reader fails loudly (ImproperlyConfigured) with the variable's name, the bad value and
what was expected, so a misconfigured deployment stops at start-up instead of misbehaving later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str | None = None, *, environ: Mapping[str, str] | None = None) -> str:
    value = _raw(name, environ)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"{name} must be set")
        return default
    return value


def env_bool(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of true/false, 1/0, yes/no, on/off")


def env_int(
    name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_list(name: str, default: Sequence[str], *, environ: Mapping[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name}={value!r} has an empty item; separate values with single commas")
    return items


def env_choice(
    name: str, default: str, choices: Sequence[str], *, environ: Mapping[str, str] | None = None
) -> str:
    value = (_raw(name, environ) or default).lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of: {', '.join(choices)}")
    return value


def env_url(
    name: str, default: str | None, schemes: Sequence[str], *, environ: Mapping[str, str] | None = None
) -> str | None:
    value = _raw(name, environ)
    if value is None:
        return default
    parsed = urlparse(value)
    if parsed.scheme not in schemes:
        raise ImproperlyConfigured(
            f"{name}={value!r} has scheme {parsed.scheme or '(none)'!r}; expected one of: {', '.join(schemes)}"
        )
    if parsed.scheme not in {"sqlite"} and not parsed.hostname:
        raise ImproperlyConfigured(f"{name}={value!r} has no host name")
    return value


def env_rate(name: str, default: str, *, environ: Mapping[str, str] | None = None) -> str:
    """A rate such as "5/hour" (a count per s, min, hour or day), as throttles read it."""
    value = _raw(name, environ) or default
    count, _, period = value.partition("/")
    if not count.isdigit() or period not in {"s", "sec", "m", "min", "h", "hour", "d", "day"}:
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate; use e.g. 5/hour (a count per s, min, hour or day)")
    return value


def env_path(name: str, default: Path, *, base: Path, environ: Mapping[str, str] | None = None) -> Path:
    value = _raw(name, environ)
    path = Path(value) if value is not None else default
    if not path.is_absolute():
        path = base / path
    if path.exists() and not path.is_dir():
        raise ImproperlyConfigured(f"{name}={str(path)!r} exists but is not a directory")
    return path.resolve()
