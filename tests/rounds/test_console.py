"""Owner console pages: create a task from a preset or a configuration, edit settings, import JSONL."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tasks.models import Context, LabeledItem, Task


@pytest.fixture
def admin_client(client, personas):
    client.force_login(personas.admin)
    return client


@pytest.fixture
def owner_client(client, personas):
    client.force_login(personas.owner)
    return client


def create(client, **fields):
    data = {"slug": "new-task", "name": "New task", "kind": "nli", "visibility": "public", "config": ""} | fields
    return client.post("/console/tasks/new/", data)


def test_admin_creates_a_task_from_a_kind_preset(admin_client, personas):
    response = create(admin_client)
    assert response.status_code == 302 and response["Location"] == "/tasks/new-task/console/"
    task = Task.objects.get(slug="new-task")
    assert task.typed_config.labels == ["entailment", "neutral", "contradiction"]
    assert task.owners.filter(pk=personas.admin.pk).exists()


def test_a_configuration_overrides_the_preset(admin_client):
    create(admin_client, kind="sentiment", config=json.dumps({"labels": ["good", "bad"], "instructions": "Be kind."}))
    task = Task.objects.get(slug="new-task")
    assert task.typed_config.labels == ["good", "bad"] and task.typed_config.instructions == "Be kind."


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{not json", "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[1, 2]", "must be a JSON object"),
        ('{"labels": ["only"]}', "labels: List should have at least 2 items"),
        ('{"colour": "red"}', "colour: Extra inputs are not permitted"),
    ],
)
def test_a_bad_configuration_is_refused_with_a_clear_error(admin_client, config, message):
    response = create(admin_client, kind="sentiment", config=config)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Task.objects.filter(slug="new-task").exists()


def test_only_admins_create_tasks(owner_client):
    assert create(owner_client).status_code == 403


def test_owner_edits_instructions_and_settings(owner_client, task):
    config = {k: v for k, v in task.config.items() if k != "instructions"} | {"max_input_chars": 300}
    response = owner_client.post("/tasks/sentiment/console/settings/",
                                 {"name": "Sentiment!", "instructions": "New words.", "config": json.dumps(config)})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.name == "Sentiment!" and task.typed_config.instructions == "New words." and task.typed_config.max_input_chars == 300


def test_bad_settings_are_refused_and_nothing_changes(owner_client, task):
    response = owner_client.post("/tasks/sentiment/console/settings/",
                                 {"name": "x", "instructions": "", "config": '{"max_input_chars": 0}'})
    assert response.status_code == 400 and "max_input_chars" in response.content.decode()
    task.refresh_from_db()
    assert task.typed_config.max_input_chars == 500


def jsonl(*rows) -> SimpleUploadedFile:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows)
    return SimpleUploadedFile("data.jsonl", text.encode())


def test_import_with_bad_rows_shows_the_row_level_report_and_imports_nothing(owner_client, task):
    file = jsonl({"text": "fine", "label": "positive"}, "{broken", {"text": "x", "label": "maybe"})
    response = owner_client.post("/tasks/sentiment/console/import/",
                                 {"file": file, "target": "pool", "collection": "base", "split": "train"})
    body = response.content.decode()
    assert response.status_code == 400
    assert "line 2: not valid JSON" in body and "line 3: target: unknown label" in body
    assert not LabeledItem.objects.filter(task=task).exists()


def test_import_of_a_seed_pool_and_contexts(owner_client, task):
    response = owner_client.post("/tasks/sentiment/console/import/", {
        "file": jsonl({"text": "great", "label": "positive"}, {"text": "awful", "label": "negative"}),
        "target": "pool", "collection": "base", "split": "test"})
    assert response.status_code == 200 and "2 imported" in response.content.decode()
    assert LabeledItem.objects.filter(task=task, split="train").count() == 2  # the pool is always train
    owner_client.post("/tasks/sentiment/console/import/", {
        "file": jsonl({"prompt": "The soup."}), "target": "contexts", "collection": "base", "split": "train"})
    assert Context.objects.filter(task=task).count() == 1


def test_import_with_a_preset_maps_the_fields(owner_client, task):
    file = jsonl({"idx": 1, "sentence": "lovely", "label": 1})
    response = owner_client.post("/tasks/sentiment/console/import/", {
        "file": file, "target": "eval", "collection": "sst2", "split": "test", "preset": "sst2"})
    assert response.status_code == 200
    item = LabeledItem.objects.get(task=task, collection="sst2")
    assert item.split == "test" and item.target == "positive"


def test_console_start_button_refuses_a_second_run_with_a_message(owner_client, task, settings):
    settings.JOB_RUNNER = ""  # queued after commit, which this test's transaction never does: the run stays pending
    first = owner_client.post("/tasks/sentiment/console/rounds/")
    assert first.status_code == 302 and first["Location"].startswith("/console/jobs/")
    second = owner_client.post("/tasks/sentiment/console/rounds/", follow=True)
    assert "is already pending" in second.content.decode()


def test_leaderboard_and_dashboard_pages_render_charts_for_anyone(client, small_task):
    assert client.get("/tasks/small/leaderboard/").status_code == 200
    page = client.get("/tasks/small/dashboard/")
    assert page.status_code == 200 and page.content.decode().count("<svg") == 4


def test_owner_sets_the_dynascore_weights(owner_client, task, client_for):
    response = owner_client.post("/tasks/sentiment/leaderboard/", {
        "performance": 1, "throughput": 0, "memory": 0, "robustness": 0, "fairness": 0})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.typed_config.dynascore.performance == 1 and task.typed_config.dynascore.throughput == 0
