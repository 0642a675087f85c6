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

"down" (HTTP 503) means nothing useful can happen: the database is unreachable, or no verdict can be produced
(the model backend does not answer, or a broker is configured and no worker was seen). Everything else that is
wrong is "degraded" (HTTP 200): submissions are still saved and answered, and scoring catches up by itself.
Each check is bounded (about two seconds at most), so the page answers while a dependency hangs.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from rest_framework import exceptions

log = logging.getLogger(__name__)
OK, DEGRADED, DOWN, EMBEDDED = "ok", "degraded", "down", "embedded"


def redact(text: str) -> str:
    """No credentials in an answer anyone may read: user:password@ in URLs is masked."""
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def _timed(check) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = check()
    except Exception as exc:  # a check that fails is reported, never raised
        log.warning("health check %s failed: %s", check.__name__, exc)
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
    return getattr(settings, "CELERY_BROKER_URL", None)


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
    if not getattr(settings, "CACHE_URL", None):
        return {"status": EMBEDDED, "detail": "per-process memory cache (set CACHE_URL to share rate limits)"}
    from django.core.cache import cache

    cache.set("healthz:probe", "1", 10)
    return {"status": OK if cache.get("healthz:probe") == "1" else DEGRADED}


# --- models --------------------------------------------------------------------------------------


def deployed_ensembles() -> list[dict[str, Any]]:
    """Each open round's active ensemble and its members."""
    from modelzoo.services import active_ensemble
    from tasks.models import Round

    found = []
    for round_ in Round.objects.filter(status=Round.Status.OPEN).select_related("task").order_by("task__slug"):
        ensemble = active_ensemble(round_)
        members = ensemble.ordered_members() if ensemble else []
        found.append({"task": round_.task.slug, "round": round_.number, "ensemble": ensemble.pk if ensemble else None,
                      "members": [{"name": m.name, "serving_name": m.serving_name} for m in members]})
    return found


def check_models() -> dict[str, Any]:
    from modelzoo.serving import make_backend

    backend = settings.MODEL_BACKEND
    ensembles = deployed_ensembles()
    # A backend built now from the current settings; it says whether it answers and serves each ensemble.
    state = make_backend(backend).health([_member_refs(e["ensemble"]) for e in ensembles], timeout_s=2.0)
    for ensemble, served in zip(ensembles, state.pop("ensembles", None) or [], strict=False):
        ensemble.update(served)
    return {**state, "backend": backend, "ensembles": ensembles}


def _member_refs(ensemble_id: int | None) -> list:
    from modelzoo.models import Ensemble
    from zoo.serving.base import ModelRef

    ensemble = Ensemble.objects.filter(pk=ensemble_id).first() if ensemble_id else None
    return [ModelRef.of(m) for m in ensemble.ordered_members()] if ensemble else []


# --- stuck jobs ----------------------------------------------------------------------------------


def check_stuck() -> dict[str, Any]:
    from annotation.scoring_health import counts
    from rounds.models import PipelineRun, ResearcherModel
    from rounds.pipeline import is_stale

    scoring = counts()
    unfinished = PipelineRun.objects.filter(status__in=[PipelineRun.Status.PENDING, PipelineRun.Status.RUNNING])
    stale_runs = [{"id": run.pk, "task": run.task.slug, "status": run.status}
                  for run in unfinished.select_related("task") if is_stale(run)]
    upload_old = timezone.now() - timedelta(seconds=int(getattr(settings, "ROUNDS_PIPELINE_STALE_S", 1800)))
    stale_uploads = ResearcherModel.objects.filter(
        status=ResearcherModel.Status.EVALUATING, created_at__lt=upload_old).count()
    bad = scoring["stuck"] or scoring["failed"] or stale_runs or stale_uploads
    return {"status": DEGRADED if bad else OK, "scoring": scoring, "pipelines": stale_runs,
            "uploads_evaluating_too_long": stale_uploads}


# --- together ------------------------------------------------------------------------------------


def report() -> dict[str, Any]:
    checks = {"database": _timed(check_database)}
    db_up = checks["database"]["status"] == OK
    checks["broker"] = _timed(check_broker)
    checks["workers"] = _timed(check_workers)
    checks["cache"] = _timed(check_cache)
    if db_up:
        checks["models"] = _timed(check_models)
        checks["stuck"] = _timed(check_stuck)
    can_score = checks.get("models", {}).get("status") in (OK, DEGRADED) and checks["workers"]["status"] in (OK, EMBEDDED)
    if not db_up or not can_score:
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
    from accounts.authentication import ApiTokenAuthentication

    try:
        found = ApiTokenAuthentication().authenticate(request)
        user = found[0] if found else request.user
        return bool(user.is_active and user.is_staff)
    except exceptions.AuthenticationFailed:
        raise
    except Exception as exc:  # the database (sessions, tokens) is down: the summary, never a 500
        log.warning("healthz: could not tell who asks (%s); answering the summary", type(exc).__name__)
        return False


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
