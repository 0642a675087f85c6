"""While a round's models train, the create page and the home page's task card say so, and that submissions are
saved now and scored when the models are ready (issue 39, item 6); once the ensemble is deployed they say nothing.
(In Chromium, at both widths: tests/modelzoo/test_model_figures_browser.py.)"""

from __future__ import annotations

import pytest

from modelzoo.models import ModelVersion
from modelzoo.testing import deploy_tiny_ensemble
from tasks import roles
from tests.annotation.conftest import make_task
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def text(response) -> str:
    """The page with its whitespace runs made single spaces (as a reader sees it)."""
    return " ".join(response.content.decode().split())


def test_the_create_page_and_the_home_card_say_the_models_are_still_training_until_they_are_ready(client):
    task, round_, _ = make_task("sentiment", slug="sentiment", config={"labels": ["negative", "positive"]})
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    client.force_login(writer)
    for i, progress in enumerate([1.0, 0.5, 0.0]):
        ModelVersion.objects.create(task=task, version=i + 1, name=f"sentiment-r1-s{i}", head="classification",
                                    status="training", progress=progress)

    create = text(client.get(f"/tasks/{task.slug}/create/"))
    assert 'id="training-notice"' in create and "The models are still training (50 %)." in create
    assert "each example is saved at once" in create and "scored as soon as the models are" in create
    home = text(client.get("/"))
    assert "models training: 50 %" in home and "Submissions are saved now and scored when the models are ready." in home

    ModelVersion.objects.filter(task=task).delete()
    create = text(client.get(f"/tasks/{task.slug}/create/"))
    assert "No model is deployed for this round yet." in create  # nothing trains, nothing deployed: it says so too

    deploy_tiny_ensemble(round_)
    assert 'id="training-notice"' not in client.get(f"/tasks/{task.slug}/create/").content.decode()
    assert "training-notice" not in client.get("/").content.decode()
