"""Bad input from an owner or a researcher answers 4xx with a message naming what was wrong, never a 500
(issue 25, item 4): a gold example id that is not a number, a model upload whose `name` is not text, a QA
import row without `answer_start`, and task settings nested thousands of levels deep."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.test import Client

from rounds import uploads
from tasks.importing import ImportFailed, ImportSpec, import_lines
from tasks.models import LabeledItem, Task
from tests.factories import ExampleFactory, RoundFactory, TaskFactory
from validation.models import GoldItem

pytestmark = pytest.mark.django_db

PASSAGE = "The Eiffel Tower was completed in 1889 and stands on the Champ de Mars in Paris."
DEEP = '{"crowd": ' * 1500 + "{}" + "}" * 1500  # 1,501 levels: json.loads alone raises RecursionError
DEEP_LIST = "[" * 3000 + "]" * 3000


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- gold marking (crowd/views.py) --------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["abc", "1.5", "²", "99999999999"])
def test_gold_marking_with_an_example_that_is_not_an_id_says_so(task, personas, raw):
    ExampleFactory(round=RoundFactory(task=task, number=1))
    owner = page_client(personas.owner)
    response = owner.post(f"/tasks/{task.slug}/console/crowd/gold/mark/", {"example": raw}, follow=True)
    assert response.status_code == 200 and response.redirect_chain[-1][0].endswith("/console/crowd/gold/")
    assert "example: must be a whole number" in response.content.decode()
    assert not GoldItem.objects.exists()


def test_gold_marking_without_an_example_says_so(task, personas):
    response = page_client(personas.owner).post(f"/tasks/{task.slug}/console/crowd/gold/mark/", {}, follow=True)
    assert response.status_code == 200 and "example: choose an example" in response.content.decode()


# --- a model upload's name (rounds/uploads.py) --------------------------------------------------------------


@pytest.mark.parametrize("name", [5, 1.5, ["my", "model"], {"n": 1}, True])
def test_an_upload_whose_name_is_not_text_answers_400_naming_name(task, client_for, name):
    response = client_for("researcher").post(f"/api/tasks/{task.slug}/models/", {"name": name, "files": []},
                                             format="json")
    assert response.status_code == 400, response.content[:300]
    assert "name" in response.data["errors"]


@pytest.mark.parametrize("field, value", [("name", 7), ("name", ["x"]), ("description", ["x"])])
def test_the_upload_service_refuses_a_name_or_description_that_is_not_text(task, personas, field, value):
    arguments = {"name": "my model", "description": "", field: value}
    with pytest.raises(uploads.UploadRefused) as refused:
        uploads.submit(task, personas.researcher, arguments["name"], [], arguments["description"])
    assert refused.value.field == field and "must be text" in refused.value.message


# --- a QA import row without answer_start (tasks/importing.py) ----------------------------------------------


@pytest.fixture
def qa(personas):
    task = TaskFactory(slug="qa-import", kind="qa")
    task.owners.add(personas.owner)
    return task


def qa_lines(*rows) -> list[tuple[int, str]]:
    return [(n, row if isinstance(row, str) else json.dumps(row)) for n, row in enumerate(rows, start=1)]


GOOD_ROW = {"passage": PASSAGE, "question": "When?", "answers": {"text": ["1889"], "answer_start": [34]}}


@pytest.mark.parametrize("answers, message", [
    ({"text": ["1889"]}, "answers.answer_start: missing"),
    ({"text": ["1889"], "answer_start": []}, "answers.answer_start: must be a list"),
    ({"text": ["1889"], "answer_start": 34}, "answers.answer_start: must be a list"),
    ({"text": "1889", "answer_start": [34]}, "answers.text: must be a non-empty list"),
    ({"text": [["1889"], "x"], "answer_start": [34]}, "answers.text: must be a non-empty list"),
])
def test_a_qa_import_row_with_a_bad_answers_object_is_refused_with_its_line(qa, answers, message):
    bad = {"passage": PASSAGE, "question": "When was it completed?", "answers": answers}
    with pytest.raises(ImportFailed) as failed:
        import_lines(qa, qa_lines(GOOD_ROW, bad), ImportSpec(target="eval", split="test"))
    errors = {e.line: e.message for e in failed.value.report.errors}
    assert list(errors) == [2] and errors[2].startswith(message)
    assert f"line 2: {message}" in failed.value.message
    assert not LabeledItem.objects.exists()


def test_a_flat_qa_row_without_answer_start_is_refused_naming_it(qa):
    row = {"passage": PASSAGE, "question": "When?", "answer": "1889"}
    report = import_lines(qa, qa_lines(GOOD_ROW, row), ImportSpec(target="eval", split="test", skip_errors=True))
    assert report.created == 1 and str(report.errors[0]).startswith("line 2: answer_start: missing")


def test_the_import_page_lists_the_row_without_answer_start(qa, personas):
    body = "\n".join(json.dumps(r) for r in (GOOD_ROW, {**GOOD_ROW, "answers": {"text": ["1889"]}})) + "\n"
    upload = io.BytesIO(body.encode())
    upload.name = "squad.jsonl"
    response = page_client(personas.owner).post(f"/tasks/{qa.slug}/console/import/", {
        "file": upload, "target": "eval", "collection": "base", "split": "test", "preset": ""})
    assert response.status_code == 400
    assert "line 2: answers.answer_start: missing" in response.content.decode()


def test_an_import_row_nested_thousands_deep_is_a_row_error(qa):
    report = import_lines(qa, qa_lines(GOOD_ROW, DEEP_LIST), ImportSpec(target="eval", split="test",
                                                                       skip_errors=True))
    assert report.created == 1 and re.match(r"line 2: not accepted JSON \(.*nests \d+ levels", str(report.errors[0]))


# --- task settings nested 3,000 deep (tasks/forms.py) -------------------------------------------------------


@pytest.mark.parametrize("config", [DEEP, DEEP_LIST])
def test_settings_nested_thousands_deep_are_a_form_error_on_the_field(task, personas, config):
    before = Task.objects.get(pk=task.pk).config
    response = page_client(personas.owner).post(f"/tasks/{task.slug}/console/settings/", {
        "name": task.name, "instructions": "", "config": config})
    assert response.status_code == 400
    form_errors = response.context["json_form"].errors
    assert list(form_errors) == ["config"]
    assert re.search(r"The settings cannot be accepted: .*nests \d+ levels.*at most 20", form_errors["config"][0])
    assert Task.objects.get(pk=task.pk).config == before


def test_a_new_tasks_configuration_nested_thousands_deep_is_a_form_error(personas):
    response = page_client(personas.admin).post("/console/tasks/new/", {
        "slug": "deep", "name": "Deep", "kind": "sentiment", "visibility": "public", "config": DEEP})
    assert response.status_code == 400
    assert re.search(r"nests \d+ levels", response.context["form"].errors["config"][0])
    assert not Task.objects.filter(slug="deep").exists()
