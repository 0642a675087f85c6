"""The task settings as a form generated from the kind's configuration schema: every simple setting is a
field with the schema's bounds, a refusal names the field at the top of the page and next to it, and the raw
JSON stays available."""

from __future__ import annotations

import pytest

from tasks.config_form import ConfigForm

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(client, personas):
    client.force_login(personas.owner)
    return client


def form_data(task, **changes) -> dict:
    """What the page's form posts when nothing is changed, plus `changes` (form field names)."""
    form = ConfigForm(task=task)
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name)
        if getattr(field.widget, "input_type", "") == "checkbox":
            if value:
                data[name] = "on"
        elif value is not None:
            data[name] = value
    return {**data, **changes}


def test_the_form_has_a_field_per_setting_with_the_schemas_bounds(task):
    form = ConfigForm(task=task)
    assert form.fields["max_input_chars"].max_value == 20000 and form.fields["max_input_chars"].min_value == 1
    assert [v for v, _ in form.fields["validation__mode"].choices] == ["quorum", "adaptive"]
    assert form.initial["labels"] == "positive\nnegative\nneutral"
    assert {g.key for g in form.groups} >= {"", "validation", "splits", "crowd", "crowd.pay"}


def test_owner_saves_settings_through_the_form(owner_client, task):
    data = form_data(task, name="Sentiment 2", max_input_chars=300, validation__quorum=2,
                     labels="good\nbad", crowd__pay__per_validation=0.05)
    response = owner_client.post("/tasks/sentiment/console/settings/", data)
    assert response.status_code == 302
    task.refresh_from_db()
    config = task.typed_config
    assert task.name == "Sentiment 2" and config.max_input_chars == 300 and config.validation.quorum == 2
    assert config.labels == ["good", "bad"] and config.crowd.pay.per_validation == 0.05


def test_a_setting_the_form_cannot_show_is_kept(owner_client, task):
    task.config = {**task.config, "model_context_fields": []}
    task.save()
    owner_client.post("/tasks/sentiment/console/settings/", form_data(task, max_input_chars=250))
    task.refresh_from_db()
    assert task.config["model_context_fields"] == [] and task.typed_config.max_input_chars == 250


def test_a_refusal_is_listed_at_the_top_and_shown_at_its_field(owner_client, task):
    response = owner_client.post("/tasks/sentiment/console/settings/",
                                 form_data(task, splits__train=0.5, submission_rate="often"))
    body = response.content.decode()
    assert response.status_code == 400
    summary = body.split('id="settings-errors"')[1].split("</div>")[0]
    assert "2 problems" in summary and 'href="#id_submission_rate"' in summary
    assert "Dataset splits: split ratios train + dev + test must add up to 1" in summary
    assert 'id="id_submission_rate-errors"' in body  # next to the field too
    task.refresh_from_db()
    assert task.typed_config.splits.train == 0.8


def test_a_bound_is_checked_before_the_kind_is_asked(owner_client, task):
    response = owner_client.post("/tasks/sentiment/console/settings/", form_data(task, max_input_chars=0))
    assert response.status_code == 400 and 'id="id_max_input_chars-errors"' in response.content.decode()


@pytest.mark.parametrize("page", ["settings", "import", "rounds", "health", "crowd"])
def test_every_console_section_is_a_page_that_opens_directly(owner_client, task, open_round, page):
    response = owner_client.get(f"/tasks/sentiment/console/{page}/")
    assert response.status_code == 200
    assert 'id="console-nav"' in response.content.decode()


def test_the_qa_kind_gets_its_own_settings(admin_client_qa):
    client, task = admin_client_qa
    body = client.get(f"/tasks/{task.slug}/console/settings/").content.decode()
    assert 'name="f1_threshold"' in body and 'name="labels"' not in body


@pytest.fixture
def admin_client_qa(client, personas):
    from tests.factories import TaskFactory

    task = TaskFactory(slug="qa", kind="qa")
    client.force_login(personas.admin)
    return client, task
