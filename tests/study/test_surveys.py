"""Surveys (issue 42, item 2): the owner's questions of each kind (validated, 400 naming the field), the
participant's answers (required and optional, each kind's errors), eligibility, the post-survey's `next`, and the
answers' export under the pseudonymous ids, apart from the examples."""

from __future__ import annotations

import csv
import io

import pytest

from accounts.pseudonyms import person_id
from dynabench_site.errors import Conflict, InvalidInput
from study import consent, records, surveys
from study.models import Question, SurveyResponse, TextTranslation
from tasks.gates import StepPending
from tests.study.consent_fixtures import (
    GOOD_ANSWERS,
    PRE_QUESTIONS,
    add_post_survey,
    add_pre_survey,
    api_for,
    page_for,
    submit,
)

pytestmark = pytest.mark.django_db


def question(**fields):
    return {"key": "q", "kind": "single", "text": "Pick one", "choices": ["a", "b"], **fields}


# --- the owner's questions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "field", "message"), [
    (question(key="Bad Key"), "key", "lower-case letters"),
    (question(kind="slider"), "kind", "must be one of"),
    (question(text=""), "text", "must not be empty"),
    (question(text="x\u202ey"), "text", "bidirectional control"),
    (question(choices=["only"]), "choices", "2 to 30 options"),
    (question(choices=["a", "a"]), "choices", "differ"),
    (question(choices=["a", ""]), "choices.1", "must not be empty"),
    (question(kind="number", choices=["a", "b"]), "choices", "only choice and Likert"),
    (question(kind="number", choices=[], settings={"min": 5, "max": 1}), "settings.min", "above max"),
    (question(kind="number", choices=[], settings={"min": "NaN"}), "settings.min", "finite"),
    (question(kind="number", choices=[], settings={"step": 1}), "settings.step", "not a setting"),
    (question(kind="text", choices=[], settings={"max_length": 0}), "settings.max_length", "between 1 and"),
    (question(required="yes"), "required", "true or false"),
    (question(eligibility={"allowed": ["c"]}), "eligibility.allowed", "not one of the question's options"),
    (question(eligibility={"min": 1}), "eligibility.min", "not a rule"),
    (question(eligibility={"allowed": ["a"]}, required=False), "required", "must be required"),
    (question(kind="text", choices=[], eligibility={"min": 1}), "eligibility", "free-text"),
    (question(kind="number", choices=[], eligibility={}), None, None),  # an empty rule is no rule
    (question(colour="red"), "colour", "not a field"),
])
def test_a_bad_question_is_refused_naming_the_field(data, field, message):
    if field is None:
        assert surveys.clean_question(data)["eligibility"] is None
        return
    with pytest.raises(InvalidInput) as refused:
        surveys.clean_question(data)
    assert refused.value.field == field and message in refused.value.message


def test_questions_of_every_kind_are_accepted_in_order(study):
    found = add_pre_survey(study["task"])
    assert [q.key for q in surveys.questions(found)] == ["age", "native", "langs", "confidence", "notes"]
    age = found.questions.get(key="age")
    assert age.settings == {"integer": True, "min": 0, "max": 130} and age.eligibility == {"min": 18}
    assert found.questions.get(key="notes").settings == {"max_length": 50}


def test_a_survey_with_a_repeated_key_is_refused_whole(study):
    found = add_pre_survey(study["task"])
    with pytest.raises(InvalidInput) as refused:
        surveys.replace_questions(found, [question(), question()])
    assert refused.value.field == "questions.1.key"
    assert found.questions.count() == len(PRE_QUESTIONS)  # nothing changed


