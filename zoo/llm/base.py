"""The one contract for generative models (no Django): `Provider.generate` and `Provider.score`.

A provider is built from a plain dict (`zoo.llm.build(config)`; its `"provider"` names a registered class in
`zoo.llm.PROVIDERS`). Prompts are chat turns for an instruction-tuned model: a `system` text (the task's
instructions) and a `user` text; the provider applies its model's chat template (locally) or sends the turns
(HTTP). Every call reports what it cost (`Usage`: tokens in and out, seconds), so callers can record it per call.

Failures raise `ProviderError`: `kind` says which (down, timeout, quota, bad_response, config) and `retryable`
whether trying again later can help. Callers never let one delay or lose a submission (docs/llm.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

ErrorKind = Literal["down", "timeout", "quota", "bad_response", "config"]


class ProviderError(Exception):
    """A provider could not answer. `kind`: down (no connection), timeout, quota (429 / over budget),
    bad_response (the server answered something unusable), config (a setting is wrong: not retryable).

    `message` may be shown to writers and owners: it names the endpoint, never its address, an HTTP status or the
    server's text. `detail` is for the operator's log only (the address, the status, what the server said)."""

    def __init__(self, message: str, *, kind: ErrorKind, retryable: bool | None = None, detail: str = ""):
        super().__init__(message)
        self.message = message
        self.detail = detail or message
        self.kind = kind
        self.retryable = kind in ("down", "timeout", "quota") if retryable is None else retryable


@dataclass
class Usage:
    """What one call cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    calls: int = 1  # HTTP requests made (retries included)

    def as_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "seconds": round(self.seconds, 4), "calls": self.calls}


@dataclass
class Generation:
    texts: list[str]  # `n` candidates, stripped, in the order the model produced them
    model: str  # the model that wrote them (provider's own name for it)
    usage: Usage = field(default_factory=Usage)


@dataclass
class Scores:
    logprobs: list[float]  # one per continuation: log P(continuation | prompt), natural log
    model: str
    usage: Usage = field(default_factory=Usage)
    # "sequence": the whole continuation was scored; "first_token": only its first token (an HTTP server that
    # cannot echo prompt log-probabilities; label words differ in their first token)
    method: str = "sequence"


class Provider(ABC):
    """A generative model. Instances are cheap to build; heavy state (weights, sessions) is cached per process."""

    name: ClassVar[str]  # the registry key ("local", "openai")

    @property
    @abstractmethod
    def model(self) -> str:
        """The model's name as shown to people and stored in provenance."""

    @abstractmethod
    def generate(self, user: str, *, system: str = "", n: int = 1, max_tokens: int = 48,
                 temperature: float = 0.8, seed: int | None = None, prefix: str = "",
                 stop: list[str] | None = None) -> Generation:
        """`n` completions of the chat turn `user` (after `system`). `prefix`: the start of the answer, which the
        model continues (a list it extends by one item; servers that cannot continue an answer reply anew);
        the texts returned never include it. `stop`: strings that end a completion."""

    def converse(self, turns: list[dict[str, str]], *, system: str = "", max_tokens: int = 96,
                 temperature: float = 0.7, seed: int | None = None) -> Generation:
        """The next answer in a conversation: `turns` are {"role": "user" | "assistant", "content"} in order,
        ending with the user's message; one text comes back (the chat kind's targets)."""
        raise ProviderError(f"the {self.name} provider cannot hold a conversation", kind="config")

    @abstractmethod
    def score(self, user: str, continuations: list[str], *, system: str = "") -> Scores:
        """log P(continuation | the chat turn, as the start of the assistant's answer), one per continuation."""

    @abstractmethod
    def health(self, timeout_s: float = 2.0) -> dict[str, Any]:
        """{"status": "ok" | "down", "model": …, "detail": …}; never raises."""

    def describe(self) -> dict[str, Any]:
        """What provenance records: provider and model (never a key)."""
        return {"provider": self.name, "model": self.model}
