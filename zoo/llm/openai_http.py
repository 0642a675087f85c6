"""Any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server, hosted services) over HTTP.

Configured with a base URL (e.g. http://127.0.0.1:8089/v1), a model name and, where the endpoint wants one, a key
(sent as `Authorization: Bearer`; never in `repr`, `describe`, an error or a log line). Every call has a connect
and a read timeout; connection errors, 5xx and 429 are retried a bounded number of times with a short backoff
(Retry-After respected up to RETRY_AFTER_CAP_S), then raised as `ProviderError` of kind down, timeout or quota.
`generate` sends `n`; an endpoint that allows one choice per request (llama.cpp's server answers 400 "n must be 1")
gets `n` requests instead, remembered per base URL. `score` reads the first generated token's top log-probabilities
(zoo.llm.chat): every OpenAI-compatible server can do that, while echoing the prompt's own log-probabilities is
not offered by all.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import requests

from zoo.llm import chat
from zoo.llm.base import Generation, Provider, ProviderError, Scores, Usage

RETRY_AFTER_CAP_S = 5.0
_single_choice: set[str] = set()  # base URLs that refuse n > 1


class OpenAIProvider(Provider):
    name: ClassVar[str] = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 20.0,
                 retries: int = 2, connect_timeout_s: float = 3.0):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ProviderError("the OpenAI-compatible provider needs an http(s) base URL", kind="config")
        if not model:
            raise ProviderError("the OpenAI-compatible provider needs a model name", kind="config")
        self.base_url = base_url.rstrip("/")
        self._model = model
        self._key = api_key or None
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = min(float(connect_timeout_s), self.timeout_s)
        self.retries = max(0, int(retries))
        self.session = requests.Session()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> OpenAIProvider:
        import os

        key = config.get("api_key")
        if not key and config.get("api_key_env"):
            key = os.environ.get(str(config["api_key_env"]))
        return cls(base_url=str(config.get("base_url") or ""), model=str(config.get("model") or ""), api_key=key,
                   timeout_s=float(config.get("timeout_s") or 20.0), retries=int(config.get("retries", 2)))

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, model={self._model!r}, key={'set' if self._key else 'none'})"

    @property
    def model(self) -> str:
        return self._model

    # --- HTTP ---------------------------------------------------------------------------------------------

    def _post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """POST with bounded retries; the JSON answer and the number of requests made."""
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        url = f"{self.base_url}{path}"
        last: ProviderError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.25 * 2 ** (attempt - 1), 2.0) if last is None or last.kind != "quota"
                           else self._retry_after)
            try:
                response = self.session.post(url, json={**body, "model": self._model}, headers=headers,
                                             timeout=(self.connect_timeout_s, self.timeout_s))
            except requests.Timeout:
                last = ProviderError(f"the language model at {self.base_url} did not answer within "
                                     f"{self.timeout_s:g} s", kind="timeout")
                continue
            except requests.ConnectionError:
                last = ProviderError(f"the language model at {self.base_url} does not answer (no connection)",
                                     kind="down")
                continue
            if response.status_code == 429:
                self._retry_after = _retry_after(response)
                last = ProviderError(f"the language model at {self.base_url} is over its quota or rate limit "
                                     f"(429)", kind="quota")
                continue
            if response.status_code >= 500:
                last = ProviderError(f"the language model at {self.base_url} failed ({response.status_code})",
                                     kind="down")
                continue
            if response.status_code in (401, 403):
                raise ProviderError(f"the language model at {self.base_url} refused the key "
                                    f"({response.status_code})", kind="config")
            if response.status_code >= 400:
                raise ProviderError(f"the language model at {self.base_url} refused the request "
                                    f"({response.status_code}): {_error_text(response)}", kind="bad_response")
            try:
                return response.json(), attempt + 1
            except ValueError as exc:
                raise ProviderError(f"the language model at {self.base_url} answered no JSON", kind="bad_response"
                                    ) from exc
        assert last is not None
        raise last

    _retry_after: float = 0.5

    # --- the contract -------------------------------------------------------------------------------------

    def generate(self, user: str, *, system: str = "", n: int = 1, max_tokens: int = 48,
                 temperature: float = 0.8, seed: int | None = None, prefix: str = "",
                 stop: list[str] | None = None) -> Generation:
        started = time.perf_counter()
        body = chat.generate_request(user, system, max_tokens, temperature, seed, prefix, stop)
        texts: list[str] = []
        usage = Usage(calls=0)
        if n > 1 and self.base_url not in _single_choice:
            try:
                answer, calls = self._post("/chat/completions", {**body, "n": n})
                texts, usage = chat.text_of(answer), _add(usage, chat.usage_of(answer, 0, calls))
            except ProviderError as exc:
                if exc.kind != "bad_response" or "n" not in exc.message:
                    raise
                _single_choice.add(self.base_url)  # e.g. llama.cpp: "Field 'n': value must be between 1 and 1"
        while len(texts) < n:
            extra = {} if seed is None else {"seed": seed + len(texts)}
            answer, calls = self._post("/chat/completions", {**body, **extra})
            texts += chat.text_of(answer)
            usage = _add(usage, chat.usage_of(answer, 0, calls))
        usage.seconds = time.perf_counter() - started
        return Generation(texts=chat.without_prefix(texts, prefix)[:n], model=self._model, usage=usage)

    def score(self, user: str, continuations: list[str], *, system: str = "") -> Scores:
        started = time.perf_counter()
        answer, calls = self._post("/chat/completions", chat.score_request(user, system))
        logprobs = chat.first_token_scores(chat.top_tokens(answer), continuations)
        return Scores(logprobs=logprobs, model=self._model, method="first_token",
                      usage=chat.usage_of(answer, time.perf_counter() - started, calls))

    def health(self, timeout_s: float = 2.0) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            response = self.session.get(f"{self.base_url}/models", headers=headers, timeout=timeout_s)
        except requests.RequestException as exc:
            return {"status": "down", "model": self._model, "detail": f"no answer from {self.base_url} "
                                                                      f"({type(exc).__name__})"}
        if response.status_code >= 400:
            return {"status": "down", "model": self._model, "detail": f"{self.base_url}/models: {response.status_code}"}
        return {"status": "ok", "model": self._model, "detail": self.base_url}


def _add(total: Usage, more: Usage) -> Usage:
    return Usage(prompt_tokens=total.prompt_tokens + more.prompt_tokens,
                 completion_tokens=total.completion_tokens + more.completion_tokens,
                 seconds=0.0, calls=total.calls + more.calls)


def _retry_after(response: requests.Response) -> float:
    try:
        return max(0.0, min(float(response.headers.get("Retry-After", "0.5")), RETRY_AFTER_CAP_S))
    except ValueError:
        return 0.5


def _error_text(response: requests.Response) -> str:
    try:
        data = response.json()
        error = data.get("error", data)
        return str(error.get("message", error) if isinstance(error, dict) else error)[:300]
    except ValueError:
        return response.text[:300]
