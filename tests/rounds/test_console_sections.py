"""The console's rounds section: closing a round first says what it will do, in numbers that match what the
pipeline then does; the leaderboard ranks the models in the loop from the moment their round opens."""

from __future__ import annotations

import pytest

from annotation.models import Example
from exports import splits
from rounds.leaderboard import leaderboard
from rounds.preview import close_preview
from tests.factories import UserFactory


@pytest.fixture
def owner_client(client, small_task):
    owner = UserFactory(username="boss")
    small_task.owners.add(owner)
    client.force_login(owner)
    return client


def test_the_preview_says_what_closing_will_split_train_evaluate_and_seed(small_task):
    preview = close_preview(small_task)
    round1 = small_task.rounds.get(number=1)
    assert preview.closing == 1 and preview.opening == 2
    assert preview.collected == splits.exported(round1).count() == 30
    assert preview.seeds == 2 and preview.members == 2  # settings.ROUNDS_PIPELINE in these tests: seeds 0 and 1
    assert preview.pool == 24 and preview.seeded_at_most == 2 * 3  # k = 2 per label, three labels
    predicted = dict(preview.closing_splits)
    splits.assign_splits(round1)  # what the pipeline's split step then stores
    for name in splits.SPLITS:
        assert predicted[name] == splits.in_split(round1, name).count(), name
    assert predicted["held_back"] == splits.held_back(round1)
    assert preview.train_total == 24 + predicted["train"]
    assert [(t.label, t.size) for t in preview.test_sets] == [("round 1 test", predicted["test"]), ("base test", 8)]


def test_the_preview_stores_nothing(small_task):
    close_preview(small_task)
    assert not Example.objects.filter(round__task=small_task, split="train").exists()


def test_the_rounds_page_shows_the_confirmation_with_its_numbers(owner_client, small_task):
    body = owner_client.get("/tasks/small/console/rounds/").content.decode()
    assert 'id="close-round"' in body and "Closing round 1 will:" in body
    assert "on <strong>" in body.split('id="will-train"')[1].split("</li>")[0]
    assert "base test (<strong>8</strong>)" in body
    assert "Yes, close round 1" in body


def test_the_rounds_page_hides_the_confirmation_while_a_job_runs(owner_client, small_task, settings):
    settings.JOB_RUNNER = ""  # queued after commit, which this test's transaction never does: it stays pending
    owner_client.post("/tasks/small/console/rounds/")
    body = owner_client.get("/tasks/small/console/rounds/").content.decode()
    assert 'id="pipeline-busy"' in body and 'id="close-round"' not in body


def test_an_ensemble_deployed_outside_the_pipeline_is_ranked_at_once(small_task):
    from modelzoo.signals import ensemble_deployed
    from modelzoo.testing import deploy_tiny_ensemble

    round1 = small_task.rounds.get(number=1)
    ensemble = deploy_tiny_ensemble(round1, members=1)
    assert all(row["dynascore"] is None for row in leaderboard(small_task)["rows"])
    ensemble_deployed.send(sender=None, round=round1, versions=ensemble.ordered_members())
    rows = leaderboard(small_task)["rows"]
    assert rows and all(row["dynascore"] is not None and row["throughput"] for row in rows)
    assert all(row["scores"]["*/test"] is not None for row in rows)
