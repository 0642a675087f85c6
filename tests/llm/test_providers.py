"""The provider contract against real models and real sockets: the packaged SmolLM2 in process, the same model
behind a real OpenAI-compatible server (llama.cpp's, started on 127.0.0.1), and small real HTTP servers that
misbehave the ways endpoints do (down, slow, over quota, answering nonsense). No mocks of the client."""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Iterator

import pytest

from tests.llm.conftest import url_of
from zoo import llm
from zoo.llm import ProviderError
from zoo.llm import server as llm_server
from zoo.llm.local import SHA256, LocalProvider, check_file, packaged_file
from zoo.llm.openai_http import OpenAIProvider
from zoo.llm.prompts import opponent_prompt

KEY = "sk-test-0123456789abcdef"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the packaged model, in process -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_local_provider_writes_n_candidates_and_counts_their_tokens():
    provider = llm.build({"provider": "local"})
    generation = provider.generate("Write one short, happy sentence about a sunny day.", n=3, max_tokens=24,
                                   seed=7)
    assert len(generation.texts) == 3
    assert all(text.strip() for text in generation.texts)
    assert generation.usage.prompt_tokens > 0 and generation.usage.completion_tokens > 0
    assert generation.usage.calls == 3
    assert provider.describe() == {"provider": "local", "model": "SmolLM2-135M-Instruct (Q4_1 GGUF, local)"}


@pytest.mark.slow
def test_the_local_provider_scores_label_words_and_prefers_the_obvious_one():
    provider = LocalProvider()
    system, user = opponent_prompt("Say whether the review is positive or negative.", ["negative", "positive"],
                                   {"text": "This film is wonderful, I loved every minute of it."})
    scores = provider.score(user, ["negative", "positive"], system=system)
    assert scores.method == "first_token"
    assert all(math.isfinite(lp) and lp <= 0 for lp in scores.logprobs)
    assert scores.logprobs[1] > scores.logprobs[0]
    assert scores.usage.prompt_tokens > 0


def test_a_model_file_that_is_not_the_packaged_one_is_refused(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ProviderError) as refused:
        check_file(fake, SHA256)
    assert refused.value.kind == "config" and not refused.value.retryable
    assert "SHA-256 differs" in refused.value.message
    with pytest.raises(ProviderError) as missing:
        check_file(tmp_path / "absent.gguf", SHA256)
    assert missing.value.kind == "config" and "missing" in missing.value.message


def test_the_packaged_file_is_the_one_its_wheel_recorded():
    check_file(packaged_file(), SHA256)  # hashes 98 MB once per process; raises if the wheel's file was altered


def test_an_unknown_provider_or_an_incomplete_http_config_is_a_config_error():
    with pytest.raises(ProviderError, match="unknown provider 'gpt'") as unknown:
        llm.build({"provider": "gpt"})
    assert unknown.value.kind == "config"
    with pytest.raises(ProviderError, match="http\\(s\\) base URL"):
        llm.build({"provider": "openai", "base_url": "ftp://x", "model": "m"})
    with pytest.raises(ProviderError, match="model name"):
        llm.build({"provider": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "", "allow_private": True})


# --- the same model behind a real OpenAI-compatible server -------------------------------------------------


@pytest.fixture(scope="module")
def model_server() -> Iterator[llm_server.Running]:
    running = llm_server.start(port=0, threads=1)
    yield running
    running.stop()


@pytest.mark.slow
def test_the_http_provider_generates_through_a_real_openai_compatible_server(model_server):
    assert model_server.base_url.startswith("http://127.0.0.1:") and model_server.base_url.endswith("/v1")
    provider = llm.build({"provider": "openai", "base_url": model_server.base_url, "model": model_server.model,
                          "allow_private": True})
    assert provider.health()["status"] == "ok"
    # llama.cpp's server allows one choice per request: the provider learns that and asks three times
    generation = provider.generate("Write one short sentence about a rainy afternoon.", n=3, max_tokens=20, seed=3)
    assert len(generation.texts) == 3 and all(t.strip() for t in generation.texts)
    assert generation.usage.calls >= 3
    assert generation.usage.prompt_tokens > 0 and generation.usage.completion_tokens > 0
    assert generation.model == model_server.model


