"""For tests anywhere: an operator endpoint (settings.LLM_ENDPOINTS) on a test server's address, and the task
provider settings that pick it. A task no longer names an address (docs/llm.md, Endpoints); a test that wants
its language model on a local server or a closed port configures it as the operator would, allowing the
loopback address for it.

    provider = use_endpoint(settings, f"http://127.0.0.1:{port}/v1", model="describer")   # in a test
    provider = down_endpoint(settings, timeout_s=2)            # an endpoint on a port nothing listens on
    make_task("sentiment", config={"assistant": {"enabled": True, "provider": provider}})
"""

from __future__ import annotations

import socket
from typing import Any


def use_endpoint(settings, url: str, *, name: str = "test", model: str = "m", key_env: str = "",
                 **provider: Any) -> dict[str, Any]:
    """Add the endpoint `name` at `url` (loopback allowed) to the operator's endpoints; the provider settings
    (`{"provider": "openai", "endpoint": name, ...}`, plus `provider`'s keys, e.g. timeout_s) that pick it."""
    spec = {"url": url, "model": model, "allow_private": True, **({"key_env": key_env} if key_env else {})}
    settings.LLM_ENDPOINTS = {**settings.LLM_ENDPOINTS, name: spec}
    return {"provider": "openai", "endpoint": name, **provider}


def down_endpoint(settings, *, name: str = "down", model: str = "m", **provider: Any) -> dict[str, Any]:
    """An endpoint on a loopback port nothing listens on: every call fails as `down` ("does not answer")."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return use_endpoint(settings, f"http://127.0.0.1:{port}/v1", name=name, model=model, **provider)
