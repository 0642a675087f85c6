"""Production settings: DEBUG off by default, a generated secret key (never a public one), HTTPS settings from
the environment, `check --deploy` clean and the OpenAPI schema free of warnings."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dynabench_site.env import env_header, env_origins

ROOT = Path(__file__).resolve().parents[2]
# The environment docs/SECURITY.md gives for a deployment behind a TLS-terminating proxy.
PRODUCTION = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "dynabench.example.org",
    "SECURE_SSL_REDIRECT": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto=https",
    "CSRF_TRUSTED_ORIGINS": "https://dynabench.example.org",
}
OURS = {"DEBUG", "SECRET_KEY", "VAR_DIR", "DATABASE_URL", *PRODUCTION}


def run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in OURS}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env={**clean, "DJANGO_SETTINGS_MODULE": "dynabench_site.settings", **env},
                          capture_output=True, text=True, timeout=180)


def settings_of(var_dir: Path, *names: str, **env: str) -> list[str]:
    code = "import django; django.setup(); from django.conf import settings; " + "; ".join(
        f"print(repr(settings.{n}))" for n in names)
    result = run(["-c", code], VAR_DIR=str(var_dir), **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_debug_is_off_when_nothing_is_set(tmp_path):
    assert settings_of(tmp_path, "DEBUG", "SESSION_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER") == ["False", "False", "None"]


def test_a_secret_key_is_generated_once_into_var_with_mode_0600_and_reused(tmp_path):
    first = settings_of(tmp_path, "SECRET_KEY")[0]
    second = settings_of(tmp_path, "SECRET_KEY")[0]
    key_file = tmp_path / "secret_key"
    assert first == second == repr(key_file.read_text().strip())
    assert len(key_file.read_text().strip()) >= 50 and "insecure" not in first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert settings_of(tmp_path / "elsewhere", "SECRET_KEY")[0] != first  # generated, never a fixed fallback


def test_a_secret_key_from_the_environment_wins_and_writes_no_file(tmp_path):
    key = secrets.token_urlsafe(50)
    assert settings_of(tmp_path, "SECRET_KEY", SECRET_KEY=key) == [repr(key)]
    assert not (tmp_path / "secret_key").exists()


def test_a_secret_key_file_readable_by_others_is_refused(tmp_path):
    key_file = tmp_path / "secret_key"
    key_file.write_text(secrets.token_urlsafe(50))
    key_file.chmod(0o644)
    result = run(["-c", "import django; django.setup()"], VAR_DIR=str(tmp_path))
    assert result.returncode != 0 and "is readable by others; run: chmod 600" in result.stderr


def test_https_settings_come_from_the_environment(tmp_path):
    values = settings_of(tmp_path, "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER",
                         "CSRF_TRUSTED_ORIGINS", **PRODUCTION)
    assert values == ["True", "31536000", "('HTTP_X_FORWARDED_PROTO', 'https')", "['https://dynabench.example.org']"]


def test_typed_readers_of_origins_and_proxy_headers():
    assert env_origins("O", [], environ={"O": "https://a.org, http://b.org:8000"}) == ["https://a.org", "http://b.org:8000"]
    assert env_header("H", environ={"H": "X-Forwarded-Proto=https"}) == ("HTTP_X_FORWARDED_PROTO", "https")
    assert env_header("H", environ={}) is None
    for bad in ("https://a.org/path", "ftp://a.org", "a.org"):
        with pytest.raises(Exception, match="is not an origin"):
            env_origins("O", [], environ={"O": bad})
    with pytest.raises(Exception, match="Header-Name=value"):
        env_header("H", environ={"H": "X Forwarded=https"})


@pytest.mark.integration
def test_check_deploy_is_clean_under_the_production_settings(tmp_path):
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], VAR_DIR=str(tmp_path),
                 SECRET_KEY=secrets.token_urlsafe(50), **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.integration
def test_the_openapi_schema_generates_without_a_warning(tmp_path):
    out = tmp_path / "schema.yml"
    result = run(["manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(out)], VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Warnings: 0" in result.stderr or result.stderr.strip() == ""
    assert out.read_text().startswith("openapi:")