@pytest.mark.slow
def test_the_http_provider_scores_like_the_local_one(model_server):
    system, user = opponent_prompt("Say whether the review is positive or negative.", ["negative", "positive"],
                                   {"text": "A wonderful, warm and funny film. I loved every minute."})
    remote = llm.build({"provider": "openai", "base_url": model_server.base_url, "model": model_server.model,
                        "allow_private": True})
    local = LocalProvider()
    over_http = remote.score(user, ["negative", "positive"], system=system)
    in_process = local.score(user, ["negative", "positive"], system=system)
    assert over_http.method == "first_token"
    # the same weights and the same prompt: the same ranking, and close log-probabilities (not equal: the HTTP
    # provider reads the top 20 tokens, OpenAI's maximum, the local one the top 50, and the two engines batch
    # differently; measured apart by up to 0.27 nats while other tests loaded the CPU)
    assert over_http.logprobs[1] > over_http.logprobs[0] and in_process.logprobs[1] > in_process.logprobs[0]
    assert over_http.logprobs == pytest.approx(in_process.logprobs, abs=0.5)


# --- endpoints that misbehave ------------------------------------------------------------------------------


def _url(httpd) -> str:
    return url_of(httpd)


def test_a_provider_that_is_down_says_so_after_bounded_retries():
    provider = OpenAIProvider(f"http://127.0.0.1:{closed_port()}/v1", "m", retries=2, allow_private=True)
    started = time.perf_counter()
    with pytest.raises(ProviderError) as down:
        provider.generate("hello")
    assert down.value.kind == "down" and down.value.retryable
    assert "does not answer" in down.value.message
    assert time.perf_counter() - started < 5  # two short backoffs, not a hang
    assert provider.health()["status"] == "down"


def test_a_slow_provider_times_out(endpoint):
    endpoint.behaviour = "slow"
    provider = OpenAIProvider(_url(endpoint), "m", timeout_s=0.3, retries=1, allow_private=True)
    with pytest.raises(ProviderError) as slow:
        provider.generate("hello")
    assert slow.value.kind == "timeout" and "0.3 s" in slow.value.message
    assert len(endpoint.seen) == 2  # the first try and one retry


def test_a_provider_over_its_quota_is_retried_then_reported(endpoint):
    endpoint.behaviour = "quota"
    provider = OpenAIProvider(_url(endpoint), "m", retries=2, allow_private=True)
    with pytest.raises(ProviderError) as quota:
        provider.score("Is it good?", ["yes", "no"])
    assert quota.value.kind == "quota" and "over its quota" in quota.value.message
    assert "429" in quota.value.detail  # the status is the operator's to read, in the log
    assert len(endpoint.seen) == 3


def test_an_answer_that_is_not_json_or_has_no_logprobs_is_a_bad_response(endpoint):
    endpoint.behaviour = "garbage"
    provider = OpenAIProvider(_url(endpoint), "m", retries=2, allow_private=True)
    with pytest.raises(ProviderError) as garbage:
        provider.generate("hello")
    assert garbage.value.kind == "bad_response" and not garbage.value.retryable
    assert len(endpoint.seen) == 1  # nonsense is not retried
    endpoint.behaviour = "no_logprobs"
    with pytest.raises(ProviderError, match="no token log-probabilities") as plain:
        provider.score("Is it good?", ["yes", "no"])
    assert plain.value.kind == "bad_response"


def test_the_key_is_sent_as_a_bearer_token_and_never_shown(endpoint):
    provider = llm.build({"provider": "openai", "base_url": _url(endpoint), "model": "m", "api_key": KEY,
                          "allow_private": True})
    generation = provider.generate("hello", max_tokens=8)
    assert generation.texts == ["A fine answer."]
    assert generation.usage.prompt_tokens == 12 and generation.usage.completion_tokens == 4
    assert endpoint.seen[-1]["authorization"] == f"Bearer {KEY}"
    assert endpoint.seen[-1]["path"] == "/v1/chat/completions" and endpoint.seen[-1]["body"]["model"] == "m"
    assert KEY not in repr(provider) and KEY not in json.dumps(provider.describe())
    endpoint.behaviour = "bad_key"
    with pytest.raises(ProviderError) as refused:
        provider.generate("hello")
    assert refused.value.kind == "config" and "refused the key" in refused.value.message
    assert KEY not in str(refused.value) and KEY not in refused.value.message