def test_the_owner_sets_a_survey_through_the_api_and_participants_never_see_the_rules(study):
    owner_api = api_for(study["owner"])
    body = {"title": "About you", "intro": "Hello", "active": True, "questions": PRE_QUESTIONS}
    saved = owner_api.put("/api/tasks/studied/study/surveys/pre/", body, format="json")
    assert saved.status_code == 200 and saved.json()["questions"][0]["eligibility"] == {"min": 18}
    bad = owner_api.put("/api/tasks/studied/study/surveys/pre/", {**body, "questions": [question(kind="x")]},
                        format="json")
    assert bad.status_code == 400 and bad.json()["errors"] == {"questions.0.kind": [bad.json()["errors"][
        "questions.0.kind"][0]]} and "must be one of" in bad.json()["detail"]
    assert owner_api.put("/api/tasks/studied/study/surveys/during/", body, format="json").status_code == 404
    shown = api_for(study["writer"]).get("/api/tasks/studied/surveys/pre/").json()
    assert [q["key"] for q in shown["questions"]] == ["age", "native", "langs", "confidence", "notes"]
    assert "eligibility" not in str(shown) and shown["answered"] is False
    assert api_for(study["writer"]).put("/api/tasks/studied/study/surveys/pre/", body,
                                        format="json").status_code == 403


def test_the_owner_edits_questions_on_the_pages(study):
    page = page_for(study["owner"])
    assert page.get("/tasks/studied/console/study/surveys/pre/").status_code == 200
    add = "/tasks/studied/console/study/surveys/pre/questions/"
    made = page.post(add, {"key": "age", "kind": "number", "text": "Your age?", "required": "on", "min": "0",
                           "max": "120", "integer": "on", "eligible_min": "18"})
    assert made.status_code == 302
    page.post(add, {"key": "pet", "kind": "multiple", "text": "Pets?", "choices": "cat\ndog\nfish",
                    "required": "on", "eligible_choices": "cat\ndog", "eligible_any": "on"})
    refused = page.post(add, {"key": "x", "kind": "single", "text": "One?", "choices": "only one"})
    assert refused.status_code == 400 and "2 to 30 options" in refused.content.decode()
    found = surveys.survey(study["task"], "pre")
    assert found.questions.get(key="age").eligibility == {"min": 18}
    assert found.questions.get(key="pet").eligibility == {"any_of": ["cat", "dog"]}
    edit = "/tasks/studied/console/study/surveys/pre/questions/pet/"
    assert "cat\ndog\nfish" in page.get(edit).content.decode()
    page.post(edit, {"key": "pets", "kind": "multiple", "text": "Your pets?", "choices": "cat\ndog",
                     "required": "on"})
    assert found.questions.get(key="pets").eligibility is None
    page.post("/tasks/studied/console/study/surveys/pre/questions/pets/move/", {"direction": "up"})
    assert [q.key for q in surveys.questions(found)] == ["pets", "age"]
    bad_move = page.post("/tasks/studied/console/study/surveys/pre/questions/pets/move/", {"direction": "sideways"},
                         follow=True)
    assert "direction: must be up or down" in bad_move.content.decode()
    page.post("/tasks/studied/console/study/surveys/pre/questions/age/delete/")
    assert [q.key for q in surveys.questions(found)] == ["pets"]
    assert page.post("/tasks/studied/console/study/surveys/pre/",
                     {"title": "About", "intro": "", "active": "on"}).status_code == 302
    writer = page_for(study["writer"])
    assert writer.get("/tasks/studied/console/study/surveys/pre/").status_code == 403
    assert writer.post(add, {"key": "z", "kind": "text", "text": "?"}).status_code == 403


# --- the participant's answers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("answers", "field", "message"), [
    ({**GOOD_ANSWERS, "age": None}, "answers.age", "is required"),
    ({**GOOD_ANSWERS, "age": "old"}, "answers.age", "must be a number"),
    ({**GOOD_ANSWERS, "age": 30.5}, "answers.age", "whole number"),
    ({**GOOD_ANSWERS, "age": 200}, "answers.age", "at most 130"),
    ({**GOOD_ANSWERS, "age": True}, "answers.age", "must be a number"),
    ({**GOOD_ANSWERS, "native": "maybe"}, "answers.native", "must be one of: yes, no"),
    ({**GOOD_ANSWERS, "langs": ["en", "fr"]}, "answers.langs", "'fr' is not one of"),
    ({**GOOD_ANSWERS, "langs": ["en", "en"]}, "answers.langs", "twice"),
    ({**GOOD_ANSWERS, "langs": {"en": 1}}, "answers.langs", "list of options"),
    ({**GOOD_ANSWERS, "confidence": "extremely"}, "answers.confidence", "must be one of"),
    ({**GOOD_ANSWERS, "notes": "x" * 51}, "answers.notes", "the limit is 50"),
    ({**GOOD_ANSWERS, "notes": "a\x00b"}, "answers.notes", "control character"),
    ({**GOOD_ANSWERS, "shoe": 42}, "answers.shoe", "not a question"),
])
def test_each_kinds_bad_answer_is_a_400_naming_the_question(study, answers, field, message):
    add_pre_survey(study["task"])
    consent.agree(study["writer"], study["task"], 1)
    with pytest.raises(InvalidInput) as refused:
        surveys.answer(study["writer"], study["task"], "pre", answers)
    assert refused.value.field == field and message in refused.value.message
    response = api_for(study["writer"]).post("/api/tasks/studied/surveys/pre/", {"answers": answers}, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]
    assert not SurveyResponse.objects.exists()


