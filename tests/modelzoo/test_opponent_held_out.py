"""An opponent that earns its row (issue 39, item 2): a fitted language model opponent is judged on held-out rows
(never the rows its offsets were fitted on); one that does not beat always answering the commonest label by
opponent.MIN_MARGIN is left out of verdicts; wherever its row appears (beside a verdict, on the leaderboard) it gives
that held-out figure and says that it never changes the verdict; and it is evaluated (never "not evaluated") on the
leaderboard as soon as its round's ensemble is deployed."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Example
from modelzoo import opponent
from modelzoo.signals import ensemble_deployed
from modelzoo.testing import deploy_tiny_ensemble
from rounds.leaderboard import leaderboard
from tasks import roles
from tests.annotation.conftest import make_task
from tests.annotation.test_llm_opponent import NEGATIVE, POSITIVE
from tests.factories import LabeledItemFactory, UserFactory
from tests.llm.endpoints import down_endpoint
from zoo.data import LabelledSet

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _jobs_inline(settings):
    settings.JOB_RUNNER = "inline"


@pytest.fixture
def writer_api():
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


def opposed_task():
    config = {"labels": ["negative", "positive"],
              "opponent": {"enabled": True, "provider": {"provider": "local"}, "timeout_s": 30}}
    return make_task("sentiment", slug="opposed", config=config)


def rows(name: str, texts: list[tuple[str, str]]) -> LabelledSet:
    out = LabelledSet(name)
    for i, (text, label) in enumerate(texts):
        out.add({"text": text}, label, f"{name}:{i}")
    return out


def plain(n: int, offset: int = 0, positive_share: float = 0.5) -> list[tuple[str, str]]:
    """`n` plain sentences, `positive_share` of them positive (distinct texts: a numbered variant of each)."""
    positives = round(n * positive_share)
    out = [(f"{POSITIVE[i % 20]} (review {offset + i})", "positive") for i in range(positives)]
    return out + [(f"{NEGATIVE[i % 20]} (review {offset + 500 + i})", "negative") for i in range(n - positives)]


@pytest.fixture(autouse=True)
def _down_endpoint(settings):
    """The operator's endpoint "down", on a port nothing listens on (what `down_opponent` picks)."""
    down_endpoint(settings)


def down_opponent(task):
    """An opponent whose provider never answers (the operator's endpoint "down", on a closed port; left out of
    every verdict)."""
    provider = {"provider": "openai", "endpoint": "down", "timeout_s": 1}
    return opponent._create(task, "down opponent (LLM)", {"kind": opponent.KIND, "llm": {
        "provider": provider, "labels": ["negative", "positive"], "label_words": {}, "offsets": {},
        "instructions": "Say whether the text is positive or negative.", "field_names": ["Text", "Second"],
        "fitted_on": {"dataset": "none", "size": 0, "accuracy_before": 0, "accuracy_after": 0}}})


def with_record(version, **record):
    hyper = dict(version.hyperparameters)
    hyper["llm"] = {**hyper["llm"], "held_out": {"dataset": "*/heldout", "size": 202, "accuracy": 0.52, "low": 0.45,
                                                 "high": 0.59, "majority": 0.51, "majority_label": "positive",
                                                 "margin": opponent.MIN_MARGIN, **record}}
    version.hyperparameters = hyper
    version.save(update_fields=["hyperparameters"])
    return version


# --- fast: the rule and the rows, with a provider that does not answer ------------------------------------------


def test_every_opponent_row_beside_a_verdict_says_it_never_changes_the_verdict_and_what_it_is_worth(writer_api):
    task, round_, context = opposed_task()
    deploy_tiny_ensemble(round_)
    with_record(down_opponent(task), verdict=opponent.TOO_FEW, size=30, dataset="*/test")
    body = {"context_id": context.pk, "input": {"text": "A fine evening."}, "target": "positive"}
    answer = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    assert answer.status_code == 201, answer.content
    rival = Example.objects.get(pk=answer.json()["id"]).model_predictions[-1]
    assert rival["opponent"] is True and rival["decides"] is False
    assert rival["note"] == "It never changes the verdict: the ensemble's decides; this row is shown for comparison."
    assert rival["held_out"].startswith("Held-out accuracy 52 % (95 % interval 45 %–59 %) on 30 rows of the base test "
                                        "set; always answering “positive” scores 51 %: too few rows to judge it")


