"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES): the
study's consent and surveys (study.urls, study.api_urls; the arms' and translations' rows are their own modules).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`): a
public task of its own, "consenting" (the sentiment task's rows must not meet a study), with its study on, consent
version 1 that every signed-in persona agreed to, a pre-survey and a post-survey of one question each (nobody
answered yet). `rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in
as `m`.

Who: every signed-in person who may see the task reads the consent, agrees, withdraws, answers the surveys and
reads the stop pages (the login first otherwise); the study console, its editors, the records' downloads and the
owner's API are the task's owners' and admins' (403 for the others who see the task)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class StudyWorld:
    task: Any


def build(world: Any) -> StudyWorld:
    from study import consent, surveys
    from study.models import Study
    from tests.factories import TaskFactory

    task = TaskFactory(slug="consenting", kind="sentiment")
    task.owners.add(world.people["owner"])
    Study.objects.create(task=task, enabled=True)
    consent.publish(task, "# Taking part\n\nPlease agree.", by=world.people["owner"])
    pre = surveys.configure(task, "pre", title="Before")
    surveys.replace_questions(pre, [{"key": "pick", "kind": "single", "text": "Pick one", "choices": ["a", "b"]}])
    post = surveys.configure(task, "post", title="After")
    surveys.replace_questions(post, [{"key": "hard", "kind": "likert", "text": "How hard?",
                                      "choices": ["easy", "fair", "hard"]}])
    for user in world.people.values():
        consent.agree(user, task, 1)
    return StudyWorld(task)


QUESTION = {"key": "pick", "kind": "single", "text": "Pick one", "choices": "a\nb", "required": "on"}


def rows(m: Any) -> list:
    Row, p, expect = m.Row, m.p, m.expect
    signed, owners = m.SIGNED, m.OWNERS
    owners_api = expect(m.DENY, only=("owner", "admin"))
    base = "/tasks/consenting"
    console = f"{base}/console/study"
    return [
        # --- the participant's pages ---
        Row("tasks/<slug:slug>/consent/", "GET", p(f"{base}/consent/"), signed),
        Row("tasks/<slug:slug>/consent/", "POST", p(f"{base}/consent/"), signed,
            lambda w, u: {"decision": "agree", "version": "1", "next": "/"}),
        Row("tasks/<slug:slug>/consent/withdraw/", "GET", p(f"{base}/consent/withdraw/"), signed),
        Row("tasks/<slug:slug>/consent/withdraw/", "POST", p(f"{base}/consent/withdraw/"), signed,
            lambda w, u: {"confirm": "yes"}),
        Row("tasks/<slug:slug>/surveys/<str:phase>/", "GET", p(f"{base}/surveys/pre/"), signed),
        Row("tasks/<slug:slug>/surveys/<str:phase>/", "POST", p(f"{base}/surveys/pre/"), signed,
            lambda w, u: {"pick": "a", "next": "/"}),
        Row("tasks/<slug:slug>/study/stop/<str:reason>/", "GET", p(f"{base}/study/stop/ineligible/"), signed),
        # --- the owner's study console ---
        Row("tasks/<slug:slug>/console/study/", "GET", p(f"{console}/"), owners),
        Row("tasks/<slug:slug>/console/study/", "POST", p(f"{console}/"), owners,
            lambda w, u: {"enabled": "on", "seed": "0", "assignment": "balanced", "languages": ["en", "ar"]}),
        Row("tasks/<slug:slug>/console/study/consent/", "GET", p(f"{console}/consent/"), owners),
        Row("tasks/<slug:slug>/console/study/consent/", "POST", p(f"{console}/consent/"), owners,
            lambda w, u: {"text": "A new consent text."}),
        Row("tasks/<slug:slug>/console/study/consent.csv", "GET", p(f"{console}/consent.csv"), owners),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/", "GET", p(f"{console}/surveys/pre/"), owners),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/", "POST", p(f"{console}/surveys/pre/"), owners,
            lambda w, u: {"title": "Before you start", "intro": "", "active": "on"}),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/answers.csv", "GET",
            p(f"{console}/surveys/pre/answers.csv"), owners),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/", "POST",
            p(f"{console}/surveys/pre/questions/"), owners,
            lambda w, u: {"key": "more", "kind": "text", "text": "Anything else?", "max_length": "100"}),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/", "GET",
            p(f"{console}/surveys/pre/questions/pick/"), owners),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/", "POST",
            p(f"{console}/surveys/pre/questions/pick/"), owners, lambda w, u: dict(QUESTION)),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/delete/", "POST",
            p(f"{console}/surveys/pre/questions/pick/delete/"), owners),
        Row("tasks/<slug:slug>/console/study/surveys/<str:phase>/questions/<slug:key>/move/", "POST",
            p(f"{console}/surveys/pre/questions/pick/move/"), owners, lambda w, u: {"direction": "down"}),
        # --- the participant's API ---
        Row("api/tasks/<slug:slug>/consent/", "GET", p("/api/tasks/consenting/consent/"), signed),
        Row("api/tasks/<slug:slug>/consent/", "POST", p("/api/tasks/consenting/consent/"), signed,
            lambda w, u: {"version": 1, "agree": True}, json=True),
        Row("api/tasks/<slug:slug>/consent/withdraw/", "POST", p("/api/tasks/consenting/consent/withdraw/"), signed,
            lambda w, u: {"confirm": True}, json=True),
        Row("api/tasks/<slug:slug>/surveys/<str:phase>/", "GET", p("/api/tasks/consenting/surveys/pre/"), signed),
        Row("api/tasks/<slug:slug>/surveys/<str:phase>/", "POST", p("/api/tasks/consenting/surveys/pre/"), signed,
            lambda w, u: {"answers": {"pick": "b"}}, json=True),
        # --- the owner's API ---
        Row("api/tasks/<slug:slug>/study/", "GET", p("/api/tasks/consenting/study/"), owners_api),
        Row("api/tasks/<slug:slug>/study/", "PATCH", p("/api/tasks/consenting/study/"), owners_api,
            lambda w, u: {"enabled": True, "languages": ["en", "es"]}, json=True),
        Row("api/tasks/<slug:slug>/study/consent/", "GET", p("/api/tasks/consenting/study/consent/"), owners_api),
        Row("api/tasks/<slug:slug>/study/consent/", "POST", p("/api/tasks/consenting/study/consent/"), owners_api,
            lambda w, u: {"text": "Version two."}, json=True),
        Row("api/tasks/<slug:slug>/study/consent-records/", "GET", p("/api/tasks/consenting/study/consent-records/"),
            owners_api),
        Row("api/tasks/<slug:slug>/study/surveys/<str:phase>/", "GET",
            p("/api/tasks/consenting/study/surveys/post/"), owners_api),
        Row("api/tasks/<slug:slug>/study/surveys/<str:phase>/", "PUT",
            p("/api/tasks/consenting/study/surveys/post/"), owners_api,
            lambda w, u: {"title": "After", "questions": [{"key": "hard", "kind": "number", "text": "Minutes?"}]},
            json=True),
        Row("api/tasks/<slug:slug>/study/surveys/<str:phase>/answers/", "GET",
            p("/api/tasks/consenting/study/surveys/pre/answers/"), owners_api),
    ]
