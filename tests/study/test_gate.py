"""The study's gate before work (study.gate over tasks.gates): consent -> pre-survey -> ineligible -> arm, on the
pages and the API; owners and admins never asked; a task without a study (or with it off) unaffected and cheap."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from study import consent, gate, surveys
from study.models import Participant, Study
from tasks import gates, roles
from tests.study.consent_fixtures import GOOD_ANSWERS, add_pre_survey, api_for, page_for, submit

pytestmark = pytest.mark.django_db


def test_a_task_without_a_study_has_no_gate_and_the_check_is_cached(task_world):
    task, writer = task_world["task"], task_world["writer"]
    assert gate.pending(writer, task) is None
    with CaptureQueriesContext(connection) as queries:
        assert gate.pending(writer, task) is None
    assert len(queries) == 0  # from the access cache: this runs on every submission
    assert submit(api_for(writer), task_world).status_code in (201, 202)


def test_a_study_that_is_off_asks_nothing(task_world):
    task = task_world["task"]
    Study.objects.create(task=task, enabled=False)
    consent.publish(task, "Agree?")
    assert gates.pending(task_world["writer"], task) is None
    assert submit(api_for(task_world["writer"]), task_world).status_code in (201, 202)


def test_a_submission_without_consent_is_a_409_consent_with_the_next_url(study):
    refused = submit(api_for(study["writer"]), study)
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "consent" and body["next_url"] == "/tasks/studied/consent/"
    assert body["consent_version"] == 1 and body["first_visit"] is True
    assert "version 1" in body["detail"]


def test_the_create_page_sends_the_writer_to_the_consent_and_back(study):
    page = page_for(study["writer"])
    response = page.get("/tasks/studied/create/")
    assert response.status_code == 302
    assert response["Location"] == "/tasks/studied/consent/?next=%2Ftasks%2Fstudied%2Fcreate%2F"
    agreed = page.post("/tasks/studied/consent/", {"decision": "agree", "version": "1",
                                                   "next": "/tasks/studied/create/"})
    assert agreed.status_code == 302 and agreed["Location"] == "/tasks/studied/create/"
    assert page.get("/tasks/studied/create/").status_code == 200


def test_the_steps_come_in_order_consent_pre_survey_then_work(study):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    assert gates.pending(writer, task).code == "consent"
    consent.agree(writer, task, 1)
    step = gates.pending(writer, task)
    assert step.code == "pre_survey" and step.url == "/tasks/studied/surveys/pre/"
    refused = submit(api_for(writer), study).json()
    assert refused["code"] == "pre_survey" and refused["next_url"] == "/tasks/studied/surveys/pre/"
    page = page_for(writer)
    assert page.get("/tasks/studied/create/")["Location"].startswith("/tasks/studied/surveys/pre/?next=")
    surveys.answer(writer, task, "pre", GOOD_ANSWERS)
    assert gates.pending(writer, task) is None
    assert Participant.objects.get(task=task, user=writer).eligible is True
    assert submit(api_for(writer), study).status_code in (201, 202)


def test_an_ineligible_person_is_stopped_before_any_work(study):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    response = surveys.answer(writer, task, "pre", {**GOOD_ANSWERS, "age": 16})
    assert response.eligible is False
    assert Participant.objects.get(task=task, user=writer).eligible is False
    refused = submit(api_for(writer), study)
    assert refused.status_code == 409 and refused.json()["code"] == "ineligible"
    assert refused.json()["next_url"] == "/tasks/studied/study/stop/ineligible/"
    page = page_for(writer)
    assert page.get("/tasks/studied/create/")["Location"].startswith("/tasks/studied/study/stop/ineligible/")
    stop = page.get("/tasks/studied/study/stop/ineligible/")
    assert stop.status_code == 200 and "Thank you" in stop.content.decode()
    assert task.rounds.get().examples.count() == 0  # no work, so no pay owed
    # The pre-survey switched off later does not let an ineligible person in.
    task.surveys.filter(phase="pre").update(active=False)
    Study.objects.filter(task=task).update(seed=1)  # any write: a new access generation
    gate.access_cache.bump()
    assert gates.pending(writer, task).code == "ineligible"


def test_owners_and_admins_are_never_gated(study):
    add_pre_survey(study["task"])
    for who in ("owner", "admin"):
        roles.grant(study[who], roles.ANNOTATOR)  # they may write too, here: the gate is what this tests
        assert gates.pending(study[who], study["task"]) is None
        assert submit(api_for(study[who]), study).status_code in (201, 202)


def test_a_withdrawn_person_does_no_more_work(study):
    task, writer = study["task"], study["writer"]
    consent.agree(writer, task, 1)
    assert submit(api_for(writer), study).status_code in (201, 202)
    consent.withdraw(writer, task)
    refused = submit(api_for(writer), study)
    assert refused.status_code == 409 and refused.json()["code"] == "withdrawn"
    assert page_for(writer).get("/tasks/studied/create/")["Location"].startswith("/tasks/studied/study/stop/withdrawn/")


def test_a_new_consent_version_asks_again_and_says_it_changed(study):
    task, writer = study["task"], study["writer"]
    consent.agree(writer, task, 1)
    assert submit(api_for(writer), study).status_code in (201, 202)
    consent.publish(task, "A changed consent text.")
    refused = submit(api_for(writer), study).json()
    assert refused["code"] == "consent" and refused["consent_version"] == 2 and refused["first_visit"] is False
    assert "changed" in refused["detail"]
    consent.agree(writer, task, 2)
    again = submit(api_for(writer), study)
    assert again.status_code in (201, 202), again.json()


def test_passing_the_gate_makes_the_participant_row(study):
    task, writer = study["task"], study["writer"]
    consent.agree(writer, task, 1)
    assert gates.pending(writer, task) is None
    participant = Participant.objects.get(task=task, user=writer)
    assert participant.withdrawn_at is None and participant.language