def test_optional_questions_may_be_left_out_and_answers_are_stored_once(study):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    api = api_for(writer)
    answered = api.post("/api/tasks/studied/surveys/pre/", {"answers": {**GOOD_ANSWERS, "langs": [], "age": "30"}},
                        format="json")
    assert answered.status_code == 201 and answered.json() == {"eligible": True, "next_url": None}
    stored = SurveyResponse.objects.get(user=writer)
    assert stored.answers == {"age": 30, "native": "yes", "confidence": "very"} and stored.language == "en"
    again = api.post("/api/tasks/studied/surveys/pre/", {"answers": GOOD_ANSWERS}, format="json")
    assert again.status_code == 409 and "already answered" in again.json()["detail"]
    assert api.get("/api/tasks/studied/surveys/pre/").json()["answered"] is True
    with pytest.raises(Conflict):
        surveys.answer(writer, task, "pre", GOOD_ANSWERS)


def test_the_pre_survey_comes_after_the_consent(study):
    add_pre_survey(study["task"])
    with pytest.raises(StepPending) as refused:
        surveys.answer(study["writer"], study["task"], "pre", GOOD_ANSWERS)
    assert refused.value.code == "consent"
    response = page_for(study["writer"]).get("/tasks/studied/surveys/pre/?next=/tasks/studied/create/")
    assert response["Location"] == "/tasks/studied/consent/?next=%2Ftasks%2Fstudied%2Fcreate%2F"


@pytest.mark.parametrize(("answers", "eligible"), [
    (GOOD_ANSWERS, True), ({**GOOD_ANSWERS, "age": 17}, False), ({**GOOD_ANSWERS, "native": "no"}, False),
    ({**GOOD_ANSWERS, "age": 18}, True),
])
def test_eligibility_rules_decide_who_goes_on(study, answers, eligible):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    response = api_for(writer).post("/api/tasks/studied/surveys/pre/", {"answers": answers}, format="json").json()
    assert response["eligible"] is eligible
    assert response["next_url"] == (None if eligible else "/tasks/studied/study/stop/ineligible/")
    assert task.participants.get(user=writer).eligible is eligible


def test_multiple_choice_rules_all_allowed_or_any_of():
    allowed = Question(key="m", kind="multiple", choices=["a", "b", "c"], eligibility={"allowed": ["a", "b"]})
    any_of = Question(key="n", kind="multiple", choices=["a", "b", "c"], eligibility={"any_of": ["c"]})
    assert surveys.eligible([allowed], {"m": ["a", "b"]}) and not surveys.eligible([allowed], {"m": ["a", "c"]})
    assert surveys.eligible([any_of], {"n": ["a", "c"]}) and not surveys.eligible([any_of], {"n": ["a"]})


def test_the_survey_page_keeps_what_was_typed_and_says_what_was_wrong(study):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    page = page_for(writer)
    html = page.get("/tasks/studied/surveys/pre/").content.decode()
    assert 'name="age"' in html and 'type="checkbox" name="langs"' in html and "(optional)" in html
    refused = page.post("/tasks/studied/surveys/pre/", {"age": "12.5", "native": "yes", "confidence": "very",
                                                        "notes": "hello"})
    body = refused.content.decode()
    assert refused.status_code == 400 and "must be a whole number" in body and ">hello</textarea>" in body
    done = page.post("/tasks/studied/surveys/pre/", {"age": "40", "native": "yes", "confidence": "very",
                                                     "langs": ["en", "ar"], "next": "/tasks/studied/create/"})
    assert done.status_code == 302 and done["Location"] == "/tasks/studied/create/"
    assert SurveyResponse.objects.get(user=writer).answers["langs"] == ["en", "ar"]


