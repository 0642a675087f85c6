"""Generative models (no Django): one provider contract (`base.Provider`: generate, score, health) and its
registry. Importing this package loads no model and no native library; a provider loads what it needs on first use.

    from zoo.llm import build
    provider = build({"provider": "local"})                  # the packaged SmolLM2-135M-Instruct, offline
    provider = build({"provider": "openai", "base_url": "http://127.0.0.1:8089/v1", "model": "smollm2"})
    provider.generate("Write a short review.", n=3).texts
    provider.score("Is it positive or negative?", ["positive", "negative"]).logprobs

docs/llm.md says what each provider does, how scoring works and what a failure means.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from zoo.llm.base import Generation, Provider, ProviderError, Scores, Usage
from zoo.registry import Registry

__all__ = ["PROVIDERS", "Generation", "Provider", "ProviderError", "Scores", "Usage", "build", "provider_names"]


class ProviderEntry(NamedTuple):
    path: str  # "module:Class", imported when built (the local provider loads a native library)
    about: str  # what it is, for people (the task setting's description)


def _unknown(message: str) -> ProviderError:
    return ProviderError(message, kind="config")


PROVIDERS: Registry[ProviderEntry] = Registry("provider", error=_unknown)
PROVIDERS.register("local", ProviderEntry("zoo.llm.local:LocalProvider",
                                          "the packaged SmolLM2-135M-Instruct (offline)"))
PROVIDERS.register("openai", ProviderEntry("zoo.llm.openai_http:OpenAIProvider",
                                           "one of the site's OpenAI-compatible endpoints"))


def provider_names() -> list[str]:
    return list(PROVIDERS)


def described() -> str:
    """Every provider and what it is, in one line ("local: …; openai: …"), for settings forms."""
    return "; ".join(f"{name}: {entry.about}" for name, entry in PROVIDERS.items()) + "."


def provider_class(name: str) -> type[Provider]:
    import importlib

    module, _, attr = PROVIDERS.lookup(name).path.partition(":")
    return getattr(importlib.import_module(module), attr)


def build(config: dict[str, Any]) -> Provider:
    """A provider from a plain config: {"provider": name, ...the provider's own keys}."""
    options = dict(config)
    name = options.pop("provider", "local")
    return provider_class(name).from_config(options)
