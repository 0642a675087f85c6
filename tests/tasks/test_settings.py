import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from dynabench_site.env import env_bool, env_choice, env_int, env_list, env_path, env_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: env_bool("DEBUG", True, environ=e), "DEBUG='maybe' is not a boolean"),
        (lambda e: env_int("DB_CONN_MAX_AGE", 0, environ=e), "DB_CONN_MAX_AGE='maybe' is not an integer"),
        (lambda e: env_choice("MODEL_BACKEND", "inprocess", ["inprocess", "torchserve"], environ=e), "is not one of: inprocess, torchserve"),
        (lambda e: env_url("DATABASE_URL", None, ["sqlite", "postgres"], environ=e), "has scheme '(none)'"),
    ],
)
def test_bad_values_are_refused_with_the_variable_name(call, message):
    environ = {"DEBUG": "maybe", "DB_CONN_MAX_AGE": "maybe", "MODEL_BACKEND": "maybe", "DATABASE_URL": "maybe"}
    with pytest.raises(ImproperlyConfigured, match=re.escape(message)):
        call(environ)


def test_typed_helpers_parse_good_values(tmp_path):
    env = {"A": "yes", "B": "0", "N": "12", "L": "a.org, b.org", "U": "redis://127.0.0.1:6379/0", "P": str(tmp_path)}
    assert env_bool("A", False, environ=env) is True
    assert env_bool("B", True, environ=env) is False
    assert env_int("N", 1, minimum=1, environ=env) == 12
    assert env_list("L", [], environ=env) == ["a.org", "b.org"]
    assert env_url("U", None, ["redis"], environ=env) == "redis://127.0.0.1:6379/0"
    assert env_path("P", tmp_path / "x", base=tmp_path, environ=env) == tmp_path.resolve()


def test_other_bad_shapes(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="must be at least 1"):
        env_int("N", 1, minimum=1, environ={"N": "0"})
    with pytest.raises(ImproperlyConfigured, match="has an empty item"):
        env_list("ALLOWED_HOSTS", [], environ={"ALLOWED_HOSTS": "a,,b"})
    with pytest.raises(ImproperlyConfigured, match="has no host name"):
        env_url("CELERY_BROKER_URL", None, ["redis"], environ={"CELERY_BROKER_URL": "redis://"})
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(ImproperlyConfigured, match="is not a directory"):
        env_path("MODEL_STORE", tmp_path, base=tmp_path, environ={"MODEL_STORE": str(afile)})


def start_django(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DEBUG", "SECRET_KEY", "MODEL_BACKEND"}}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER, settings.MODEL_BACKEND)"],
        cwd=ROOT, env={**clean, "DJANGO_SETTINGS_MODULE": "dynabench_site.settings", **env}, capture_output=True, text=True, timeout=60,
    )


def test_no_variables_means_the_embedded_default():
    result = start_django()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True", "inprocess"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DATABASE_URL": "mysql://x@h/db"}, "DATABASE_URL='mysql://x@h/db' has scheme 'mysql'"),
        ({"MODEL_BACKEND": "tensorflow"}, "MODEL_BACKEND='tensorflow' is not one of"),
        ({"CSRF_TRUSTED_ORIGINS": "dynabench.example.org"}, "CSRF_TRUSTED_ORIGINS='dynabench.example.org' is not an origin"),
        ({"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}, "is not Header-Name=value"),
        ({"SECURE_HSTS_SECONDS": "-1"}, "SECURE_HSTS_SECONDS=-1 must be at least 0"),
        ({"CELERY_BROKER_URL": "kafka://h"}, "CELERY_BROKER_URL='kafka://h' has scheme 'kafka'"),
    ],
)
def test_the_platform_refuses_to_start_on_a_bad_setting(env, message):
    result = start_django(**env)
    assert result.returncode != 0
    assert message in result.stderr
