"""The Django side of the generative-model providers (zoo.llm): a provider built from a task's settings.

A task names its provider in its config (`tasks.kinds.base.LLMProviderSettings`: provider, base URL, model, the
name of the environment variable holding the key); empty HTTP fields fall back to the site's LLM_BASE_URL,
LLM_MODEL and LLM_API_KEY. The key is read from the environment here and handed to the provider only: it is
never stored in a task's config, shown on a page, nor written into provenance (`Provider.describe`).
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from zoo.llm import build
from zoo.llm.base import Provider, ProviderError


def provider_config(provider_settings: Any) -> dict[str, Any]:
    """The zoo.llm config dict of a task's provider settings (an `LLMProviderSettings`)."""
    if provider_settings.provider == "local":
        return {"provider": "local", "path": settings.LLM_LOCAL_PATH or None, "threads": settings.LLM_LOCAL_THREADS}
    base_url = provider_settings.base_url or settings.LLM_BASE_URL
    model = provider_settings.model or settings.LLM_MODEL
    if not base_url or not model:
        raise ProviderError("the OpenAI-compatible provider needs a base URL and a model name (the task's settings "
                            "or LLM_BASE_URL / LLM_MODEL)", kind="config")
    key_env = provider_settings.api_key_env
    key = os.environ.get(key_env, "") if key_env else settings.LLM_API_KEY
    return {"provider": "openai", "base_url": base_url, "model": model, "api_key": key or None,
            "timeout_s": float(provider_settings.timeout_s), "retries": 2}


def provider_for(provider_settings: Any) -> Provider:
    """The provider a task's settings name (cheap: heavy state is cached per process by the provider)."""
    return build(provider_config(provider_settings))
