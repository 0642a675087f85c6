"""Any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server, hosted services) over HTTP.

Configured with a base URL (e.g. http://127.0.0.1:8089/v1), a model name and, where the endpoint wants one, a key
(sent as `Authorization: Bearer`; never in `repr`, `describe`, an error or a log line). In the site these come from
an endpoint the operator configured (`zoo.llm.endpoints`, `modelzoo.llm`), never from a task. The session
(`zoo.llm.egress`) connects to public addresses only, checked when it connects, unless the operator allowed
others for the endpoint (`allow_private`); it follows no redirect. Every call has a connect and a read timeout;
connection errors, 5xx and 429 are retried a bounded number of times with a short backoff (Retry-After respected
up to RETRY_AFTER_CAP_S), then raised as `ProviderError` of kind down, timeout or quota.

What a failure says (`ProviderError.message`, which writers and owners may read) names the endpoint and what
went wrong in general words only: never its address, an HTTP status or the server's own text. Those go to the
log for the operator (`ProviderError.detail`, logged here as the error is raised).
`generate` sends `n`; an endpoint that allows one choice per request (llama.cpp's server answers 400 "n must be 1")
gets `n` requests instead, remembered per base URL. `score` reads the first generated token's top log-probabilities
(zoo.llm.chat): every OpenAI-compatible server can do that, while echoing the prompt's own log-probabilities is
not offered by all.
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar

import requests

from zoo.llm import chat, egress
from zoo.llm.base import ErrorKind, Generation, Provider, ProviderError, Scores, Usage

log = logging.getLogger(__name__)
RETRY_AFTER_CAP_S = 5.0
_single_choice: set[str] = set()  # base URLs that refuse n > 1


class OpenAIProvider(Provider):
    name: ClassVar[str] = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 20.0,
                 retries: int = 2, connect_timeout_s: float = 3.0, *, allow_private: bool = False,
                 endpoint: str = ""):
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
        self.allow_private = bool(allow_private)
        self.endpoint = endpoint
        # what people read: the endpoint's name, never its address
        self.label = f"the language model endpoint {endpoint!r}" if endpoint else "the language model endpoint"
        self.session = egress.session(allow_private=self.allow_private)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> OpenAIProvider:
        return cls(base_url=str(config.get("base_url") or ""), model=str(config.get("model") or ""),
                   api_key=config.get("api_key"), timeout_s=float(config.get("timeout_s") or 20.0),
                   retries=int(config.get("retries", 2)), allow_private=bool(config.get("allow_private", False)),
                   endpoint=str(config.get("endpoint") or ""))

    def __repr__(self) -> str:
        return (f"OpenAIProvider(endpoint={self.endpoint!r}, base_url={self.base_url!r}, model={self._model!r}, "
                f"key={'set' if self._key else 'none'})")

    @property
    def model(self) -> str:
        return self._model

    # --- HTTP ---------------------------------------------------------------------------------------------

    def _error(self, said: str, kind: ErrorKind, detail: str) -> ProviderError:
        """A failure: `said` for people (after the endpoint's name), `detail` for the operator's log."""
        return ProviderError(f"{self.label} {said}", kind=kind, detail=f"{self.base_url}: {detail}")

    def _raise(self, error: ProviderError) -> ProviderError:
        log.warning("language model %s failed (%s): %s", self.endpoint or self.base_url, error.kind, error.detail)
        return error

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
                                             timeout=(self.connect_timeout_s, self.timeout_s),
                                             allow_redirects=False)
            except requests.Timeout:
                last = self._error(f"did not answer within {self.timeout_s:g} s", "timeout",
                                   f"no answer within {self.timeout_s:g} s")
                continue
            except requests.ConnectionError as exc:
                refused = egress.refusal(exc)
                if refused is not None:  # never retried: nothing was sent, and nothing will be
                    raise self._raise(self._error(
                        "is at an address the site does not connect to", "config",
                        f"{refused.host} resolves to {refused.address}, {refused.problem}; refused (the operator "
                        "may allow it for this endpoint: allow_private)")) from None
                last = self._error("does not answer", "down", f"no connection ({type(exc).__name__})")
                continue
            status = response.status_code
            if status == 429:
                self._retry_after = _retry_after(response)
                last = self._error("is over its quota or rate limit", "quota", "429")
                continue
            if status >= 500:
                last = self._error("failed", "down", f"{status}: {_error_text(response)}")
                continue
            if 300 <= status < 400:
                raise self._raise(self._error(
                    "answered with a redirect, which the site does not follow", "config",
                    f"{status} to {response.headers.get('Location', '(no Location)')[:300]}; configure the final "
                    "URL"))
            if status in (401, 403):
                raise self._raise(self._error("refused the key", "config", f"{status}: {_error_text(response)}"))
            if status >= 400:
                raise self._raise(self._error("refused the request", "bad_response",
                                              f"{status}: {_error_text(response)}"))
            try:
                return response.json(), attempt + 1
            except ValueError:
                raise self._raise(self._error("answered something that is not JSON", "bad_response",
                                              f"{status}, {response.headers.get('Content-Type', '')}: "
                                              f"{response.text[:300]}")) from None
        assert last is not None
        raise self._raise(last)

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
                if exc.kind != "bad_response":  # a server that refuses n > 1 answers 400 with its own words
                    raise
                _single_choice.add(self.base_url)  # e.g. llama.cpp: "Field 'n': value must be between 1 and 1"
        while len(texts) < n:
            extra = {} if seed is None else {"seed": seed + len(texts)}
            answer, calls = self._post("/chat/completions", {**body, **extra})
            texts += chat.text_of(answer)
            usage = _add(usage, chat.usage_of(answer, 0, calls))
        usage.seconds = time.perf_counter() - started
        return Generation(texts=chat.without_prefix(texts, prefix)[:n], model=self._model, usage=usage)

    def converse(self, turns: list[dict[str, str]], *, system: str = "", max_tokens: int = 96,
                 temperature: float = 0.7, seed: int | None = None) -> Generation:
        started = time.perf_counter()
        answer, calls = self._post("/chat/completions", chat.converse_request(turns, system, max_tokens, temperature,
                                                                             seed))
        usage = chat.usage_of(answer, 0, calls)
        usage.seconds = time.perf_counter() - started
        return Generation(texts=chat.text_of(answer)[:1], model=self._model, usage=usage)

    def score(self, user: str, continuations: list[str], *, system: str = "") -> Scores:
        started = time.perf_counter()
        answer, calls = self._post("/chat/completions", chat.score_request(user, system))
        logprobs = chat.first_token_scores(chat.top_tokens(answer), continuations)
        return Scores(logprobs=logprobs, model=self._model, method="first_token",
                      usage=chat.usage_of(answer, time.perf_counter() - started, calls))

    def health(self, timeout_s: float = 2.0) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            response = self.session.get(f"{self.base_url}/models", headers=headers, timeout=timeout_s,
                                        allow_redirects=False)
        except requests.RequestException as exc:
            refused = egress.refusal(exc)
            why = "an address the site does not connect to" if refused else f"no answer ({type(exc).__name__})"
            return {"status": "down", "model": self._model, "detail": f"{self.label}: {why}"}
        if response.status_code >= 300:
            return {"status": "down", "model": self._model,
                    "detail": f"{self.label}: /models answered {response.status_code}"}
        return {"status": "ok", "model": self._model, "detail": self.label}


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
