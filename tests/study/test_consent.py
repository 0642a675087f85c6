"""Consent (issue 42, item 1): versioned Markdown, recorded with version, time and language, declinable,
withdrawable (final; the person's ids for the exports), exportable for the study's records without the examples."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.utils import translation

from accounts.pseudonyms import person_id
from dynabench_site.errors import Conflict, InvalidInput
from study import consent, exits
from study.models import ConsentRecord, Participant
from tests.study.consent_fixtures import CONSENT, api_for, page_for, submit

pytestmark = pytest.mark.django_db


# --- versions ------------------------------------------------------------------------------------------------


def test_a_changed_text_is_a_new_version_and_the_same_text_is_not(study):
    task = study["task"]
    assert consent.current(task).version == 1
    assert consent.publish(task, CONSENT + "\n").version == 1  # trailing space only: the same text
    assert consent.publish(task, "Another text").version == 2
    assert [c.version for c in task.consents.all()] == [2, 1]  # both kept


@pytest.mark.parametrize(("text", "message"), [("", "must not be empty"), ("  \n ", "must not be empty"),
                                               ("x" * 50_001, "the limit is 50000"),
                                               ("evil \u202e text", "bidirectional control"), (42, "must be a text")])
def test_a_bad_consent_text_is_refused_naming_the_field(study, text, message):
    with pytest.raises(InvalidInput) as refused:
        consent.publish(study["task"], text)
    assert refused.value.field == "text" and message in refused.value.message


def test_the_owner_publishes_a_version_on_the_console_page(study):
    page = page_for(study["owner"])
    assert page.get("/tasks/studied/console/study/consent/").status_code == 200
    response = page.post("/tasks/studied/console/study/consent/", {"text": "Version two.\n\n* a point"})
    assert response.status_code == 302 and consent.current(study["task"]).version == 2
    refused = page.post("/tasks/studied/console/study/consent/", {"text": "bad \u202e"})
    assert refused.status_code == 400 and "bidirectional control" in refused.content.decode()
    assert page_for(study["writer"]).get("/tasks/studied/console/study/consent/").status_code == 403


# --- agreeing ------------------------------------------------------------------------------------------------


def test_the_consent_page_renders_the_markdown_safely(study):
    consent.publish(study["task"], "# Title\n\n<script>alert(1)</script>**bold**")
    html = page_for(study["writer"]).get("/tasks/studied/consent/").content.decode()
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html and "<script>alert" not in html
    assert 'id="consent-agree"' in html and 'id="consent-decline"' in html


def test_a_record_keeps_the_version_the_time_and_the_language(study):
    writer = study["writer"]
    page = page_for(writer)
    page.cookies["language"] = "es"
    response = page.post("/tasks/studied/consent/", {"decision": "agree", "version": "1"})
    assert response.status_code == 302
    record = ConsentRecord.objects.get(user=writer)
    assert (record.version, record.language, record.withdrawn_at) == (1, "es", None)
    assert record.agreed_at is not None and record.consent == consent.current(study["task"])
    assert Participant.objects.get(user=writer, task=study["task"]).language == "es"
    assert consent.status(writer, study["task"])["agreed"] is True


def test_agreeing_to_an_old_version_is_refused_naming_the_current_one(study):
    consent.publish(study["task"], "Version two")
    with pytest.raises(Conflict) as refused:
        consent.agree(study["writer"], study["task"], 1)
    assert refused.value.extra == {"consent_version": 2}
    response = page_for(study["writer"]).post("/tasks/studied/consent/", {"decision": "agree", "version": "1"},
                                              follow=True)
    assert "not the current consent (version 2)" in response.content.decode()


def test_declining_records_nothing_and_offers_the_way_back(study):
    def back_to_the_platform(user, task, reason):
        return f"https://platform.example/return?reason={reason}"

    exits.provide(back_to_the_platform)
    try:
        page = page_for(study["writer"])
        response = page.post("/tasks/studied/consent/", {"decision": "decline", "version": "1"})
        assert response.status_code == 302 and response["Location"] == "/tasks/studied/study/stop/declined/"
        stop = page.get(response["Location"]).content.decode()
        assert 'href="https://platform.example/return?reason=declined"' in stop
    finally:
        exits.forget(back_to_the_platform)
    assert not ConsentRecord.objects.exists()
    assert 'id="exit-link"' not in page.get("/tasks/studied/study/stop/declined/").content.decode()
    assert page.get("/tasks/studied/study/stop/elsewhere/").status_code == 404


def test_a_failing_exit_provider_never_breaks_the_stop_page(study):
    def broken(user, task, reason):
        raise RuntimeError("down")

    exits.provide(broken)
    try:
        assert exits.return_url(study["writer"], study["task"], exits.INELIGIBLE) is None
    finally:
        exits.forget(broken)
    with pytest.raises(ValueError):
        exits.return_url(study["writer"], study["task"], "bored")


@pytest.mark.parametrize("body", [{"decision": "agree", "version": "²"}, {"decision": "agree"},
                                  {"decision": "maybe", "version": "1"}])
def test_a_bad_consent_form_comes_back_with_the_reason(study, body):
    response = page_for(study["writer"]).post("/tasks/studied/consent/", body, follow=True)
    assert response.status_code == 200 and not ConsentRecord.objects.exists()
    assert "version:" in response.content.decode() or "decision:" in response.content.decode()


def test_a_task_without_a_study_has_no_consent_pages(task_world):
    page = page_for(task_world["writer"])
    assert page.get("/tasks/studied/consent/").status_code == 404
    assert api_for(task_world["writer"]).get("/api/tasks/studied/consent/").status_code == 404
    assert Client().get("/tasks/studied/consent/").status_code == 302  # the login first


# --- the API ---------------------------------------------------------------------------------------------------


def test_the_api_shows_the_text_and_records_agreement(study):
    api = api_for(study["writer"])
    shown = api.get("/api/tasks/studied/consent/").json()
    assert shown["version"] == 1 and shown["text"] == CONSENT and shown["status"]["agreed"] is False
    agreed = api.post("/api/tasks/studied/consent/", {"version": 1, "agree": True}, format="json")
    assert agreed.status_code == 200 and agreed.json()["agreed"] is True and agreed.json()["next_url"] is None
    assert api.get("/api/tasks/studied/consent/").json()["status"]["agreed_version"] == 1
    declined = api_for(study["owner"]).post("/api/tasks/studied/consent/", {"version": 1, "agree": False},
                                            format="json")
    assert declined.json()["agreed"] is False and ConsentRecord.objects.count() == 1


@pytest.mark.parametrize(("body", "field"), [({"version": "one", "agree": True}, "version"),
                                             ({"version": 1}, "agree"), ({"agree": True}, "version"),
                                             ({"version": 1, "agree": True, "extra": 1}, "extra"),
                                             ({"version": 0, "agree": True}, "version")])
def test_bad_consent_bodies_are_400s_naming_the_field(study, body, field):
    response = api_for(study["writer"]).post("/api/tasks/studied/consent/", body, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]


def test_an_old_version_through_the_api_is_a_409(study):
    consent.publish(study["task"], "Two")
    response = api_for(study["writer"]).post("/api/tasks/studied/consent/", {"version": 1, "agree": True},
                                             format="json")
    assert response.status_code == 409 and response.json()["consent_version"] == 2


# --- withdrawal ----------------------------------------------------------------------------------------------


def test_withdrawal_is_final_and_kept_in_the_records(study):
    task, writer = study["task"], study["writer"]
    consent.agree(writer, task, 1)
    assert submit(api_for(writer), study).status_code in (201, 202)
    page = page_for(writer)
    assert 'id="withdraw-form"' in page.get("/tasks/studied/consent/withdraw/").content.decode()
    unconfirmed = page.post("/tasks/studied/consent/withdraw/", {}, follow=True)
    assert "confirm:" in unconfirmed.content.decode() and consent.withdrawn_user_ids(task) == set()
    response = page.post("/tasks/studied/consent/withdraw/", {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == "/tasks/studied/study/stop/withdrawn/"
    assert consent.withdrawn_user_ids(task) == {writer.pk}
    record = ConsentRecord.objects.get(user=writer)
    participant = Participant.objects.get(user=writer, task=task)
    assert record.withdrawn_at is not None and participant.withdrawn_at == record.withdrawn_at
    assert submit(api_for(writer), study).json()["code"] == "withdrawn"
    with pytest.raises(Conflict):
        consent.agree(writer, task, 1)  # no taking part again
    consent.publish(task, "A new version")  # nor after a new one
    with pytest.raises(Conflict):
        consent.agree(writer, task, 2)
    again = api_for(writer).post("/api/tasks/studied/consent/withdraw/", {"confirm": True}, format="json")
    assert again.status_code == 409 and "already withdrawn" in again.json()["detail"]
    rows = api_for(study["owner"]).get("/api/tasks/studied/study/consent-records/").json()["records"]
    assert rows == [{"person_id": person_id(task.pk, writer.pk), "version": 1,
                     "agreed_at": rows[0]["agreed_at"], "withdrawn_at": rows[0]["withdrawn_at"], "language": "en"}]
    assert rows[0]["withdrawn_at"] is not None


def test_withdrawing_through_the_api(study):
    task, writer = study["task"], study["writer"]
    api = api_for(writer)
    nothing = api.post("/api/tasks/studied/consent/withdraw/", {"confirm": True}, format="json")
    assert nothing.status_code == 409 and "nothing to withdraw" in nothing.json()["detail"]
    consent.agree(writer, task, 1)
    assert api.post("/api/tasks/studied/consent/withdraw/", {"confirm": False}, format="json").status_code == 400
    assert api.post("/api/tasks/studied/consent/withdraw/", {}, format="json").status_code == 400
    done = api.post("/api/tasks/studied/consent/withdraw/", {"confirm": True}, format="json")
    assert done.status_code == 200 and done.json()["withdrawn_at"] and done.json()["exit_url"] is None
    assert consent.withdrawn_user_ids(task) == {writer.pk}


# --- the records' export --------------------------------------------------------------------------------------


def test_the_consent_records_download_is_the_owners_and_has_no_names_nor_examples(study):
    task, writer, owner = study["task"], study["writer"], study["owner"]
    with translation.override("ar"):
        consent.agree(writer, task, 1)
    submit(api_for(writer), study)
    consent.publish(task, "v2")
    consent.agree(writer, task, 2)
    response = page_for(owner).get("/tasks/studied/console/study/consent.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="studied-consent-records.csv"' in response["Content-Disposition"]
    text = response.content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["person_id", "version", "agreed_at", "withdrawn_at", "language"]
    pid = person_id(task.pk, writer.pk)
    assert [(r[0], r[1], r[3], r[4]) for r in rows[1:]] == [(pid, "1", "", "ar"), (pid, "2", "", "en")]
    assert "writer" not in text and "evening" not in text  # no usernames, no example texts
    assert page_for(writer).get("/tasks/studied/console/study/consent.csv").status_code == 403
    assert api_for(writer).get("/api/tasks/studied/study/consent-records/").status_code == 403


def test_the_console_counts_consents_withdrawals_and_versions(study):
    task, writer, owner = study["task"], study["writer"], study["owner"]
    consent.agree(writer, task, 1)
    consent.agree(owner, task, 1)
    consent.withdraw(owner, task)
    html = page_for(owner).get("/tasks/studied/console/study/").content.decode()
    assert 'id="fig-consented">1<' in html and 'id="fig-withdrawn">1<' in html
    figures = api_for(owner).get("/api/tasks/studied/study/").json()["figures"]
    assert figures["per_version"] == [{"version": 1, "agreed": 2, "withdrawn": 1}]


def test_the_owner_switches_the_study_and_its_languages(task_world):
    owner = task_world["owner"]
    api = api_for(owner)
    assert api.get("/api/tasks/studied/study/").json()["enabled"] is False
    on = api.patch("/api/tasks/studied/study/", {"enabled": True, "languages": ["es", "en"]}, format="json")
    assert on.status_code == 200 and on.json()["enabled"] is True and on.json()["languages"] == ["en", "es"]
    bad = api.patch("/api/tasks/studied/study/", {"languages": ["xx"]}, format="json")
    assert bad.status_code == 400 and "languages" in bad.json()["errors"]
    assert api.patch("/api/tasks/studied/study/", {"colour": 1}, format="json").status_code == 400
    page = page_for(owner)
    saved = page.post("/tasks/studied/console/study/", {"seed": "7", "assignment": "random", "languages": ["ar"]})
    assert saved.status_code == 302
    study_row = task_world["task"].study
    assert (study_row.enabled, study_row.seed, study_row.assignment, study_row.languages) == (False, 7, "random", ["ar"])
    assert page.post("/tasks/studied/console/study/", {"seed": "x", "assignment": "random"}).status_code == 400
    assert api_for(task_world["writer"]).patch("/api/tasks/studied/study/", {"enabled": True},
                                               format="json").status_code == 403
