"""docker-compose.yml, read as the operator's contract (no Docker engine is needed): every service has a health
check or is a one-shot, migrations run once before web, one beat, secrets come from the environment, TorchServe
is on an internal network with token auth on, only the proxy publishes a port, and the proxy caps bodies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def env_of(service: dict) -> dict:
    return service.get("environment") or {}


def test_every_long_running_service_has_a_health_check(compose):
    one_shots = {"migrate", "register"}
    for name, service in compose["services"].items():
        if name in one_shots:
            assert service["restart"] in ("no", "on-failure"), name
            continue
        check = service.get("healthcheck")
        assert check and not check.get("disable") and check["test"], f"{name} has no health check"


def test_migrations_run_once_before_web_worker_and_beat(compose):
    services = compose["services"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    for name in ("web", "worker", "explainer", "beat", "register"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
    assert "migrate" not in str(services["web"].get("command", ""))  # web only serves
    assert "beat" in services["beat"]["command"] and "worker" in services["worker"]["command"]


def test_word_maps_have_their_own_worker_that_never_holds_torchserve(compose):
    explainer = compose["services"]["explainer"]
    command = explainer["command"]
    assert command[:3] == ["nice", "-n", "10"] and command[command.index("-Q") + 1] == "dynabench-maps"
    assert explainer["environment"]["MODEL_BACKEND"] == "inprocess"  # maps never queue in front of verdicts
    assert "-Q" not in compose["services"]["worker"]["command"]  # the worker serves the default queue (verdicts)


def test_secrets_come_from_the_environment_and_nothing_defaults_to_debug(compose):
    env = env_of(compose["services"]["web"])
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert "${POSTGRES_PASSWORD:?" in env["DATABASE_URL"]
    assert compose["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert env["DEBUG"] == "false"
    assert env["CACHE_URL"].startswith("redis://redis:") and env["CELERY_BROKER_URL"].startswith("redis://redis:")


def test_torchserve_is_internal_with_token_auth(compose):
    services, networks = compose["services"], compose["networks"]
    torchserve = services["torchserve"]
    assert "--disable-token-auth" not in " ".join(torchserve["command"])
    assert "ports" not in torchserve and torchserve["networks"] == ["models"]
    assert networks["models"]["internal"] is True and networks["backend"]["internal"] is True
    on_models = {name for name, s in services.items() if "models" in s.get("networks", [])}
    assert on_models == {"torchserve", "torchserve-gpu", "web", "worker", "register"}  # only the app reaches it
    config = (ROOT / "torchserve" / "config.docker.properties").read_text()
    assert "token_expiration_min=" in config and "disable_token_authorization" not in config


def test_only_the_proxy_publishes_a_port_and_it_caps_bodies(compose):
    published = {name for name, s in compose["services"].items() if s.get("ports")}
    assert published == {"proxy"}
    assert all(p.startswith("127.0.0.1:") for p in compose["services"]["proxy"]["ports"])
    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    caps = [int(c) for c in re.findall(r"client_max_body_size (\d+)m;", nginx)]
    # 20 MB (DATA_UPLOAD_MAX_MEMORY_SIZE) for the server; the upload routes ROUNDS_UPLOAD_MAX_MB (600) and a little
    # form (tests/site/test_body_caps.py checks which routes); the app checks again as it reads
    assert caps[0] == 20 and all(600 < cap <= 700 for cap in caps[1:]) and len(caps) == 3


def test_the_image_collects_static_files_and_does_not_run_as_root():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "collectstatic --noinput" in dockerfile and "|| true" not in dockerfile
    assert re.search(r"^USER app$", dockerfile, re.M)
    assert "migrate" not in dockerfile.split("CMD", 1)[1]


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable interpolation: ${NAME}, ${NAME:-default}, ${NAME:?error}, and $$ for a literal $."""

    def value(match: re.Match) -> str:
        name, op, default = match.group(1), match.group(2), match.group(3)
        if name in env:
            return env[name]
        if op == ":?":
            raise KeyError(f"{name}: {default}")
        return default or ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", value, text).replace("$$", "$")


def test_the_file_is_valid_against_the_compose_specification():
    """What `docker compose config` checks, without an engine: the official compose-spec JSON schema
    (tests/prod/data/compose-spec.json, from github.com/compose-spec/compose-spec, Apache-2.0)."""
    import json

    import jsonschema

    schema = json.loads((ROOT / "tests" / "prod" / "data" / "compose-spec.json").read_text())
    text = (ROOT / "docker-compose.yml").read_text()
    with pytest.raises(KeyError, match="SECRET_KEY"):  # refused without the secrets
        interpolate(text, {})
    data = yaml.safe_load(interpolate(text, {"SECRET_KEY": "s", "POSTGRES_PASSWORD": "p"}))
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(data)]
    assert errors == []
