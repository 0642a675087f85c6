"""Who may open every page, send every form and call every API endpoint: one matrix for the whole site.

Each row is a route (its URL pattern), a method, the request, and what each persona gets: OK (2xx, or a
redirect that is not to a login page), LOGIN (401, or the login page), DENY (403), HIDDEN (404: it does not
exist for them), ALLOWED (past the permission checks: any answer but 401/403/404, for requests whose success
needs more than this world holds, e.g. a model to score with). `test_every_route_has_a_row` fails when a
route is added without a row here: a new page cannot appear without deciding who may open it.

The same rows check that no GET writes to the database, and (tests/site/test_csrf.py) that every form POST
and session-authenticated API call needs its CSRF token.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver

from accounts import services as accounts
from accounts import tokens
from annotation.models import Example, Suggestion
from crowd import links, quizzes
from rounds.models import PipelineRun, ResearcherModel
from tasks import guidelines, roles
from tests.factories import PASSWORD, ContextFactory, ExampleFactory, RoundFactory, TaskFactory, UserFactory
from tests.personas import make_personas

OK, LOGIN, DENY, HIDDEN, ALLOWED, BAD = "ok", "login", "deny", "hidden", "allowed", "bad"
# A fresh sign-up (the sign-up page's roles) next to the shared personas; "outsider" holds no role at all.
PERSONAS = ("anonymous", "outsider", "signup", "annotator", "validator", "expert", "researcher", "owner", "admin")
SIGNED_IN = PERSONAS[1:]


def expect(default: str, anonymous: str = LOGIN, **personas: str) -> dict[str, str]:
    """What each persona gets: `default` for everyone signed in, `anonymous` for the signed out, and the named
    exceptions (keyword per persona, or `only=` a tuple that gets OK)."""
    allowed = personas.pop("only", ())
    table = {p: default for p in SIGNED_IN} | {"anonymous": anonymous}
    table.update({p: OK for p in allowed})
    table.update(personas)
    return table


EVERYONE = expect(OK, anonymous=OK)
SIGNED = expect(OK)
OWNERS = expect(DENY, only=("owner", "admin"))
WRITERS = expect(DENY, only=("annotator", "signup"))
VALIDATORS = expect(DENY, only=("validator", "expert", "owner", "admin"))
EXPERTS = expect(DENY, only=("expert", "owner", "admin"))
RESEARCHERS = expect(DENY, only=("researcher", "owner", "admin"))
AUTHOR = expect(HIDDEN, only=("annotator",))  # the writer of the example, and nobody else
AUTHOR_OR_OWNERS = expect(HIDDEN, only=("annotator", "owner", "admin"))


@dataclass
class World:
    task: Any
    hidden: Any
    round: Any
    people: dict[str, Any]
    example: Example  # the annotator's, scored and fooled, in the validation queue
    rejected: Example  # the annotator's, rejected by the validators (appealable)
    decided: Example  # someone else's, verified (a gold or quiz candidate)
    run: PipelineRun  # failed
    upload: ResearcherModel  # evaluated
    batch: Any
    quiz: Any
    quiz_item: int = 0
    extra_ensemble: int = 0
    suggestion: int = 0  # the annotator's request to the writing assistant
    chat: Any = None  # the chat task's world (tests/chat/matrix: ChatWorld)
    predictions: Any = None  # the prediction uploads' world (tests/rounds/prediction_matrix)
    parts: dict = field(default_factory=dict)  # each PART_MATRICES module's world, by the module's short name


@dataclass(frozen=True)
class Row:
    route: str  # the URL pattern, as the resolver spells it
    method: str
    path: Callable[[World, Any], str]  # (world, acting user or None) -> path
    expected: dict[str, str]
    data: Callable[[World, Any], Any] | None = None
    json: bool = False  # an API call with a JSON body (else a form, or a multipart one when it holds files)
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.method} {self.route}{' ' + self.note if self.note else ''}"


def p(path: str) -> Callable[[World, Any], str]:
    return lambda w, u: path.format(w=w)


def own_token(w: World, user) -> str:
    holder = user or w.people["owner"]
    token, _ = tokens.issue(holder, "mine", counted=False)
    return f"/api/tokens/{token.pk}/"


def own_readonly_token(w: World, user) -> str:
    token, _ = tokens.issue(user or w.people["owner"], "mine", "read", counted=False)
    return f"/api/tokens/readonly/{token.pk}/"


def someones_token(w: World, user) -> str:
    token, _ = tokens.issue(w.people["researcher"] if user != w.people["researcher"] else w.people["owner"], "x",
                            counted=False)
    return f"/api/tokens/{token.pk}/"


def own_token_page(w: World, user) -> str:
    token, _ = tokens.issue(user or w.people["owner"], "mine", counted=False)
    return f"/me/tokens/{token.pk}/revoke/"


def credentials(w: World, user) -> dict:
    return {"username": user.username, "password": PASSWORD} if user else {"username": "nobody", "password": "nope"}


def signup_form(w: World, user) -> dict:
    name = f"new-{user.username if user else 'visitor'}"
    return {"username": name, "email": f"{name}@example.org", "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42"}


def import_file(w: World, user) -> dict:
    line = json.dumps({"prompt": "A new context to write about."})
    return {"file": io.BytesIO(line.encode()), "target": "contexts", "collection": "base", "split": "train"}


def link_path(w: World, user) -> str:
    return links.link_path(w.batch.assignments.get())


def assignment_path(w: World, user, suffix: str = "") -> str:
    return f"/assignments/{w.batch.assignments.get().pk}/{suffix}"


SUBMISSION = lambda w, u: {"context_id": w.example.context_id, "input": {"text": "A new and different sentence."},  # noqa: E731
                           "target": "positive"}

ROWS: list[Row] = [
    # --- API: tokens -------------------------------------------------------------------------------
    Row("api/auth/token/", "POST", p("/api/auth/token/"), expect(OK, anonymous=BAD), credentials, json=True),
    Row("api/tokens/", "GET", p("/api/tokens/"), SIGNED),
    Row("api/tokens/", "POST", p("/api/tokens/"), SIGNED, lambda w, u: {"name": "script"}, json=True),
    Row("api/tokens/<int:pk>/", "DELETE", own_token, SIGNED, note="own"),
    Row("api/tokens/<int:pk>/", "DELETE", someones_token, expect(HIDDEN), note="someone else's"),
    Row("api/tokens/readonly/", "GET", p("/api/tokens/readonly/"), SIGNED),
    Row("api/tokens/readonly/", "POST", p("/api/tokens/readonly/"), SIGNED, lambda w, u: {"name": "r"}, json=True),
    Row("api/tokens/readonly/<int:pk>/", "DELETE", own_readonly_token, SIGNED),
    # --- API: schema and docs ----------------------------------------------------------------------
    Row("api/schema/", "GET", p("/api/schema/"), EVERYONE),
    Row("api/docs/", "GET", p("/api/docs/"), EVERYONE),
    Row("api/redoc/", "GET", p("/api/redoc/"), EVERYONE),
    # --- API: tasks --------------------------------------------------------------------------------
    Row("api/^tasks/$", "GET", p("/api/tasks/"), EVERYONE),
    Row("api/^tasks/(?P<slug>[^/.]+)/$", "GET", p("/api/tasks/sentiment/"), EVERYONE),
    Row("api/^tasks/(?P<slug>[^/.]+)/$", "GET", p("/api/tasks/hidden/"), expect(HIDDEN, anonymous=HIDDEN,
                                                                                 only=("owner", "admin")), note="hidden"),
    Row("api/tasks/<slug:slug>/stats/", "GET", p("/api/tasks/sentiment/stats/"), EVERYONE),
    Row("api/tasks/<slug:slug>/guidelines/acknowledge/", "POST", p("/api/tasks/sentiment/guidelines/acknowledge/"),
        SIGNED, lambda w, u: {"version": 1}, json=True),
    Row("api/tasks/<slug:slug>/guidelines/acknowledge/", "POST", p("/api/tasks/hidden/guidelines/acknowledge/"),
        expect(HIDDEN, owner=ALLOWED, admin=ALLOWED), lambda w, u: {"version": 1}, json=True, note="hidden"),
    # --- API: the create flow ----------------------------------------------------------------------
    Row("api/tasks/<slug:slug>/contexts/next/", "POST", p("/api/tasks/sentiment/contexts/next/"), WRITERS, json=True),
    Row("api/tasks/<slug:slug>/examples/", "POST", p("/api/tasks/sentiment/examples/"), WRITERS, SUBMISSION, json=True),
    Row("api/tasks/<slug:slug>/sandbox/", "POST", p("/api/tasks/sentiment/sandbox/"),
        expect(DENY, annotator=ALLOWED, signup=ALLOWED), SUBMISSION, json=True, note="(no model: 503)"),
    Row("api/tasks/<slug:slug>/suggestions/", "POST", p("/api/tasks/sentiment/suggestions/"),
        expect(DENY, annotator=ALLOWED, signup=ALLOWED), lambda w, u: {"context_id": w.example.context_id,
                                                                      "target": "positive"},
        json=True, note="(the assistant is off: 409)"),
    Row("api/suggestions/<int:pk>/", "GET", p("/api/suggestions/{w.suggestion}/"), AUTHOR_OR_OWNERS),
    Row("api/tasks/<slug:slug>/inspiration/", "GET", p("/api/tasks/sentiment/inspiration/"), WRITERS),
    Row("api/examples/<int:pk>/", "GET", p("/api/examples/{w.example.pk}/"), AUTHOR_OR_OWNERS),
    Row("api/examples/<int:pk>/score/", "POST", p("/api/examples/{w.example.pk}/score/"), AUTHOR_OR_OWNERS, json=True),
    Row("api/examples/<int:pk>/word-map/", "POST", p("/api/examples/{w.example.pk}/word-map/"), AUTHOR_OR_OWNERS,
        json=True),
    Row("api/examples/<int:pk>/retract/", "POST", p("/api/examples/{w.example.pk}/retract/"), AUTHOR, json=True),
    Row("api/examples/<int:pk>/flag/", "POST", p("/api/examples/{w.example.pk}/flag/"), AUTHOR,
        lambda w, u: {"reason": "wrong label"}, json=True),
    Row("api/examples/<int:pk>/explanation/", "POST", p("/api/examples/{w.example.pk}/explanation/"), AUTHOR,
        lambda w, u: {"writer_explanation": "it missed the irony"}, json=True),
    Row("api/examples/<int:pk>/appeal/", "POST", p("/api/examples/{w.rejected.pk}/appeal/"), AUTHOR,
        lambda w, u: {"reason": "the label was right"}, json=True),
    Row("api/me/stats/", "GET", p("/api/me/stats/"), SIGNED),
    Row("api/me/examples/", "GET", p("/api/me/examples/"), SIGNED),
    # --- API: validation ---------------------------------------------------------------------------
    Row("api/tasks/<slug:slug>/validation/next/", "POST", p("/api/tasks/sentiment/validation/next/"), VALIDATORS,
        json=True),
    Row("api/examples/<int:pk>/validations/", "POST", p("/api/examples/{w.example.pk}/validations/"), VALIDATORS,
        lambda w, u: {"verdict": "correct"}, json=True),
    # --- API: models -------------------------------------------------------------------------------
    Row("api/^models/$", "GET", p("/api/models/"), EVERYONE),
    Row("api/^models/(?P<pk>[^/.]+)/$", "GET", p("/api/models/{w.upload.model_version_id}/"), EVERYONE),
    Row("api/^ensembles/$", "GET", p("/api/ensembles/"), EVERYONE),
    Row("api/^ensembles/(?P<pk>[^/.]+)/$", "GET", p("/api/ensembles/{w.extra_ensemble}/"), EVERYONE),
    # --- API: datasets -----------------------------------------------------------------------------
    Row("api/tasks/<slug:slug>/datasets/", "GET", p("/api/tasks/sentiment/datasets/"), EVERYONE),
    Row("api/tasks/<slug:slug>/rounds/<str:number>/dataset/", "GET",
        p("/api/tasks/sentiment/rounds/1/dataset/?version=live&split=train"), expect(DENY, anonymous=DENY,
                                                                                   only=("owner", "admin"))),
    Row("api/tasks/<slug:slug>/rounds/<str:number>/bundle/", "GET",
        p("/api/tasks/sentiment/rounds/1/bundle/?version=live"), expect(DENY, anonymous=DENY, only=("owner", "admin"))),
    Row("api/tasks/<slug:slug>/rounds/<str:number>/snapshots/", "POST", p("/api/tasks/sentiment/rounds/1/snapshots/"),
        expect(DENY, anonymous=DENY, only=("owner", "admin")), lambda w, u: {}, json=True),
    # --- API: rounds, leaderboard, uploads, jobs ---------------------------------------------------
    Row("api/tasks/<slug:slug>/rounds/", "GET", p("/api/tasks/sentiment/rounds/"), EVERYONE),
    Row("api/tasks/<slug:slug>/rounds/", "POST", p("/api/tasks/sentiment/rounds/"), OWNERS, lambda w, u: {}, json=True,
        note="(with the failed run out of the way)", extra={"abandon_run": True}),
    Row("api/tasks/<slug:slug>/leaderboard/", "GET", p("/api/tasks/sentiment/leaderboard/"), EVERYONE),
    Row("api/tasks/<slug:slug>/dashboard/", "GET", p("/api/tasks/sentiment/dashboard/"), EVERYONE),
    Row("api/tasks/<slug:slug>/models/", "GET", p("/api/tasks/sentiment/models/"), EVERYONE),
    Row("api/tasks/<slug:slug>/models/", "POST", p("/api/tasks/sentiment/models/"),
        expect(DENY, researcher=ALLOWED, owner=ALLOWED, admin=ALLOWED), lambda w, u: {"name": "mine"},
        note="(no files: 400 past the permissions)"),
    Row("api/models/uploads/<int:pk>/ensemble/", "POST", p("/api/models/uploads/{w.upload.pk}/ensemble/"), OWNERS,
        lambda w, u: {"include": True}, json=True),
    Row("api/models/uploads/<int:pk>/retrain-from/", "POST", p("/api/models/uploads/{w.upload.pk}/retrain-from/"),
        OWNERS, lambda w, u: {"retrain_from": False}, json=True),
    Row("api/jobs/<int:pk>/", "GET", p("/api/jobs/{w.run.pk}/"), OWNERS),
    Row("api/jobs/<int:pk>/retry/", "POST", p("/api/jobs/{w.run.pk}/retry/"), OWNERS, json=True),
    Row("api/jobs/<int:pk>/abandon/", "POST", p("/api/jobs/{w.run.pk}/abandon/"), OWNERS, json=True),
    Row("api/jobs/<int:pk>/approve/", "POST", p("/api/jobs/{w.run.pk}/approve/"), OWNERS, json=True,
        note="(awaiting approval)", extra={"run_status": "awaiting"}),
    Row("api/jobs/<int:pk>/discard/", "POST", p("/api/jobs/{w.run.pk}/discard/"), OWNERS, json=True,
        note="(awaiting approval)", extra={"run_status": "awaiting"}),
    Row("api/models/uploads/<int:pk>/retry/", "POST", p("/api/models/uploads/{w.upload.pk}/retry/"), OWNERS,
        json=True, note="(failed evaluation)", extra={"upload_status": "failed"}),
    Row("api/models/uploads/<int:pk>/abandon/", "POST", p("/api/models/uploads/{w.upload.pk}/abandon/"), OWNERS,
        json=True, note="(failed evaluation)", extra={"upload_status": "failed"}),
    # --- pages: accounts ---------------------------------------------------------------------------
    Row("", "GET", p("/"), EVERYONE),
    Row("accounts/signup/", "GET", p("/accounts/signup/"), EVERYONE),
    Row("accounts/signup/", "POST", p("/accounts/signup/"), EVERYONE, signup_form),
    Row("accounts/login/", "GET", p("/accounts/login/"), EVERYONE),
    Row("accounts/welcome/", "GET", p("/accounts/welcome/"), SIGNED),
    Row("favicon.ico", "GET", p("/favicon.ico"), EVERYONE),
    Row("healthz", "GET", p("/healthz"), EVERYONE),
    Row("healthz/live", "GET", p("/healthz/live"), EVERYONE),
    Row("accounts/login/", "POST", p("/accounts/login/"), EVERYONE, credentials, note="(anonymous: wrong password)"),
    Row("accounts/logout/", "POST", p("/accounts/logout/"), EVERYONE),
    Row("me/tokens/", "GET", p("/me/tokens/"), SIGNED),
    Row("me/tokens/", "POST", p("/me/tokens/"), SIGNED, lambda w, u: {"name": "laptop", "access": "read"}),
    Row("me/tokens/<int:pk>/revoke/", "POST", own_token_page, SIGNED),
    Row("people/<str:username>/", "GET", p("/people/annotator/"), EVERYONE),
    # --- pages: tasks ------------------------------------------------------------------------------
    Row("tasks/<slug:slug>/", "GET", p("/tasks/sentiment/"), EVERYONE),
    Row("tasks/<slug:slug>/", "GET", p("/tasks/hidden/"), expect(HIDDEN, anonymous=HIDDEN, only=("owner", "admin")),
        note="hidden"),
    Row("console/tasks/new/", "GET", p("/console/tasks/new/"), expect(DENY, only=("admin",))),
    Row("console/tasks/new/", "POST", p("/console/tasks/new/"), expect(DENY, only=("admin",)),
        lambda w, u: {"slug": "brand-new", "name": "Brand new", "kind": "sentiment", "visibility": "public",
                      "config": "{}"}),
    Row("tasks/<slug:slug>/console/settings/", "GET", p("/tasks/sentiment/console/settings/"), OWNERS),
    Row("tasks/<slug:slug>/console/settings/", "POST", p("/tasks/sentiment/console/settings/"), OWNERS,
        lambda w, u: {"name": "Sentiment", "instructions": "Be kind.", "config": "{}"}),
    Row("tasks/<slug:slug>/console/import/", "GET", p("/tasks/sentiment/console/import/"), OWNERS),
    Row("tasks/<slug:slug>/console/datasets/", "GET", p("/tasks/sentiment/console/datasets/"), OWNERS),
    Row("tasks/<slug:slug>/console/import/", "POST", p("/tasks/sentiment/console/import/"), OWNERS, import_file),
    Row("tasks/<slug:slug>/console/guidelines/", "GET", p("/tasks/sentiment/console/guidelines/"), OWNERS),
    Row("tasks/<slug:slug>/console/guidelines/", "POST", p("/tasks/sentiment/console/guidelines/"), OWNERS,
        lambda w, u: {"text": "Write examples that fool the model, and label them truthfully."}),
    Row("tasks/<slug:slug>/guidelines/", "GET", p("/tasks/sentiment/guidelines/"), EVERYONE),
    Row("tasks/<slug:slug>/guidelines/acknowledge/", "POST", p("/tasks/sentiment/guidelines/acknowledge/"), SIGNED,
        lambda w, u: {"version": "1"}),
    # --- pages: writing and validating -------------------------------------------------------------
    Row("tasks/<slug:slug>/create/", "GET", p("/tasks/sentiment/create/"), WRITERS),
    Row("me/examples/", "GET", p("/me/examples/"), SIGNED),
    Row("me/examples/<int:pk>/appeal/", "POST", p("/me/examples/{w.rejected.pk}/appeal/"), AUTHOR,
        lambda w, u: {"reason": "the label was right"}),
    Row("tasks/<slug:slug>/validate/", "GET", p("/tasks/sentiment/validate/"), VALIDATORS),
    Row("tasks/<slug:slug>/expert/", "GET", p("/tasks/sentiment/expert/"), EXPERTS),
    Row("tasks/<slug:slug>/expert/<int:pk>/resolve/", "POST", p("/tasks/sentiment/expert/{w.example.pk}/resolve/"),
        EXPERTS, lambda w, u: {"verdict": "correct"}),
    Row("tasks/<slug:slug>/figures/", "GET", p("/tasks/sentiment/figures/"), EVERYONE),
    Row("tasks/<slug:slug>/rounds/<int:number>/publish/", "POST", p("/tasks/sentiment/rounds/1/publish/"),
        expect(HIDDEN, only=("owner", "admin")), lambda w, u: {"audience": "researchers"}),
    # --- pages: the owner console, jobs, leaderboard, dashboard, uploads ---------------------------
    Row("console/", "GET", p("/console/"), SIGNED),
    Row("console/jobs/<int:pk>/", "GET", p("/console/jobs/{w.run.pk}/"), OWNERS),
    Row("console/jobs/<int:pk>/retry/", "POST", p("/console/jobs/{w.run.pk}/retry/"), OWNERS),
    Row("console/jobs/<int:pk>/abandon/", "POST", p("/console/jobs/{w.run.pk}/abandon/"), OWNERS),
    Row("console/jobs/<int:pk>/approve/", "POST", p("/console/jobs/{w.run.pk}/approve/"), OWNERS,
        note="(awaiting approval)", extra={"run_status": "awaiting"}),
    Row("console/jobs/<int:pk>/discard/", "POST", p("/console/jobs/{w.run.pk}/discard/"), OWNERS,
        note="(awaiting approval)", extra={"run_status": "awaiting"}),
    Row("console/uploads/<int:pk>/retry/", "POST", p("/console/uploads/{w.upload.pk}/retry/"), OWNERS,
        lambda w, u: {"next": "/tasks/sentiment/console/rounds/"}, note="(failed evaluation)",
        extra={"upload_status": "failed"}),
    Row("console/uploads/<int:pk>/abandon/", "POST", p("/console/uploads/{w.upload.pk}/abandon/"), OWNERS,
        lambda w, u: {"next": "/tasks/sentiment/console/rounds/"}, note="(failed evaluation)",
        extra={"upload_status": "failed"}),
    Row("console/uploads/<int:pk>/ensemble/", "POST", p("/console/uploads/{w.upload.pk}/ensemble/"), OWNERS,
        lambda w, u: {"include": "1", "next": "/tasks/sentiment/leaderboard/"}),
    Row("console/uploads/<int:pk>/retrain-from/", "POST", p("/console/uploads/{w.upload.pk}/retrain-from/"), OWNERS,
        lambda w, u: {"retrain_from": "0", "next": "/tasks/sentiment/leaderboard/"}),
    Row("tasks/<slug:slug>/console/", "GET", p("/tasks/sentiment/console/"), OWNERS),
    Row("tasks/<slug:slug>/console/rounds/", "GET", p("/tasks/sentiment/console/rounds/"), OWNERS),
    Row("tasks/<slug:slug>/console/health/", "GET", p("/tasks/sentiment/console/health/"), OWNERS),
    Row("tasks/<slug:slug>/console/datasets/", "GET", p("/tasks/sentiment/console/datasets/"), OWNERS),
    Row("tasks/<slug:slug>/console/health/scoring/retry/", "POST", p("/tasks/sentiment/console/health/scoring/retry/"),
        OWNERS),
    Row("tasks/<slug:slug>/console/rounds/", "POST", p("/tasks/sentiment/console/rounds/"), OWNERS,
        lambda w, u: {"description": "next round"}, extra={"abandon_run": True}),
    Row("tasks/<slug:slug>/leaderboard/", "GET", p("/tasks/sentiment/leaderboard/"), EVERYONE),
    Row("tasks/<slug:slug>/leaderboard/", "POST", p("/tasks/sentiment/leaderboard/"),
        expect(DENY, anonymous=DENY, only=("owner", "admin")),
        lambda w, u: {"performance": 4, "throughput": 1, "memory": 1, "robustness": 0, "fairness": 0},
        note="(Dynascore weights)"),
    Row("tasks/<slug:slug>/dashboard/", "GET", p("/tasks/sentiment/dashboard/"), EVERYONE),
    Row("tasks/<slug:slug>/models/upload/", "GET", p("/tasks/sentiment/models/upload/"), RESEARCHERS),
    Row("tasks/<slug:slug>/models/upload/", "POST", p("/tasks/sentiment/models/upload/"),
        expect(DENY, researcher=ALLOWED, owner=ALLOWED, admin=ALLOWED), lambda w, u: {"name": "mine"},
        note="(no files: the form again)"),
    # --- pages: the crowd --------------------------------------------------------------------------
    Row("tasks/<slug:slug>/console/crowd/", "GET", p("/tasks/sentiment/console/crowd/"), OWNERS),
    Row("tasks/<slug:slug>/console/crowd/members/", "POST", p("/tasks/sentiment/console/crowd/members/"), OWNERS,
        lambda w, u: {"username": "outsider", "role": "expert"}),
    Row("tasks/<slug:slug>/console/crowd/people/", "GET", p("/tasks/sentiment/console/crowd/people/"), OWNERS),
    Row("tasks/<slug:slug>/console/crowd/suspend/", "POST", p("/tasks/sentiment/console/crowd/suspend/"), OWNERS,
        lambda w, u: {"username": "signup", "reason": "spam"}),
    Row("tasks/<slug:slug>/console/crowd/gold/", "GET", p("/tasks/sentiment/console/crowd/gold/"), OWNERS),
    Row("tasks/<slug:slug>/console/crowd/gold/mark/", "POST", p("/tasks/sentiment/console/crowd/gold/mark/"), OWNERS,
        lambda w, u: {"example": w.decided.pk}),
    Row("tasks/<slug:slug>/console/crowd/quiz/<str:role>/", "GET", p("/tasks/sentiment/console/crowd/quiz/annotator/"),
        OWNERS),
    Row("tasks/<slug:slug>/console/crowd/quiz/<str:role>/", "POST",
        p("/tasks/sentiment/console/crowd/quiz/validator/"), OWNERS,
        lambda w, u: {"form": "settings", "pass_mark": "0.8", "max_attempts": "3", "active": "on"}),
    Row("tasks/<slug:slug>/console/crowd/quiz/<str:role>/add/", "POST",
        p("/tasks/sentiment/console/crowd/quiz/validator/add/"), OWNERS, lambda w, u: {"example": [w.decided.pk]}),
    Row("tasks/<slug:slug>/console/crowd/quiz/<str:role>/items/<int:item>/delete/", "POST",
        p("/tasks/sentiment/console/crowd/quiz/validator/items/{w.quiz_item}/delete/"), OWNERS),
    Row("tasks/<slug:slug>/console/crowd/batches/new/", "GET", p("/tasks/sentiment/console/crowd/batches/new/"), OWNERS),
    Row("tasks/<slug:slug>/console/crowd/batches/new/", "POST", p("/tasks/sentiment/console/crowd/batches/new/"),
        OWNERS, lambda w, u: {"name": "wave 2", "source": "prolific", "workers": "W9,A9", "hours": "24",
                              "examples_required": "2"}),
    Row("console/batches/<int:pk>/", "GET", p("/console/batches/{w.batch.pk}/"), OWNERS),
    Row("console/batches/<int:pk>/links.csv", "GET", p("/console/batches/{w.batch.pk}/links.csv"), OWNERS),
    Row("console/batches/<int:pk>/close/", "POST", p("/console/batches/{w.batch.pk}/close/"), OWNERS),
    Row("console/batches/<int:pk>/pay/", "GET", p("/console/batches/{w.batch.pk}/pay/"), OWNERS),
    Row("console/batches/<int:pk>/pay.csv", "GET", p("/console/batches/{w.batch.pk}/pay.csv"), OWNERS),
    Row("tasks/<slug:slug>/quiz/<str:role>/", "GET", p("/tasks/sentiment/quiz/validator/"), SIGNED),
    Row("tasks/<slug:slug>/quiz/<str:role>/", "POST", p("/tasks/sentiment/quiz/validator/"), SIGNED,
        lambda w, u: {f"q{w.quiz_item}": "correct"}),
    Row("go/<str:token>/", "GET", link_path, EVERYONE),
    Row("go/<str:token>/", "POST", link_path, EVERYONE, note="(signs in as the worker)"),
    Row("assignments/<int:pk>/", "GET", assignment_path, expect(HIDDEN), note="(the worker's own only)"),
    Row("assignments/<int:pk>/finish/", "POST", lambda w, u: assignment_path(w, u, "finish/"), expect(HIDDEN)),
    # --- Django's admin: staff only (its own login page) -------------------------------------------
    Row("admin/", "GET", p("/admin/"), expect(LOGIN, only=("admin",))),
    Row("admin/login/", "GET", p("/admin/login/"), EVERYONE),
    Row("admin/login/", "POST", p("/admin/login/"), EVERYONE, credentials,
        note="(the form again for a wrong or non-staff account)"),
]


import sys as _sys  # noqa: E402

from tests.chat import matrix as chat_matrix  # noqa: E402

ROWS += chat_matrix.rows(_sys.modules[__name__])  # the chat kind's routes (tests/chat/matrix)

from tests.rounds import prediction_matrix  # noqa: E402

ROWS += prediction_matrix.rows(_sys.modules[__name__])  # prediction-file uploads (tests/rounds/prediction_matrix)

import importlib as _importlib  # noqa: E402

# More parts' rows, each module with `build(world) -> its world` (kept in `world.parts[<short name>]`) and `rows(m)`:
# the study (consent, surveys, arms, translations), notifications, the crowd platform's lifecycle, languages.
PART_MATRICES = {name.rsplit(".", 1)[-1]: _importlib.import_module(name) for name in (
    "tests.study.study_matrix", "tests.notify.notify_matrix", "tests.crowd.lifecycle_matrix",
    "tests.site.i18n_matrix", "tests.rounds.arms_matrix", "tests.study.arm_matrix")}
for _part in PART_MATRICES.values():
    ROWS += _part.rows(_sys.modules[__name__])


# --- the world every row acts on ---------------------------------------------------------------------


def build_world() -> World:
    from modelzoo.models import Ensemble, ModelVersion

    task = TaskFactory(slug="sentiment", kind="sentiment")
    round_ = RoundFactory(task=task, number=1)
    people = vars(make_personas(task)).copy()
    signup = UserFactory(username="signup")
    roles.grant(signup, *roles.SIGNUP_ROLES)
    accounts.record_signup(signup, "192.0.2.10")
    people["signup"] = signup
    hidden = TaskFactory(slug="hidden", kind="sentiment", visibility="hidden")
    hidden.owners.add(people["owner"])
    context = ContextFactory(task=task, round=round_)
    example = ExampleFactory(round=round_, context=context, author=people["annotator"])
    rejected = ExampleFactory(round=round_, context=context, author=people["annotator"], input={"text": "rejected one"},
                              consensus=Example.Consensus.REJECTED)
    decided = ExampleFactory(round=round_, context=context, input={"text": "a verified one"},
                             consensus=Example.Consensus.VERIFIED, validated_label="positive")
    run = PipelineRun.objects.create(task=task, from_round=round_, status=PipelineRun.Status.FAILED,
                                     started_by=people["owner"], error="boom")
    version = ModelVersion.objects.create(task=task, version=1, name="uploaded", head="classification", status="ready")
    upload = ResearcherModel.objects.create(task=task, uploaded_by=people["researcher"], name="mine",
                                            status=ResearcherModel.Status.EVALUATED, model_version=version)
    ensemble = Ensemble.objects.create(round=round_, strategy="mean_probs", active=False)  # listed, never used
    batch = links.create_batch(task, people["owner"], name="wave", source="prolific", hours=48, examples_required=1,
                               workers="W1,A1")
    quiz = quizzes.ensure_quiz(task, "validator")
    quizzes.add_example(quiz, decided)
    suggestion = Suggestion.objects.create(round=round_, context=example.context, author=people["annotator"],
                                           target="positive", state=Suggestion.State.FAILED,
                                           error="The writing assistant is off for this task.")
    world = World(task, hidden, round_, people, example, rejected, decided, run, upload, batch, quiz,
                  quiz.items.get().pk, ensemble.pk, suggestion.pk)
    world.chat = chat_matrix.build(people)
    world.predictions = prediction_matrix.build(world)
    for name, part in PART_MATRICES.items():
        world.parts[name] = part.build(world)
    for shown in (task, world.chat.task):
        guidelines.publish(shown, "Be kind.", by=people["owner"])
        for user in people.values():  # everyone has read them: the guidelines rule is not what this matrix tests
            guidelines.acknowledge(user, shown, 1)
    return world


def outcome(response) -> str:
    status = response.status_code
    if status == 401 or (status in (301, 302) and "login" in response.get("Location", "")):
        return LOGIN
    return {403: DENY, 404: HIDDEN, 400: BAD}.get(status, OK if status < 400 else f"status {status}")


def send(row: Row, world: World, persona: str, client: Client | None = None):
    user = world.people.get(persona)
    client = client or Client()
    if user is not None:
        client.force_login(user)
    if row.extra.get("abandon_run"):
        PipelineRun.objects.filter(pk=world.run.pk).update(status=PipelineRun.Status.ABANDONED)
    if "run_status" in row.extra:
        PipelineRun.objects.filter(pk=world.run.pk).update(status=row.extra["run_status"])
    if "upload_status" in row.extra:
        ResearcherModel.objects.filter(pk=world.upload.pk).update(status=row.extra["upload_status"])
    path = row.path(world, user)
    data = row.data(world, user) if row.data else None
    method = getattr(client, row.method.lower())
    if row.method in ("GET", "DELETE"):
        return method(path)
    if row.json:
        return method(path, json.dumps(data or {}), content_type="application/json")
    return method(path, data or {})


def run_as(row: Row, world: World, persona: str, client: Client | None = None):
    """The row's request as `persona`, in a savepoint rolled back afterwards (each persona finds the same world;
    files a request writes, such as a published bundle, go to a folder of the persona's own)."""
    with transaction.atomic(), override_settings(EXPORTS_DIR=Path(settings.EXPORTS_DIR) / persona):
        response = send(row, world, persona, client)
        transaction.set_rollback(True)
    return response


