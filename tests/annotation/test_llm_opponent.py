"""The language model opponent: its offsets fitted on a round's dev split, its own row (and "fooled" flag) in
every verdict, left out with the reason when its provider is down, evaluated on the round's test split and ranked
on the leaderboard, and never a member of the ensemble."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Example
from modelzoo import opponent, services
from modelzoo.models import Evaluation
from rounds.evaluation import evaluate_everything
from rounds.leaderboard import leaderboard
from tasks.kinds import is_fooled
from tests.annotation.conftest import make_task
from tests.factories import ExampleFactory, LabeledItemFactory
from tests.llm.endpoints import down_endpoint

pytestmark = pytest.mark.django_db



@pytest.fixture(autouse=True)
def _jobs_inline(settings):
    """Scoring runs in the request (the verdict is in the answer), as the embedded default does."""
    settings.JOB_RUNNER = "inline"


LOCAL = {"enabled": True, "provider": {"provider": "local"}}

POSITIVE = ["I loved this film, it was wonderful.", "A delightful, warm and funny story.",
            "The best meal I have had all year.", "Brilliant acting and a beautiful score.",
            "What a great day at the beach, pure joy.", "The staff were kind and the room was lovely.",
            "An excellent book that I will read again.", "Fantastic service, friendly and fast.",
            "This phone works perfectly, I am very happy.", "A charming, moving and clever movie.",
            "Superb food and a lovely view.", "I enjoyed every minute of the concert.",
            "Great value and a wonderful experience.", "The garden is gorgeous in spring.",
            "Such a happy ending, I smiled all the way home.", "The new album is amazing.",
            "Our guide was brilliant and funny.", "A perfect weekend with perfect weather.",
            "The cake was delicious and beautifully made.", "I would happily recommend this hotel."]
NEGATIVE = ["I hated this film, it was awful.", "A dull, cold and boring story.",
            "The worst meal I have had all year.", "Terrible acting and an ugly score.",
            "What a miserable day, pure misery.", "The staff were rude and the room was filthy.",
            "A terrible book that I will never finish.", "Awful service, slow and unfriendly.",
            "This phone is broken, I am very angry.", "A stupid, tedious and pointless movie.",
            "Disgusting food and a horrible view.", "I regretted every minute of the concert.",
            "A waste of money and a dreadful experience.", "The garden is ugly and dead.",
            "Such a sad, bleak ending, I felt sick.", "The new album is horrible.",
            "Our guide was rude and boring.", "A ruined weekend with awful weather.",
            "The cake was stale and tasted bad.", "I would never recommend this hotel."]


def opponent_task(provider: dict | None = None):
    config = {"opponent": {"enabled": True, "provider": provider or LOCAL["provider"], "timeout_s": 20}}
    return make_task("sentiment", slug="sentiment-opposed", config=config)


def verified(round_, context, text, label, split):
    return ExampleFactory(round=round_, context=context, input={"text": text}, target=label, split=split,
                          consensus=Example.Consensus.VERIFIED, fooled=True)


def with_splits(round_, context):
    """30 dev rows (15 a label) and 10 test rows of the round, verified fooling examples as validation leaves them."""
    for i in range(15):
        verified(round_, context, POSITIVE[i], "positive", "dev")
        verified(round_, context, NEGATIVE[i], "negative", "dev")
    for i in range(15, 20):
        verified(round_, context, POSITIVE[i], "positive", "test")
        verified(round_, context, NEGATIVE[i], "negative", "test")


def down_version(task, settings):
    """An opponent whose provider nothing answers (an HTTP endpoint on a closed port)."""
    provider = down_endpoint(settings, timeout_s=1)
    return opponent._create(task, "down opponent (LLM)", {"kind": opponent.KIND, "llm": {
        "provider": provider, "labels": ["positive", "negative", "neutral"], "label_words": {}, "offsets": {},
        "instructions": "Say whether the text is positive, negative or neutral.", "field_names": ["Text", "Second"],
        "fitted_on": {"dataset": "none", "size": 0, "accuracy_before": 0, "accuracy_after": 0}}})


# --- fast: refusals and a provider that is down ------------------------------------------------------------


def test_a_down_opponent_is_left_out_of_the_verdict_which_says_so_and_the_example_is_scored(writer_api, deploy,
                                                                                          settings):
    task, round_, context = opponent_task(down_endpoint(settings))
    deploy(round_)
    down_version(task, settings)
    body = {"context_id": context.pk, "input": {"text": "A fine evening."}, "target": "positive"}
    response = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    assert response.status_code == 201, response.content
    example = Example.objects.get(pk=response.json()["id"])
    assert example.scoring_state == Example.Scoring.SCORED
    members, rival = example.model_predictions[:-1], example.model_predictions[-1]
    assert len(members) == 2 and not any(row.get("opponent") for row in members)
    assert rival["opponent"] is True and rival["prediction"] is None
    assert rival["left_out"] == "its language model does not answer"
    assert example.fooled == is_fooled(task, "positive", example.ensemble_prediction)


def test_an_opponent_never_joins_an_ensemble(deploy, settings):
    task, round_, _ = opponent_task()
    version = down_version(task, settings)
    with pytest.raises(ValueError, match="language model opponent"):
        services.deploy_ensemble(round_, [version])


def test_fitting_refuses_extractive_qa_and_says_why_when_the_provider_is_down(settings):
    make_task("qa", slug="qa-opposed")
    with pytest.raises(CommandError, match="span"):
        call_command("fit_llm_opponent", "qa-opposed")
    task, round_, _ = opponent_task(down_endpoint(settings, timeout_s=1))
    for i in range(4):  # no dev split yet: a sample of the train items
        LabeledItemFactory(task=task, input={"text": POSITIVE[i]}, target="positive", key=f"p{i}")
        LabeledItemFactory(task=task, input={"text": NEGATIVE[i]}, target="negative", key=f"n{i}")
    with pytest.raises(CommandError, match="could not fit the opponent"):
        call_command("fit_llm_opponent", task.slug)
    with pytest.raises(CommandError, match="no dev split"):
        call_command("fit_llm_opponent", task.slug, "--round", str(round_.number))
    assert not opponent.current(task)


# --- with the real packaged model ----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_local_opponent_fitted_on_the_dev_split_answers_beside_the_ensemble_and_is_ranked(writer_api, deploy):
    task, round_, context = opponent_task()
    with_splits(round_, context)
    call_command("fit_llm_opponent", task.slug)
    version = opponent.current(task)
    fitted = version.hyperparameters["llm"]["fitted_on"]
    assert fitted["dataset"] == "round-1/dev" and fitted["size"] == 30
    assert fitted["accuracy_after"] >= fitted["accuracy_before"] and fitted["accuracy_after"] >= 0.8
    assert Evaluation.objects.filter(model_version=version, dataset="round-1/dev (offsets fitted here)").exists()

    ensemble = deploy(round_)
    body = {"context_id": context.pk, "input": {"text": "The soup was cold and the waiter was rude."},
            "target": "negative"}
    response = writer_api.post(reverse("api-example-create", args=[task.slug]), body, format="json")
    assert response.status_code == 201, response.content
    example = Example.objects.get(pk=response.json()["id"])
    rival = example.model_predictions[-1]
    assert rival["opponent"] is True and rival["model_version"] == version.pk
    assert rival["prediction"]["label"] == "negative"  # a plain sentence: the opponent gets it right
    assert rival["fooled"] is False and rival["seconds"] > 0
    assert example.fooled == is_fooled(task, "negative", example.ensemble_prediction)  # the ensemble's flag
    assert version.pk not in [m.pk for m in ensemble.ordered_members()]

    evaluate_everything(task, log=lambda _: None)
    scored = Evaluation.objects.get(model_version=version, dataset="round-1/test")
    assert scored.size == 10 and scored.metrics["accuracy"] >= 0.8
    row = next(r for r in leaderboard(task)["rows"] if r["id"] == version.pk)
    assert row["source"] == "language model opponent" and row["scores"]["round-1/test"] is not None
    assert row["memory_mb"] > 50  # the packaged GGUF file, mapped
