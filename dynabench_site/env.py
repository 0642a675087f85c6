"""Typed readers for settings that come from environment variables.

Each reader fails loudly (ImproperlyConfigured) with the variable's name, the bad value and
what was expected, so a misconfigured deployment stops at start-up instead of misbehaving later.
"""

from __future__ import annotations

import json
import os
import secrets
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


def env_secret_key(name: str, path: Path, *, environ: Mapping[str, str] | None = None) -> str:
    """The variable when set; else a key generated once into `path` (mode 0600) and reused afterwards.

    Never a fixed fallback: a key in the source would let anyone forge sessions and password-reset links,
    and re-identify the exports' pseudonymous annotator ids. Concurrent first starts (several web
    processes) agree on one key: the file appears complete or not at all (written aside, then linked).
    """
    value = _raw(name, environ)
    if value is not None:
        return value
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}")
        descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_urlsafe(50))
        try:
            os.link(aside, path)
        except FileExistsError:
            pass  # another process wrote it first: use theirs
        finally:
            aside.unlink()
    if path.stat().st_mode & 0o077:
        raise ImproperlyConfigured(f"{path} (the generated {name}) is readable by others; run: chmod 600 {path}")
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < 50:
        raise ImproperlyConfigured(f"{path} holds no usable {name}; delete it to generate a new one, or set {name}")
    return key


def env_origins(name: str, default: Sequence[str], *, environ: Mapping[str, str] | None = None) -> list[str]:
    """Origins such as "https://dynabench.example.org" (scheme and host, optionally a port; no path)."""
    origins = env_list(name, default, environ=environ)
    for origin in origins:
        parsed = urlparse(origin)
        if parsed.scheme not in {"http", "https"} or not parsed.netloc or parsed.path not in {"", "/"}:
            raise ImproperlyConfigured(
                f"{name}={origin!r} is not an origin; use scheme://host[:port], e.g. https://dynabench.example.org"
            )
    return origins


def env_header(name: str, *, environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """A request header and the value that marks a request as secure, written "Header-Name=value" (e.g.
    "X-Forwarded-Proto=https"), as Django's SECURE_PROXY_SSL_HEADER wants it: ("HTTP_X_FORWARDED_PROTO", "https")."""
    value = _raw(name, environ)
    if value is None:
        return None
    header, _, expected = value.partition("=")
    header, expected = header.strip(), expected.strip()
    if not header or not expected or not all(ch.isalnum() or ch == "-" for ch in header):
        raise ImproperlyConfigured(f"{name}={value!r} is not Header-Name=value; use e.g. X-Forwarded-Proto=https")
    return "HTTP_" + header.upper().replace("-", "_"), expected


def env_json_object(name: str, default: Mapping[str, object], *, environ: Mapping[str, str] | None = None) -> dict:
    """A JSON object such as '{"seeds": [0, 1], "epochs": 1}' (defaults of a group of options, keyed by name)."""
    value = _raw(name, environ)
    if value is None:
        return dict(default)
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not JSON; use an object, e.g. {{\"epochs\": 1}}") from None
    if not isinstance(parsed, dict):
        raise ImproperlyConfigured(f"{name}={value!r} is not a JSON object; use e.g. {{\"epochs\": 1}}")
    return parsed