# --- the tests ---------------------------------------------------------------------------------------


def patterns() -> dict[str, Callable]:
    """Every route of the site (its pattern as the resolver spells it) and its view."""

    def walk(items, prefix=""):
        for item in items:
            if isinstance(item, URLResolver) and str(item.pattern) == "admin/":
                yield "admin/", None  # Django's own app: one row for it
            elif isinstance(item, URLResolver):
                yield from walk(item.url_patterns, prefix + str(item.pattern))
            elif isinstance(item, URLPattern):
                yield prefix + str(item.pattern), item.callback

    return dict(walk(get_resolver().url_patterns))


def class_methods(view) -> set[str]:
    """The methods a class-based view (or a router's viewset) answers, OPTIONS and HEAD aside."""
    if view is None:
        return set()
    if getattr(view, "actions", None):  # a DRF viewset bound to {method: action}
        return {m.upper() for m in view.actions} - {"OPTIONS", "HEAD"}
    cls = getattr(view, "view_class", None)
    if cls is None:
        return set()
    return {m.upper() for m in cls.http_method_names if hasattr(cls, m)} - {"OPTIONS", "HEAD"}


def test_every_route_has_a_row():
    covered = {row.route for row in ROWS}
    missing = sorted(set(patterns()) - covered)
    assert missing == [], f"routes without a row in the permission matrix (decide who may open them): {missing}"
    assert sorted(covered - set(patterns())) == []  # no row for a route that is gone


