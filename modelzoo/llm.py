"""The Django side of the generative-model providers (zoo.llm): a provider built from a task's settings.

A task names its provider in its config (`tasks.kinds.base.LLMProviderSettings`): the packaged local model, or
one of the operator's endpoints by name (`endpoint`, "default" unless it picks another) and, optionally, another
model the operator listed for that endpoint. The address, the key variable and whether private addresses are
allowed are the operator's (`settings.LLM_ENDPOINTS`, read through `zoo.llm.endpoints`): a task can send the
operator's key nowhere else. The key is read from the environment here and handed to the provider only: it is
never stored in a task's config, shown on a page, nor written into provenance (`Provider.describe`).
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from zoo.llm import build
from zoo.llm import endpoints as llm_endpoints
from zoo.llm.base import Provider, ProviderError
from zoo.llm.endpoints import Endpoint


def configured_endpoints() -> dict[str, Endpoint]:
    """The operator's endpoints by name (settings.LLM_ENDPOINTS, validated at start-up; a test may set plain
    dicts, validated here the same way)."""
    try:
        return llm_endpoints.parse(settings.LLM_ENDPOINTS)
    except ValueError as exc:
        raise ProviderError(f"the site's language model endpoints are misconfigured ({exc})", kind="config") from None


def endpoint_names() -> list[str]:
    """The endpoint names a task may pick ("default" first)."""
    return llm_endpoints.names(settings.LLM_ENDPOINTS)


def provider_config(provider_settings: Any) -> dict[str, Any]:
    """The zoo.llm config dict of a task's provider settings (an `LLMProviderSettings`)."""
    if provider_settings.provider == "local":
        return {"provider": "local", "path": settings.LLM_LOCAL_PATH or None, "threads": settings.LLM_LOCAL_THREADS}
    available = configured_endpoints()
    name = provider_settings.endpoint or llm_endpoints.DEFAULT
    endpoint = available.get(name)
    if endpoint is None:
        configured = ", ".join(sorted(available)) or "none"
        raise ProviderError(f"no language model endpoint named {name!r} is configured on this site (configured: "
                            f"{configured}); pick one of them in the task's settings, or ask the site's operator "
                            "to add it", kind="config")
    model = provider_settings.model or endpoint.model
    if not endpoint.offers(model):
        raise ProviderError(f"the endpoint {name!r} does not offer the model {model[:80]!r}; it offers "
                            f"{', '.join(endpoint.models)} (leave the model empty for {endpoint.model})",
                            kind="config")
    key = os.environ.get(endpoint.key_env, "") if endpoint.key_env else ""
    return {"provider": "openai", "endpoint": endpoint.name, "base_url": endpoint.url, "model": model,
            "api_key": key or None, "allow_private": endpoint.allow_private,
            "timeout_s": float(provider_settings.timeout_s), "retries": 2}


def provider_for(provider_settings: Any) -> Provider:
    """The provider a task's settings name (cheap: heavy state is cached per process by the provider)."""
    return build(provider_config(provider_settings))
