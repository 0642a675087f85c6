"""While a round's models train (e.g. `make run` training the demo models in the background), the task page
shows their progress and submissions are saved and answered "pending"; once the ensemble is deployed they
are scored without anyone polling."""

import pytest
from django.core.management import call_command

from annotation.models import Example
from modelzoo.models import ModelVersion
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import LabeledItemFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # scoring runs on commit


@pytest.fixture
def writer_api(db):
    from rest_framework.test import APIClient

    from tasks import roles

    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def demo_sentiment(db):
    task, round_, context = make_task("sentiment", slug="sentiment", config={"labels": ["negative", "positive"]})
    for i in range(12):
        LabeledItemFactory(task=task, collection="demo", input={"text": f"a lovely happy day {i}"}, target="positive")
        LabeledItemFactory(task=task, collection="demo", input={"text": f"an awful sad day {i}"}, target="negative")
    return task, round_, context


def test_the_task_page_shows_training_progress_and_that_submissions_wait(client, demo_sentiment):
    task, round_, _ = demo_sentiment
    body = client.get(f"/tasks/{task.slug}/").content.decode()
    assert 'id="model-training"' in body and "No model is deployed for this round yet" in body
    ModelVersion.objects.create(task=task, version=1, name="sentiment-r1-s0", head="classification",
                                status="training", progress=0.45, progress_message="member 1/3, loss 0.612")
    body = client.get(f"/tasks/{task.slug}/").content.decode()
    assert "Models training: 45 %" in body and "pending" in body and "member 1/3, loss 0.612" in body


def test_a_submission_before_the_models_is_pending_then_scored_when_demo_models_deploys(client, writer_api,
                                                                                          demo_sentiment):
    task, round_, context = demo_sentiment
    answer = writer_api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert answer.status_code in (201, 202) and answer.data["scoring_state"] == "pending"
    call_command("demo_models", "--tasks", task.slug, "--members", "2", "--encoder", "tiny", "--max-steps", "10",
                 "--no-progress")
    example = Example.objects.get(pk=answer.data["id"])
    assert example.scoring_state == "scored" and isinstance(example.fooled, bool)  # nobody polled
    assert len(example.model_predictions) == 2
    body = client.get(f"/tasks/{task.slug}/").content.decode()
    assert 'id="model-training"' not in body  # models ready: no notice any more
