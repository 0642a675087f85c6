"""What works now: `/healthz` (JSON) and the owner console's "Services" section show the same checks.

    GET /healthz        {"status": "ok" | "degraded" | "down", "checks": {...}}   200, or 503 when "down"
    GET /healthz/live   {"status": "ok"}   the process answers (no dependency is asked; for a load balancer)

Who sees what: everyone gets the status, its HTTP code and each check's status (`{"database": {"status":
"ok"}, ...}`), all a probe or an uptime monitor needs. The details (tasks and rounds with their models, queue
depths, worker names, stuck jobs, error messages) go only to staff: a signed-in staff session, or an API token
of a staff account (`Authorization: Token <key>`, read-only is enough); a token that is unknown, expired or
revoked answers 401, so a monitor notices. Task names are not public (a task may be hidden), nor is the shape
of the deployment.

Checks: `database` (SELECT 1), `broker` (the job queue: reachable, queue depths, messages taken by a worker and
not yet acknowledged), `workers` (heartbeats seen within three beats: dynabench_site.celery), `cache` (a shared
Redis cache, when CACHE_URL is set), `models` (the model backend, and each deployed ensemble of an open round
with its members and, on TorchServe, whether each is registered), `stuck` (scoring: waiting, delayed, stuck,
failed; pipeline runs and uploads that stopped reporting).

The kernel holds the registry and the service checks (database, broker, workers, cache); an app registers what
it owns in its `AppConfig.ready`: `register(name, check, order=, label=, keeps_up=)` for a check (the model zoo:
`models`), `register_stuck(key, count, order=)` for a kind of work that can get stuck, counted with the one rule
its owner's pages use (annotation: `scoring`; rounds: `pipelines`, `uploads_evaluating_too_long`). This module
imports no app.

"down" (HTTP 503) means nothing useful can happen: the database is unreachable, or no verdict can be produced
(the model backend does not answer, or a broker is configured and no worker was seen). Everything else that is
wrong is "degraded" (HTTP 200): submissions are still saved and answered, and scoring catches up by itself.
Each check is bounded (about two seconds at most), so the page answers while a dependency hangs.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings

from zoo.registry import Registry

log = logging.getLogger(__name__)
OK, DEGRADED, DOWN, EMBEDDED = "ok", "degraded", "down", "embedded"


def redact(text: str) -> str:
    """No credentials in an answer anyone may read: user:password@ in URLs is masked."""
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def _timed(name: str, check: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = check()
    except Exception as exc:  # a check that fails is reported, never raised
        log.warning("health check %s failed: %s", name, exc)
        result = {"status": DOWN, "error": redact(f"{type(exc).__name__}: {exc}")[:300]}
    result["ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


# --- database ------------------------------------------------------------------------------------


def check_database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"status": OK, "vendor": connection.vendor}


# --- broker, queues, workers ---------------------------------------------------------------------


def broker_url() -> str | None:
    return settings.CELERY_BROKER_URL


def _redis(url: str):
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)


def check_broker() -> dict[str, Any]:
    url = broker_url()
    if not url or settings.CELERY_TASK_ALWAYS_EAGER:
        return {"status": EMBEDDED, "detail": "no broker: jobs run inline or in a subprocess"}
    if url.startswith(("redis://", "rediss://")):
        client = _redis(url)
        client.ping()
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        maps = settings.EXPLANATION_QUEUE
        return {"status": OK, "transport": "redis",
                "queues": {queue: client.llen(queue), maps: client.llen(maps)},
                "unacked": client.hlen("unacked"),  # taken by a worker, not yet acknowledged (incl. retries)
                "visibility_timeout_s": settings.CELERY_VISIBILITY_TIMEOUT}
    from dynabench_site.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return {"status": OK, "transport": url.split(":", 1)[0]}


def check_workers() -> dict[str, Any]:
    url = broker_url()
    if not url or settings.CELERY_TASK_ALWAYS_EAGER:
        return {"status": EMBEDDED, "seen": []}
    from dynabench_site.celery import HEARTBEAT_PREFIX

    if url.startswith(("redis://", "rediss://")):
        client = _redis(url)
        now = time.time()
        seen = []
        for key in client.scan_iter(match=HEARTBEAT_PREFIX + "*", count=100):
            value = client.get(key)
            if value is None:
                continue
            name = key.decode()[len(HEARTBEAT_PREFIX):]
            seen.append({"name": name, "seconds_ago": round(now - float(value), 1)})
    else:
        from dynabench_site.celery import app

        replies = app.control.ping(timeout=1.0) or []
        seen = [{"name": name, "seconds_ago": 0.0} for reply in replies for name in reply]
    seen.sort(key=lambda w: w["name"])
    return {"status": OK if seen else DOWN, "seen": seen, "count": len(seen)}


def check_cache() -> dict[str, Any]:
    if not settings.CACHE_URL:
        return {"status": EMBEDDED, "detail": "per-process memory cache (set CACHE_URL to share rate limits)"}
    from django.core.cache import cache

    cache.set("healthz:probe", "1", 10)
    return {"status": OK if cache.get("healthz:probe") == "1" else DEGRADED}


# --- stuck work ----------------------------------------------------------------------------------
# Each kind of work that can get stuck (scoring, pipeline runs, uploads) is counted by the app that owns it,
# with the one rule its own pages use; the kernel only gathers the counts into the `stuck` check.


def check_stuck() -> dict[str, Any]:
    details: dict[str, Any] = {}
    bad = False
    for work in sorted(STUCK_WORK.values(), key=lambda w: w.order):
        details[work.key], stuck = work.count()
        bad = bad or stuck
    return {"status": DEGRADED if bad else OK, **details}


# --- the registry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One line of the report. `keeps_up`: when given, the site is down unless this check's status is one of
    these (or when the check could not run: it needs the database and the database is down)."""

    name: str
    run: Callable[[], dict[str, Any]]
    order: int
    label: str
    needs_database: bool = True
    keeps_up: tuple[str, ...] = ()