def test_the_ineligible_person_goes_to_the_stop_page_from_the_form(study):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    done = page_for(writer).post("/tasks/studied/surveys/pre/", {"age": "16", "native": "yes", "confidence": "very",
                                                                 "next": "/tasks/studied/create/"})
    assert done["Location"].startswith("/tasks/studied/study/stop/ineligible/")


def test_survey_texts_show_in_the_participants_language(study):
    task, writer = study["task"], study["writer"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    TextTranslation.objects.create(task=task, language="es", field="question:pre:native",
                                   text="¿Es el inglés su primera lengua?")
    TextTranslation.objects.create(task=task, language="es", field="question:pre:native:choices", text='["sí", "no"]')
    page = page_for(writer)
    page.cookies["language"] = "es"
    html = page.get("/tasks/studied/surveys/pre/").content.decode()
    assert "¿Es el inglés su primera lengua?" in html and '<input type="radio" name="native" value="yes"' in html
    assert "<span>sí</span>" in html  # the label translated, the stored value as written


# --- the post-survey ----------------------------------------------------------------------------------------


def test_post_survey_url_and_its_safe_next(study):
    task, writer = study["task"], study["writer"]
    assert surveys.post_survey_url(writer, task, "/done/") is None  # no post-survey
    add_post_survey(task)
    consent.agree(writer, task, 1)
    assert surveys.post_survey_url(writer, task, "/assignments/1/complete/") == \
        "/tasks/studied/surveys/post/?next=%2Fassignments%2F1%2Fcomplete%2F"
    for unsafe in ("https://evil.example/", "//evil.example/x", "javascript:alert(1)", "/\\evil.example"):
        assert surveys.post_survey_url(writer, task, unsafe) == "/tasks/studied/surveys/post/"
    page = page_for(writer)
    answered = page.post("/tasks/studied/surveys/post/", {"hard": "fair", "next": "/assignments/1/complete/"})
    assert answered.status_code == 302 and answered["Location"] == "/assignments/1/complete/"
    assert surveys.post_survey_url(writer, task, "/done/") is None  # answered
    evil = page_for(study["owner"]).post("/tasks/studied/surveys/post/", {"hard": "easy",
                                                                          "next": "//evil.example/"})
    assert evil["Location"] == "/tasks/studied/"


# --- the answers' export -------------------------------------------------------------------------------------


def test_answers_export_under_pseudonymous_ids_without_examples_or_withdrawn_people(study):
    task, writer, owner = study["task"], study["writer"], study["owner"]
    add_pre_survey(task)
    consent.agree(writer, task, 1)
    surveys.answer(writer, task, "pre", {**GOOD_ANSWERS, "notes": "=HYPERLINK(\"x\")"})
    submit(api_for(writer), study)
    response = page_for(owner).get("/tasks/studied/console/study/surveys/pre/answers.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["person_id", "language", "submitted_at", "eligible", "age", "native", "langs", "confidence",
                       "notes"]
    pid = person_id(task.pk, writer.pk)
    assert rows[1][:2] == [pid, "en"] and rows[1][3:] == ["true", "30", "yes", "en|es", "very",
                                                          "'=HYPERLINK(\"x\")"]
    assert "evening" not in text and "writer" not in text
    data = api_for(owner).get("/api/tasks/studied/study/surveys/pre/answers/").json()
    assert data["rows"][0]["person_id"] == pid and data["rows"][0]["answers"]["langs"] == ["en", "es"]
    assert data["withdrawn_left_out"] == 0
    consent.withdraw(writer, task)
    after = records.survey_answers(task, "pre")
    assert after["rows"] == [] and after["withdrawn_left_out"] == 1
    assert api_for(writer).get("/api/tasks/studied/study/surveys/pre/answers/").status_code == 403
    assert page_for(writer).get("/tasks/studied/console/study/surveys/pre/answers.csv").status_code == 403
    assert page_for(owner).get("/tasks/studied/console/study/surveys/later/answers.csv").status_code == 404