def test_an_opponent_that_falls_short_of_the_commonest_label_is_left_out_of_verdicts_and_the_leaderboard_says_so(
        writer_api):
    task, round_, context = opposed_task()
    deploy_tiny_ensemble(round_)
    older = with_record(down_opponent(task), verdict=opponent.BEATS, accuracy=0.7, low=0.63, high=0.76)
    newest = with_record(down_opponent(task), verdict=opponent.FALLS_SHORT)
    assert opponent.latest(task) == newest and opponent.current(task) == older  # the newest did not earn its row
    older.delete()
    assert opponent.current(task) is None
    body = {"context_id": context.pk, "input": {"text": "A fine evening."}, "target": "positive"}
    answer = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    example = Example.objects.get(pk=answer.json()["id"])
    assert example.scoring_state == "scored" and not any(row.get("opponent") for row in example.model_predictions)
    row = next(r for r in leaderboard(task)["rows"] if r["id"] == newest.pk)
    assert row["source"] == "language model opponent" and row["opponent"]["in_verdicts"] is False
    assert "it does not beat that by 5 points, so it is left out of verdicts" in row["opponent"]["summary"]


def test_held_out_rows_are_never_the_rows_the_offsets_are_fitted_on():
    task, _, _ = opposed_task()
    fitting = rows("fit", plain(4))
    with pytest.raises(opponent.NoOpponent, match="held-out row"):
        opponent.fit(task, fitting, "fit", held_out=fitting)
    for i, (text, label) in enumerate(plain(6)):
        LabeledItemFactory(task=task, split="heldout", collection="sst2", input={"text": text}, target=label, key=f"h{i}")
    for i, (text, label) in enumerate(plain(4, offset=50)):
        LabeledItemFactory(task=task, split="test", collection="demo", input={"text": text}, target=label, key=f"t{i}")
    held = opponent.held_out_rows(task)
    assert held.name == "*/heldout" and len(held.inputs) == 6  # the larger of the held-out slice and the test items


# --- with the real packaged model ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_fitted_local_opponent_is_judged_on_held_out_rows_ranked_at_deploy_and_left_out_when_it_falls_short(
        writer_api, client, monkeypatch):
    task, round_, context = opposed_task()
    for i, (text, label) in enumerate(plain(8, offset=900)):  # the base test set the leaderboard evaluates it on
        LabeledItemFactory(task=task, split="test", collection="demo", input={"text": text}, target=label, key=f"t{i}")
    version = opponent.fit(task, rows("*/train", plain(20)), "*/train", held_out=rows("*/heldout", plain(100, 100)))
    record = opponent.held_out_of(version)
    assert record["size"] == 100 and record["majority"] == 0.5 and record["verdict"] == opponent.BEATS, record
    assert record["accuracy"] >= 0.55 and record["low"] < record["accuracy"] < record["high"]
    assert version.evaluations.get(dataset="*/heldout").metrics["intervals"]["accuracy"] == [record["low"],
                                                                                            record["high"]]
    assert opponent.current(task) == version

    ensemble = deploy_tiny_ensemble(round_)
    ensemble_deployed.send(sender=None, round=round_, versions=ensemble.ordered_members())
    row = next(r for r in leaderboard(task)["rows"] if r["id"] == version.pk)
    assert row["scores"]["*/test"] is not None and row["dynascore"] is not None  # before: "not evaluated"
    page = client.get(f"/tasks/{task.slug}/leaderboard/").content.decode()
    assert "It decides no verdict" in page and "Held-out accuracy" in page

    body = {"context_id": context.pk, "input": {"text": "The soup was cold and the waiter was rude."},
            "target": "negative"}
    answer = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    rival = Example.objects.get(pk=answer.json()["id"]).model_predictions[-1]
    assert rival["model_version"] == version.pk and rival["prediction"]["label"] in ("negative", "positive")
    assert rival["held_out"] == opponent.summary(version) and rival["decides"] is False

    # Judged on a set where one label is 95 % of the rows, no classifier beats it by 5 points: left out. (20 rows
    # judged, the least size lowered for it: the outcome does not depend on the size, and each row is a model call.)
    monkeypatch.setattr(opponent, "MIN_HELD_OUT", 20)
    skewed = opponent.judge(version, rows("skewed", plain(20, 300, positive_share=0.95)))
    assert skewed["majority"] == 0.95 and skewed["verdict"] == opponent.FALLS_SHORT
    assert opponent.current(task) is None
