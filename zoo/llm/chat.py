"""What the two providers share: the OpenAI chat-completions request they send (the local provider hands it to
llama.cpp's server in process, the HTTP provider posts it) and how a label word's log-probability is read from
the first generated token's top log-probabilities.

Scoring a continuation by its first token. An OpenAI-compatible server returns the log-probabilities of the
tokens it generates, not of a text the caller supplies (only some servers `echo` the prompt's). So `score` asks
for one token with the `top_logprobs` most likely ones, and a continuation's score is the probability mass of the
top tokens that begin it and no other continuation: "positive" collects " positive", "Positive" and "pos" (case
and surrounding blanks ignored), but "ne", which begins both "negative" and "neutral", counts for neither. Label
words differ in their first token (the prompts say the label words; zoo.llm.prompts), so this ranks them as the
whole word would. A continuation none of whose beginnings is among the top tokens gets the smallest log-probability
seen minus log 2: less likely than anything listed, and finite, so offsets can still be fitted.
"""

from __future__ import annotations

import math
from typing import Any

from zoo.llm.base import ProviderError, Usage

TOP_LOGPROBS = 20  # OpenAI's maximum; llama.cpp accepts more, but every endpoint accepts 20


def messages(user: str, system: str = "", prefix: str = "") -> list[dict[str, str]]:
    """The chat turns; a `prefix` is the start of the assistant's answer, for the model to continue (llama.cpp's
    server continues a final assistant turn; so does vLLM with `continue_final_message`)."""
    turns = [{"role": "system", "content": system}] if system else []
    turns.append({"role": "user", "content": user})
    if prefix:
        turns.append({"role": "assistant", "content": prefix})
    return turns


def generate_request(user: str, system: str, max_tokens: int, temperature: float, seed: int | None,
                     prefix: str = "", stop: list[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": messages(user, system, prefix), "max_tokens": int(max_tokens),
                            "temperature": float(temperature), "top_p": 0.95}
    if seed is not None:
        body["seed"] = int(seed)
    if stop:
        body["stop"] = list(stop)[:4]  # OpenAI's limit
    return body


def converse_request(turns: list[dict[str, str]], system: str, max_tokens: int, temperature: float,
                     seed: int | None) -> dict[str, Any]:
    """A multi-turn request: `turns` alternate user and assistant, ending with the user's message."""
    if not turns or turns[-1].get("role") != "user":
        raise ProviderError("a conversation must end with the user's message", kind="config")
    if any(t.get("role") not in ("user", "assistant") or not isinstance(t.get("content"), str) for t in turns):
        raise ProviderError("conversation turns are user or assistant messages with text", kind="config")
    messages_ = ([{"role": "system", "content": system}] if system else []) + [
        {"role": t["role"], "content": t["content"]} for t in turns]
    body: dict[str, Any] = {"messages": messages_, "max_tokens": int(max_tokens), "temperature": float(temperature),
                            "top_p": 0.95}
    if seed is not None:
        body["seed"] = int(seed)
    return body


def without_prefix(texts: list[str], prefix: str) -> list[str]:
    """The continuations alone: a server that continues the answer may return it whole, prefix included."""
    if not prefix:
        return texts
    stripped = prefix.strip()
    return [t[len(stripped):].strip() if stripped and t.startswith(stripped) else t for t in texts]


def score_request(user: str, system: str, top: int = TOP_LOGPROBS) -> dict[str, Any]:
    return {"messages": messages(user, system), "max_tokens": 1, "temperature": 0.0, "logprobs": True,
            "top_logprobs": int(top)}


def text_of(response: dict[str, Any]) -> list[str]:
    try:
        return [str(choice["message"]["content"] or "").strip() for choice in response["choices"]]
    except (KeyError, TypeError) as exc:
        raise ProviderError(f"the model's answer has no message text ({exc})", kind="bad_response") from exc


def usage_of(response: dict[str, Any], seconds: float, calls: int = 1) -> Usage:
    usage = response.get("usage") or {}
    return Usage(prompt_tokens=int(usage.get("prompt_tokens") or 0),
                 completion_tokens=int(usage.get("completion_tokens") or 0), seconds=seconds, calls=calls)


def top_tokens(response: dict[str, Any]) -> list[tuple[str, float]]:
    """The first generated token's top (token, logprob) pairs."""
    try:
        content = response["choices"][0]["logprobs"]["content"]
        return [(str(t["token"]), float(t["logprob"])) for t in content[0]["top_logprobs"]]
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderError("the model server returned no token log-probabilities (it must support `logprobs` and "
                            f"`top_logprobs` in chat completions): {exc}", kind="bad_response") from exc


def _norm(text: str) -> str:
    return text.strip().lower()


def first_token_scores(top: list[tuple[str, float]], continuations: list[str]) -> list[float]:
    """Each continuation's log-probability from the first token's top log-probabilities (the module's rule)."""
    words = [_norm(c) for c in continuations]
    mass = [0.0] * len(words)
    for token, logprob in top:
        piece = _norm(token)
        if not piece:
            continue
        owners = [i for i, word in enumerate(words) if word.startswith(piece)]
        if len(owners) == 1:
            mass[owners[0]] += math.exp(logprob)
    floor = (min(lp for _, lp in top) if top else -20.0) - math.log(2)
    return [math.log(m) if m > 0 else floor for m in mass]
