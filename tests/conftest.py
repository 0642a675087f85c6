from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import RoundFactory, TaskFactory
from tests.personas import make_personas


@pytest.fixture(autouse=True)
def _site_language():
    """Every test starts in the site's default language: LocaleMiddleware activates a request's language (its cookie,
    its Accept-Language) in the thread that served it and leaves it there, so a test client's Spanish request would
    otherwise make the next test's rendering in this process Spanish."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate limits count in the cache (local memory in tests): every test starts with none counted."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def float32_occlusion(monkeypatch):
    """Occlusion batches in float32 whatever the CPU (the default runs them in bfloat16 where the CPU multiplies
    it natively): for tests that check a map against separate forward passes to float32 precision."""
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "fp32")


@pytest.fixture
def redis_down(settings):
    """A cache outage: the cache is a real Redis client pointed at a port where nothing listens."""
    from django.core.cache import cache

    working = settings.CACHES
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:9/0"}}
    with pytest.raises(Exception):  # noqa: B017 - whatever the client raises, the cache is really down
        cache.get("probe")
    yield
    settings.CACHES = working  # back before the suite's own fixtures clear the cache


@pytest.fixture
def data_dir() -> Path:
    """The shared real datasets (DATA_DIR, default ../shared/data)."""
    path = Path(settings.DATA_DIR)
    if not path.is_dir():
        pytest.fail(f"DATA_DIR {path} does not exist; point DATA_DIR at the shared datasets")
    return path


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def task(db):
    return TaskFactory(slug="sentiment", kind="sentiment")


@pytest.fixture
def open_round(task):
    return RoundFactory(task=task, number=1)


@pytest.fixture
def personas(task):
    return make_personas(task)


@pytest.fixture
def client_for(personas):
    """An API client logged in as a persona ('anonymous' for none)."""

    def make(name: str) -> APIClient:
        client = APIClient()
        user = personas.get(name)
        if user is not None:
            client.force_authenticate(user)
        return client

    return make


@pytest.fixture(scope="session")
def chromium():
    """A real headless Chromium (Debian chromium + chromium-driver), one per test session."""
    import shutil
    import tempfile

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.fail("chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1280,1000", f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def browser(chromium, live_server):
    """Chromium pointed at the live server; `browser.login(user)` signs in through the login page."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.factories import PASSWORD

    chromium.delete_all_cookies()

    def go(path: str) -> None:
        chromium.get(live_server.url + path)

    def login(user) -> None:
        go("/accounts/login/")
        chromium.find_element(By.NAME, "username").send_keys(user.username)
        chromium.find_element(By.NAME, "password").send_keys(PASSWORD)
        chromium.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        # Wait for the signed-in page itself: elements of the login page go stale while it navigates.
        WebDriverWait(chromium, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "/accounts/login/" not in d.current_url
            and d.execute_script("return document.readyState") == "complete"
            and user.username in d.find_element(By.CLASS_NAME, "topbar").text
        )

    chromium.go = go
    chromium.login = login
    chromium.base_url = live_server.url
    return chromium


def pytest_configure(config):
    """Fast password hashing in tests (PBKDF2 dominates otherwise); under pytest-xdist (`make test` runs two
    worker processes), each worker keeps its files in a var/ folder of its own (each already gets a test
    database of its own from pytest-django)."""
    import os

    from django.conf import settings as django_settings

    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        var = Path(django_settings.VAR_DIR) / "test-workers" / worker
        for name in ("MODEL_STORE", "EXPORTS_DIR", "STATIC_ROOT"):
            setattr(django_settings, name, var / name.lower())
            (var / name.lower()).mkdir(parents=True, exist_ok=True)


# Under pytest-xdist (`--dist loadgroup`), every test that uses one of these fixtures runs on the same worker:
# TorchServe can run only once per machine (its worker sockets have fixed names), and a session fixture that
# trains a model with the real encoder should train it once per run, not once per worker.
_GROUPED_FIXTURES = {"torchserve": "torchserve", "trained_sentiment": "trained-sentiment"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks into the node ids it schedules by
def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        for fixture, group in _GROUPED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                break


def pytest_collection_finish(session):
    """Loud when the grouping above is lost: pytest-xdist 3.8 writes the group into `Item._nodeid`, which pytest 9
    no longer reads (its node ids are objects), so under pytest 9 the TorchServe tests spread over both workers and
    one waited 14 minutes for the other's TorchServe lock (hence `pytest<9` in requirements.txt)."""
    if not getattr(session.config.option, "loadgroup", False):  # set on xdist's workers under --dist loadgroup
        return
    lost = [item.nodeid for item in session.items
            if any(True for _ in item.iter_markers("xdist_group")) and "@" not in item.nodeid]
    if lost:
        why = (f"--dist loadgroup did not group {len(lost)} tests (e.g. {lost[0]}): pytest {pytest.__version__} with "
               "this pytest-xdist ignores xdist_group marks")
        sys.stderr.write(why + "\n")  # a worker's exception alone reaches the controller as a bare crash
        raise pytest.UsageError(why)


@pytest.fixture(autouse=True)
def _job_threads_finish_before_the_flush(request):
    """A live-server test's jobs may run in threads (`dynabench_site.jobs`, "thread"); one still reading when the
    test's database is flushed deadlocks the TRUNCATE (seen once at a persona walk's teardown). Set up after the
    database helper, so this teardown runs before its flush: wait for those threads first (60 s at most)."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("_django_db_helper")
    yield
    deadline = time.monotonic() + 60
    for thread in threading.enumerate():
        if thread.name.startswith("job-") and thread.is_alive():
            thread.join(max(0.0, deadline - time.monotonic()))