@dataclass(frozen=True)
class StuckWork:
    """One kind of work that can get stuck, counted by its owner: `count()` -> (details, anything stuck?)."""

    key: str
    count: Callable[[], tuple[Any, bool]]
    order: int


CHECKS: Registry[Check] = Registry("health check")
STUCK_WORK: Registry[StuckWork] = Registry("kind of stuck work")


def register(name: str, run: Callable[[], dict[str, Any]], *, order: int, label: str, needs_database: bool = True,
             keeps_up: tuple[str, ...] = ()) -> None:
    """Add (or replace) a check; apps register theirs in `AppConfig.ready`. The report lists checks by `order`."""
    CHECKS.register(name, Check(name, run, order, label, needs_database, tuple(keeps_up)), replace=True)


def register_stuck(key: str, count: Callable[[], tuple[Any, bool]], *, order: int) -> None:
    """Add (or replace) a kind of stuck work under the `stuck` check, as `key` in its details."""
    STUCK_WORK.register(key, StuckWork(key, count, order), replace=True)


def label(name: str) -> str:
    check = CHECKS.get(name)
    return check.label if check is not None else name


register("database", check_database, order=10, label="Database", needs_database=False, keeps_up=(OK,))
register("broker", check_broker, order=20, label="Job queue (broker)", needs_database=False)
register("workers", check_workers, order=30, label="Workers", needs_database=False, keeps_up=(OK, EMBEDDED))
register("cache", check_cache, order=40, label="Shared cache", needs_database=False)
# "models" (order 50) is the model zoo's (modelzoo.health); the stuck work comes from annotation and rounds.
register("stuck", check_stuck, order=60, label="Stuck jobs")


# --- together ------------------------------------------------------------------------------------


def report() -> dict[str, Any]:
    checks: dict[str, dict[str, Any]] = {}
    registered = sorted(CHECKS.values(), key=lambda c: c.order)
    for check in registered:
        if check.needs_database and checks.get("database", {}).get("status") != OK:
            continue  # nothing that needs the database is asked when it is down
        checks[check.name] = _timed(check.name, check.run)
    if any(c.keeps_up and checks.get(c.name, {}).get("status") not in c.keeps_up for c in registered):
        status = DOWN
    elif all(c["status"] in (OK, EMBEDDED) for c in checks.values()):
        status = OK
    else:
        status = DEGRADED
    return {"status": status, "time": timezone.now().isoformat(), "checks": checks}


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """What anyone may read: the status, and each check's status without its details."""
    return {"status": data["status"], "time": data["time"],
            "checks": {name: {"status": check["status"]} for name, check in data["checks"].items()}}


def sees_details(request) -> bool:
    """Staff see the details: by their session, or by an API token (AuthenticationFailed for a refused one). A
    database that is down cannot say who is staff: then nobody is."""
    try:
        user = api_request(request).user  # the API's own authentication classes: tokens, then the session
        return bool(user.is_active and user.is_staff)
    except exceptions.AuthenticationFailed:
        raise
    except Exception as exc:  # the database (sessions, tokens) is down: the summary, never a 500
        log.warning("healthz: could not tell who asks (%s); answering the summary", type(exc).__name__)
        return False


def api_request(request) -> Request:
    """The request as the API sees it, authenticated by settings.REST_FRAMEWORK's authentication classes (the
    kernel names no app: the token class is found through the settings)."""
    return Request(request, authenticators=[auth() for auth in api_settings.DEFAULT_AUTHENTICATION_CLASSES])


@never_cache
@require_GET
def healthz(request):
    try:
        details = sees_details(request)
    except exceptions.AuthenticationFailed as refused:
        return JsonResponse({"detail": str(refused.detail), "code": "authentication_failed"}, status=401)
    data = report()
    return JsonResponse(data if details else summary(data), status=503 if data["status"] == DOWN else 200)


@never_cache
@require_GET
def live(request):
    return JsonResponse({"status": OK})