def test_every_method_a_class_based_view_answers_has_a_row():
    """A new handler (a `delete` on an API view, say) cannot go unchecked either; function views are covered
    by their rows above, and refuse the methods they do not handle (require_POST, or the form pattern)."""
    covered = {(row.route, row.method) for row in ROWS}
    for route, view in patterns().items():
        if route == "admin/":
            continue
        missing = sorted(m for m in class_methods(view) if (route, m) not in covered)
        assert missing == [], f"{route}: no row for {missing}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_permission_matrix(row, world):
    got = {persona: outcome(run_as(row, world, persona)) for persona in PERSONAS}
    expected = {persona: row.expected[persona] for persona in PERSONAS}
    for persona in PERSONAS:
        if expected[persona] == ALLOWED:
            expected[persona] = got[persona] if got[persona] not in (LOGIN, DENY, HIDDEN) else "allowed (past permissions)"
    assert got == expected


GET_ROWS = [row for row in ROWS if row.method == "GET"]
# GETs that materialise derived data, idempotently, for the task's owners only: a live dataset assigns the
# round's splits (once; a split never moves afterwards) and caches the reliability-weighted labels of the votes.
DERIVED = {"api/tasks/<slug:slug>/rounds/<str:number>/dataset/", "api/tasks/<slug:slug>/rounds/<str:number>/bundle/"}
DERIVED_TABLES = ("annotation_example", "validation_reliabilitylabel", "validation_reliabilityrun")


