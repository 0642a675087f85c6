"""The operator's language model endpoints (no Django): named, each with its address, key variable and models.

An endpoint is what the operator configured (`LLM_ENDPOINTS`, and `LLM_BASE_URL` / `LLM_MODEL` / `LLM_API_KEY` as
the endpoint named "default"); a task picks one by name and may pick another model only among those the operator
listed for it. The key stays in the environment variable the operator named: it is read when a request is made,
and goes to that endpoint's address and nowhere else (docs/llm.md, docs/SECURITY.md).

    LLM_ENDPOINTS='{"team": {"url": "https://llm.example.org/v1", "model": "llama-3.1-8b",
                             "models": ["llama-3.1-70b"], "key_env": "LLM_TEAM_KEY"},
                    "gpu-box": {"url": "http://10.0.0.7:8000/v1", "model": "qwen2.5-7b", "allow_private": true}}'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from zoo.llm.egress import host_problem

DEFAULT = "default"
NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
KEY_ENV_RE = re.compile(r"LLM_[A-Z0-9_]{1,96}")
FIELDS = {"url", "model", "models", "key_env", "allow_private"}


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: str  # the base URL, e.g. https://llm.example.org/v1 (no trailing slash)
    model: str  # the model a task gets when it names none
    models: tuple[str, ...]  # every model a task may name (`model` first)
    key_env: str = ""  # the environment variable holding the key ("" : no key is sent)
    allow_private: bool = False  # the operator allows loopback, private and link-local addresses for it

    def offers(self, model: str) -> bool:
        return model in self.models


def _problem_of_url(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http:// or https:// address with a host"
    if parts.username or parts.password:
        return "carries credentials in the address; name a key variable (key_env) instead"
    if parts.query or parts.fragment:
        return "has a query or fragment; give the base URL (e.g. https://llm.example.org/v1)"
    return None


def endpoint(name: str, spec: Mapping[str, Any] | Endpoint) -> Endpoint:
    """One endpoint from the operator's JSON (ValueError saying what is wrong)."""
    if isinstance(spec, Endpoint):
        return spec
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"endpoint name {name[:60]!r} must be lower-case letters, digits, - and _ "
                         "(at most 40, starting with a letter)")
    if not isinstance(spec, Mapping):
        raise ValueError(f"endpoint {name!r} must be an object with url and model")
    unknown = sorted(set(spec) - FIELDS)
    if unknown:
        raise ValueError(f"endpoint {name!r} has unknown field(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(FIELDS))}")
    url, model = spec.get("url"), spec.get("model")
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"endpoint {name!r} needs a url")
    url = url.strip().rstrip("/")
    problem = _problem_of_url(url)
    if problem:
        raise ValueError(f"endpoint {name!r}: {url!r} {problem}")
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"endpoint {name!r} needs a model (the model a task gets when it names none)")
    models = spec.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) and m.strip() for m in models):
        raise ValueError(f"endpoint {name!r}: models must be a list of model names")
    key_env = spec.get("key_env", "")
    if not isinstance(key_env, str) or (key_env and not KEY_ENV_RE.fullmatch(key_env)):
        raise ValueError(f"endpoint {name!r}: key_env must name an environment variable starting with LLM_ "
                         "(upper-case letters, digits and _)")
    allow_private = spec.get("allow_private", False)
    if not isinstance(allow_private, bool):
        raise ValueError(f"endpoint {name!r}: allow_private must be true or false")
    if not allow_private:
        refused = host_problem(urlsplit(url).hostname or "")
        if refused:
            raise ValueError(f"endpoint {name!r}: {refused}; set \"allow_private\": true if the operator means it")
    ordered = tuple(dict.fromkeys([model.strip(), *(m.strip() for m in models)]))
    return Endpoint(name=name, url=url, model=model.strip(), models=ordered, key_env=key_env,
                    allow_private=allow_private)


def parse(raw: Mapping[str, Any], *, default: Mapping[str, Any] | None = None) -> dict[str, Endpoint]:
    """Every endpoint of the operator's JSON object (already parsed ones pass as they are); `default`, the legacy
    LLM_BASE_URL / LLM_MODEL / LLM_API_KEY settings, becomes the endpoint named "default"."""
    if not isinstance(raw, Mapping):
        raise ValueError("must be a JSON object of endpoints by name")
    out = {name: endpoint(name, spec) for name, spec in raw.items()}
    if default is not None:
        if DEFAULT in out:
            raise ValueError('names an endpoint "default" while LLM_BASE_URL is set too; keep one of them')
        out[DEFAULT] = endpoint(DEFAULT, default)
    return out


def legacy_default(base_url: str, model: str, allow_private: bool) -> dict[str, Any] | None:
    """The endpoint LLM_BASE_URL / LLM_MODEL / LLM_API_KEY describe (None when LLM_BASE_URL is unset)."""
    if not base_url:
        return None
    if not model:
        raise ValueError("LLM_BASE_URL is set without LLM_MODEL: set the model the endpoint serves")
    return {"url": base_url, "model": model, "key_env": "LLM_API_KEY", "allow_private": allow_private}


def names(configured: Mapping[str, Any]) -> list[str]:
    """The names a task may pick: "default" first (always offered; it may be unconfigured), then the others."""
    return [DEFAULT, *sorted(name for name in configured if name != DEFAULT)]


def matching(configured: Mapping[str, Endpoint], url: str, key_env: str = "") -> str | None:
    """The endpoint an old task config meant by its own base URL (and key variable), if the operator has one."""
    wanted = url.strip().rstrip("/")
    found = [e for e in configured.values() if e.url == wanted]
    exact = [e for e in found if key_env and e.key_env == key_env]
    return (exact or found)[0].name if found else None
