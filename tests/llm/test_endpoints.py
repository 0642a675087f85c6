"""Keys bound to endpoints: the operator's key goes only to an endpoint the operator configured, never to an
address a task names; loopback, private and link-local addresses are refused in every spelling (and by what a
name resolves to when connecting) unless the operator allows them for their endpoint; redirects are not
followed; what people read of a failure never tells an internal service's status. Real HTTP servers on
127.0.0.1 (tests/llm/conftest.py), real sockets, the real resolver."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.urls import reverse
from pydantic import ValidationError
from rest_framework.test import APIClient

from modelzoo.llm import provider_config, provider_for
from tasks import roles
from tasks.kinds.base import LLMProviderSettings
from tests.factories import ContextFactory, RoundFactory, TaskFactory, UserFactory
from tests.llm.conftest import url_of
from zoo.llm import ProviderError, egress
from zoo.llm import endpoints as llm_endpoints
from zoo.llm.openai_http import OpenAIProvider

KEY = "sk-operator-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- addresses: every spelling, judged by what it means ---------------------------------------------------

# 127.0.0.1 written every way the system's resolver reads it; a test server listens there
LOOPBACK_SPELLINGS = ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "localhost",
                      "LOCALHOST", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "0", "0.0.0.0"]
# cloud metadata (169.254.169.254) and private networks, in the forms the issue found accepted
ELSEWHERE = ["169.254.169.254", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376", "169.254.43518",
             "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]",
             "[fe80::1]", "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1", "[fd00::1]", "[::1]"]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_a_loopback_service_is_never_sent_a_request_however_its_address_is_written(serve, host):
    service = serve()  # what answers on 127.0.0.1 (an internal admin port, a model server the operator did not allow)
    provider = OpenAIProvider(url_of(service, host), "m", api_key=KEY, retries=0, timeout_s=2)
    with pytest.raises(ProviderError) as refused:
        provider.generate("hello")
    assert refused.value.kind == "config" and not refused.value.retryable
    assert refused.value.message == "the language model endpoint is at an address the site does not connect to"
    assert service.seen == []  # nothing sent: not the key, not the prompt


@pytest.mark.parametrize("host", ELSEWHERE)
def test_link_local_and_private_addresses_are_refused_before_a_connection_is_tried(host):
    provider = OpenAIProvider(f"http://{host}:80/v1", "m", api_key=KEY, retries=0, timeout_s=5)
    started = time.perf_counter()
    with pytest.raises(ProviderError) as refused:
        provider.generate("hello")
    assert refused.value.kind == "config", refused.value.detail
    assert "does not connect to" in refused.value.message
    assert time.perf_counter() - started < 1  # refused, not a connection that timed out


def test_the_address_rule_reads_what_an_address_means():
    for public in ("8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"):
        assert egress.address_problem(public) is None
    assert egress.address_problem("169.254.169.254").startswith("a link-local address")
    assert egress.address_problem("64:ff9b::a9fe:a9fe").startswith("a link-local")  # NAT64 of the metadata address
    assert egress.address_problem("2002:a00:1::1") == "a private address"  # 6to4 of 10.0.0.1
    assert egress.address_problem("100.64.0.1") == "not a public address"  # carrier-grade NAT
    assert egress.literal_addresses("0251.0376.0251.0376") == ["169.254.169.254"]
    assert egress.literal_addresses("metadata.google.internal") == []  # a name: judged when connecting


def test_a_name_is_judged_by_the_address_it_resolves_to_when_connecting_and_resolved_once(serve, monkeypatch):
    """DNS rebinding: a hostile name server answers a public address first and 127.0.0.1 afterwards (the test
    stands in for that server by answering the site's lookups). The site looks the name up once per connection,
    checks that answer and connects to the address it checked, so the loopback service never hears from it; a
    name answering the loopback address at once is refused."""
    service = serve()
    port = service.server_address[1]
    lookups: list[str] = []

    def rebinding(host: str, port_: int):
        lookups.append(host)
        address = "93.184.215.14" if len(lookups) == 1 else "127.0.0.1"  # a public address, unreachable offline
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port_))]

    monkeypatch.setattr(egress, "resolve", rebinding)
    provider = OpenAIProvider(f"http://rebind.example:{port}/v1", "m", api_key=KEY, retries=0, timeout_s=1,
                              connect_timeout_s=0.5)
    with pytest.raises(ProviderError) as first:
        provider.generate("hello")
    assert first.value.kind in ("down", "timeout")  # it tried the public address it checked, which is not there
    assert lookups == ["rebind.example"] and service.seen == []
    with pytest.raises(ProviderError) as second:  # the next connection looks up again: now 127.0.0.1, refused
        provider.generate("hello")
    assert second.value.kind == "config" and "127.0.0.1" in second.value.detail
    assert lookups == ["rebind.example", "rebind.example"] and service.seen == []


def test_an_operator_may_allow_a_private_address_for_their_endpoint(endpoint):
    provider = OpenAIProvider(url_of(endpoint), "m", api_key=KEY, allow_private=True)
    assert provider.generate("hello").texts == ["A fine answer."]
    assert endpoint.seen[-1]["authorization"] == f"Bearer {KEY}"


# --- redirects ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_so_the_key_and_prompt_stay_with_the_endpoint(serve, status):
    elsewhere = serve()
    redirecting = serve("redirect", status=status, location=f"{url_of(elsewhere)}/chat/completions")
    provider = OpenAIProvider(url_of(redirecting), "m", api_key=KEY, allow_private=True, endpoint="team")
    with pytest.raises(ProviderError) as refused:
        provider.generate("a secret prompt")
    assert refused.value.kind == "config"
    assert refused.value.message == ("the language model endpoint 'team' answered with a redirect, which the site "
                                     "does not follow")
    assert len(redirecting.seen) == 1 and elsewhere.seen == []
    assert f"{status} to {url_of(elsewhere)}" in refused.value.detail  # the operator learns where it pointed
    assert provider.health()["status"] == "down" and elsewhere.seen == []


# --- what people read of a failure ----------------------------------------------------------------------------


@pytest.mark.parametrize("status, kind, said", [
    (401, "config", "refused the key"), (403, "config", "refused the key"),
    (404, "bad_response", "refused the request"), (400, "bad_response", "refused the request"),
    (500, "down", "failed"), (503, "down", "failed"),
])
def test_what_people_read_of_a_failure_names_the_endpoint_never_its_address_status_or_text(
        serve, caplog, status, kind, said):
    service = serve("status", status=status, text="internal admin console v1.2 at 10.1.2.3")
    provider = OpenAIProvider(url_of(service), "m", api_key=KEY, allow_private=True, retries=0, endpoint="team")
    with caplog.at_level(logging.WARNING, logger="zoo.llm.openai_http"), pytest.raises(ProviderError) as failed:
        provider.generate("hello")
    message = failed.value.message
    assert failed.value.kind == kind and message == f"the language model endpoint 'team' {said}"
    port = str(service.server_address[1])
    for secret in (port, "127.0.0.1", str(status), "admin console", KEY):
        assert secret not in message and secret not in str(failed.value)
    # the operator's log has what happened
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"127.0.0.1:{port}" in logged and str(status) in logged and "admin console" in logged
    assert KEY not in logged


def test_a_closed_port_is_told_as_an_endpoint_that_does_not_answer_without_its_address():
    closed = OpenAIProvider(f"http://127.0.0.1:{closed_port()}/v1", "m", allow_private=True, retries=0)
    with pytest.raises(ProviderError) as down:
        closed.generate("hello")
    assert down.value.message == "the language model endpoint does not answer"
    assert "127.0.0.1" in down.value.detail


# --- the site: operator endpoints, picked by name ------------------------------------------------------------


def settings_for(**provider) -> LLMProviderSettings:
    return LLMProviderSettings.model_validate({"provider": "openai", **provider})


def test_a_task_picks_an_operator_endpoint_by_name_and_its_key_goes_there(settings, serve, monkeypatch):
    team, default = serve(), serve()
    monkeypatch.setenv("LLM_TEAM_KEY", KEY)
    monkeypatch.setenv("LLM_API_KEY", "sk-default-key")
    settings.LLM_ENDPOINTS = {
        "default": {"url": url_of(default), "model": "small", "key_env": "LLM_API_KEY", "allow_private": True},
        "team": {"url": url_of(team), "model": "big", "models": ["bigger"], "key_env": "LLM_TEAM_KEY",
                 "allow_private": True}}
    provider_for(settings_for(endpoint="team", model="bigger")).generate("hello")
    assert team.seen[-1]["authorization"] == f"Bearer {KEY}" and team.seen[-1]["body"]["model"] == "bigger"
    provider_for(settings_for()).generate("hello")  # no endpoint named: "default"
    assert default.seen[-1]["authorization"] == "Bearer sk-default-key" and default.seen[-1]["body"]["model"] == "small"
    assert len(team.seen) == 1


def test_a_task_may_pick_only_a_configured_endpoint_and_one_of_its_models(settings, endpoint):
    settings.LLM_ENDPOINTS = {"team": {"url": url_of(endpoint), "model": "big", "allow_private": True}}
    with pytest.raises(ProviderError) as unknown:
        provider_for(settings_for(endpoint="other"))
    assert unknown.value.kind == "config"
    assert "no language model endpoint named 'other'" in unknown.value.message and "team" in unknown.value.message
    with pytest.raises(ProviderError) as model:
        provider_for(settings_for(endpoint="team", model="the-priciest"))
    assert "does not offer the model 'the-priciest'; it offers big" in model.value.message
    with pytest.raises(ValidationError, match="endpoint"):
        settings_for(endpoint="http://169.254.169.254/")
    assert endpoint.seen == []


def test_a_task_that_names_an_address_of_its_own_never_sends_the_key_there(settings, serve, monkeypatch):
    """A stored config from before (base_url, api_key_env) still loads; its address is not used: the request
    and the key go to the operator's endpoint at that address if there is one, else to "default"."""
    operator, owners_own = serve(), serve()
    monkeypatch.setenv("LLM_API_KEY", KEY)
    monkeypatch.setenv("LLM_OTHER_KEY", "sk-other")
    settings.LLM_ENDPOINTS = {"default": {"url": url_of(operator), "model": "small", "key_env": "LLM_API_KEY",
                                          "allow_private": True}}
    legacy = LLMProviderSettings.model_validate({"provider": "openai", "base_url": url_of(owners_own),
                                                 "api_key_env": "LLM_OTHER_KEY", "model": "small"})
    assert legacy.endpoint == "default" and "base_url" not in legacy.model_dump()
    provider_for(legacy).generate("hello")
    assert owners_own.seen == []
    assert operator.seen[-1]["authorization"] == f"Bearer {KEY}"
    # an old config naming the operator's own address keeps its endpoint
    assert LLMProviderSettings.model_validate({"provider": "openai", "base_url": url_of(operator) + "/"}
                                              ).endpoint == "default"
    with pytest.raises(ValidationError, match="no longer task settings"):
        LLMProviderSettings.model_validate({"endpoint": "default", "base_url": url_of(owners_own)})
    config = provider_config(legacy)
    assert config["base_url"] == url_of(operator) and config["api_key"] == KEY


@pytest.mark.django_db
def test_a_suggestion_for_a_task_naming_its_own_address_goes_to_the_operator_endpoint(settings, serve, monkeypatch):
    """End to end: an owner's stored assistant settings name a server of their own and a key variable; a writer
    asks for suggestions; the owner's server hears nothing, the operator's endpoint gets the request."""
    settings.JOB_RUNNER = "inline"
    operator, owners_own = serve(), serve()
    monkeypatch.setenv("LLM_API_KEY", KEY)
    settings.LLM_ENDPOINTS = {"default": {"url": url_of(operator), "model": "small", "key_env": "LLM_API_KEY",
                                          "allow_private": True}}
    task = TaskFactory(slug="assisted", kind="sentiment")
    task.config = {**task.config, "assistant": {"enabled": True, "provider": {
        "provider": "openai", "base_url": url_of(owners_own), "api_key_env": "LLM_API_KEY", "model": "small"}}}
    type(task).objects.filter(pk=task.pk).update(config=task.config)  # stored as an old version wrote it
    round_ = RoundFactory(task=task, number=1)
    context = ContextFactory(task=task, round=round_, payload={"prompt": "The food was good."})
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(writer)
    response = client.post(reverse("api-suggestion-create", args=[task.slug]),
                           {"context_id": context.pk, "target": "positive"}, format="json")
    assert response.status_code == 202, response.content
    assert owners_own.seen == []
    assert operator.seen and operator.seen[0]["authorization"] == f"Bearer {KEY}"
    assert operator.seen[0]["path"] == "/v1/chat/completions"


# --- the operator's settings ---------------------------------------------------------------------------------


def test_the_operators_endpoints_are_checked_when_read():
    parsed = llm_endpoints.parse({"team": {"url": "https://llm.example.org/v1/", "model": "m", "models": ["n"],
                                           "key_env": "LLM_TEAM_KEY"}})
    assert parsed["team"].url == "https://llm.example.org/v1" and parsed["team"].models == ("m", "n")
    for bad, said in [
        ({"team": {"url": "http://169.254.169.254/v1", "model": "m"}}, "link-local"),
        ({"team": {"url": "http://2130706433/v1", "model": "m"}}, "loopback"),
        ({"team": {"url": "https://llm.example.org/v1", "model": "m", "key_env": "SECRET_KEY"}}, "LLM_"),
        ({"team": {"url": "https://user:pw@llm.example.org/v1", "model": "m"}}, "credentials"),
        ({"team": {"url": "ftp://llm.example.org", "model": "m"}}, "http"),
        ({"team": {"url": "https://llm.example.org/v1"}}, "needs a model"),
        ({"Team!": {"url": "https://llm.example.org/v1", "model": "m"}}, "lower-case"),
        ({"team": {"url": "https://llm.example.org/v1", "model": "m", "base": 1}}, "unknown field"),
    ]:
        with pytest.raises(ValueError, match=said):
            llm_endpoints.parse(bad)
    assert llm_endpoints.parse({"box": {"url": "http://10.0.0.7:8000/v1", "model": "m", "allow_private": True}})


@pytest.mark.parametrize("env, said", [
    ({"LLM_BASE_URL": "http://169.254.169.254/v1", "LLM_MODEL": "m"}, "link-local"),
    ({"LLM_ENDPOINTS": '{"x": {"url": "http://0x7f000001/v1", "model": "m"}}'}, "loopback"),
    ({"LLM_BASE_URL": "https://llm.example.org/v1"}, "LLM_MODEL"),
])
def test_a_misconfigured_endpoint_stops_the_start_up_with_the_reason(env, said, tmp_path):
    run = subprocess.run([sys.executable, "-c", "from django.conf import settings; settings.DEBUG"], cwd=ROOT,
                         capture_output=True,
                         text=True, timeout=120, env={**start_env(tmp_path), **env})
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr and said in run.stderr


def start_env(tmp_path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "dynabench_site.settings", "VAR_DIR": str(tmp_path)}


def test_a_loopback_default_endpoint_is_allowed_when_the_operator_says_so(tmp_path):
    env = {**start_env(tmp_path), "LLM_BASE_URL": "http://127.0.0.1:8089/v1", "LLM_MODEL": "smollm2",
           "LLM_ALLOW_PRIVATE": "true"}
    run = subprocess.run([sys.executable, "-c", "from django.conf import settings; "
                          "print(settings.LLM_ENDPOINTS['default'].allow_private)"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"


# --- the settings page offers the operator's endpoints ---------------------------------------------------------


@pytest.mark.django_db
def test_the_settings_form_offers_the_operators_endpoint_names_and_no_address_field(settings):
    from tasks.config_form import ConfigForm

    settings.LLM_ENDPOINTS = {"team": {"url": "https://llm.example.org/v1", "model": "big"},
                              "gpu-box": {"url": "http://10.0.0.7:8000/v1", "model": "qwen", "allow_private": True}}
    task = TaskFactory(slug="configured", kind="sentiment")
    form = ConfigForm(task=task)
    for part in ("assistant", "opponent"):
        field = form.fields[f"{part}__provider__endpoint"]
        assert [value for value, _ in field.choices] == ["default", "gpu-box", "team"]
        assert not any(name.startswith(f"{part}__provider__") and name.endswith(("base_url", "api_key_env"))
                       for name in form.fields)
    data = {name: value for name, value in form.initial.items() if value is not None}
    data = {k: v for k, v in data.items() if not isinstance(v, bool) or v} | {"name": "Configured"}
    chosen = ConfigForm(data | {"assistant__provider__endpoint": "team", "assistant__provider__provider": "openai"},
                        task=task)
    assert chosen.is_valid(), chosen.errors
    assert chosen.cleaned_data["config"]["assistant"]["provider"]["endpoint"] == "team"
    refused = ConfigForm(data | {"assistant__provider__endpoint": "elsewhere"}, task=task)
    assert not refused.is_valid() and "assistant__provider__endpoint" in refused.errors