@pytest.mark.parametrize("row", GET_ROWS, ids=lambda r: r.id)
def test_no_get_writes_to_the_database(row, world):
    """Pages and API reads change nothing: no INSERT, UPDATE or DELETE, whoever asks (the live dataset's derived
    splits and reliability labels aside: `DERIVED`)."""
    for persona in PERSONAS:
        client = Client()
        user = world.people.get(persona)
        if user is not None:
            client.force_login(user)
        with CaptureQueriesContext(connection) as queries:
            client.get(row.path(world, user))
        writes = [q["sql"][:120] for q in queries.captured_queries
                  if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
        if row.route in DERIVED:
            writes = [w for w in writes if not any(f'"{table}"' in w for table in DERIVED_TABLES)]
        assert writes == [], f"{persona}: {writes}"


# --- what each persona reads of a task's settings ------------------------------------------------------------

SHOWN, LEFT_OUT = "shown", "left out"
# The language model provider settings (which endpoint, which model, its timeout) of the task API's `config`:
# the task's owners and staff only (issue 39, item 14).
PROVIDER_SETTINGS = {persona: LEFT_OUT for persona in PERSONAS} | {"owner": SHOWN, "admin": SHOWN}


def test_who_reads_a_tasks_language_model_provider_settings(world):
    task_api = Row("api/^tasks/(?P<slug>[^/.]+)/$", "GET", p("/api/tasks/sentiment/"), EVERYONE)
    got = {}
    for persona in PERSONAS:
        config = run_as(task_api, world, persona).json()["config"]
        shown = ["provider" in config[part] for part in ("assistant", "opponent")]
        got[persona] = SHOWN if all(shown) else LEFT_OUT if not any(shown) and "endpoint" not in json.dumps(config) \
            else f"partly: {shown}"
        assert config["labels"] and "enabled" in config["assistant"]  # the rest of the config is there
    assert got == PROVIDER_SETTINGS
