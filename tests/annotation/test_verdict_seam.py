"""The verdict seam (`tasks.kinds.verdict.decide`): one decision for every kind — a label rule, QA's F1 rule, and
the chat kind's people-judged path (pending until validators confirm the writer's claim) — and one shape: the
sandbox, a stored verdict and the writing assistant's candidates show the same fields for the same prediction."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import assistant
from annotation.models import Example, Suggestion
from tasks.kinds import decide
from tasks.models import Task
from tests.annotation.conftest import QA_PASSAGE, sentiment_body


def task_of(kind: str, **config) -> Task:
    """A task as the seam sees it: its kind and settings (no database row needed)."""
    return Task(kind=kind, slug=f"{kind}-seam", config=config)


def member(version: int, prediction: dict | None) -> dict:
    return {"model_version": version, "name": f"member {version}", "prediction": prediction}


# --- the seam decides, for every kind ------------------------------------------------------------------------


@pytest.mark.parametrize("kind, target, other, config", [
    ("sentiment", "positive", "negative", {}),
    ("nli", "contradiction", "entailment", {}),
    ("hate_speech", "hateful", "not hateful", {}),
    ("classification", "spam", "ham", {"labels": ["spam", "ham"]}),
])
def test_a_label_kind_is_fooled_when_the_ensemble_answers_another_label(kind, target, other, config):
    task = task_of(kind, **config)
    wrong = {"label": other, "probs": {other: 0.7, target: 0.3}}
    right = {"label": target, "probs": {target: 0.9, other: 0.1}}
    rows = [member(1, wrong), member(2, right), {**member(3, None), "opponent": True, "left_out": "too slow"}]

    verdict = decide(task, target, wrong, rows)
    assert (verdict.fooled, verdict.pending, verdict.judged_by, verdict.answered_by) == (True, False, "rule",
                                                                                         "ensemble")
    assert verdict.model_fooled == (True, False, None)  # each model by the same rule; a left-out row: no flag
    assert decide(task, target, right, rows).fooled is False
    assert verdict.record() == {"fooled": True, "ensemble_prediction": wrong, "model_predictions": rows}


def test_qa_is_fooled_when_the_answer_overlaps_the_target_too_little():
    task = task_of("qa")
    target = {"text": "1889", "start": QA_PASSAGE.index("1889")}
    close = {"text": "in 1889", "start": 36, "end": 43, "score": 0.8}  # F1 0.67: above the 0.4 threshold
    far = {"text": "the Champ de Mars", "start": 50, "end": 67, "score": 0.6}
    verdict = decide(task, target, close, [member(1, close), member(2, far)])
    assert verdict.fooled is False and verdict.model_fooled == (False, True)
    assert decide(task, target, far).fooled is True
    strict = task_of("qa", f1_threshold=0.9)  # the task's own threshold decides
    assert decide(strict, target, close).fooled is True


def test_a_chat_failure_is_pending_until_people_judge_it():
    task = task_of("chat")
    answer = {"target": "helpful", "slot": 0, "text": "The capital of Australia is Sydney."}
    pending = decide(task, "wrong", None, [answer])
    assert (pending.answered_by, pending.judged_by) == ("language_models", "people")
    assert pending.pending and pending.fooled is None and pending.model_fooled == (None,)
    assert pending.record() == {"fooled": None, "ensemble_prediction": None, "model_predictions": [answer]}

    confirmed = decide(task, "wrong", None, [answer], judgement={"confirmed": True})
    assert confirmed.fooled is True and not confirmed.pending and confirmed.model_fooled == (True,)
    rejected = decide(task, "wrong", None, [answer], judgement={"confirmed": False})
    assert rejected.fooled is False and rejected.model_fooled == (False,)


def test_a_rule_kind_needs_the_ensembles_answer():
    with pytest.raises(ValueError, match="needs the ensemble's prediction"):
        decide(task_of("sentiment"), "positive", None, [member(1, {"label": "positive", "probs": {}})])


# --- one shape wherever a verdict is shown -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the scoring job runs once the submission commits
def test_sandbox_stored_and_suggested_verdicts_agree_for_the_same_text(writer_api, writer, sentiment, deploy):
    task, round_, context = sentiment
    deploy(round_)
    body = sentiment_body(context)
    url = reverse("api-example-create", args=[task.slug])

    sandboxed = writer_api.post(f"{url}?sandbox=1", body, format="json")
    assert sandboxed.status_code == 200, sandboxed.content
    shown = sandboxed.json()
    assert not Example.objects.exists()  # the sandbox stores nothing

    stored_answer = writer_api.post(url, body, format="json")
    assert stored_answer.status_code == 201, stored_answer.content
    stored = Example.objects.get(pk=stored_answer.json()["id"])

    suggestion = Suggestion.objects.create(round=round_, context=context, author=writer, target=body["target"],
                                           provider="local", state=Suggestion.State.READY)
    Suggestion.objects.filter(pk=suggestion.pk).update(
        candidates=assistant._scored(task, suggestion, [body["input"]["text"]]))  # what the job stores
    candidate = writer_api.get(reverse("api-suggestion-detail", args=[suggestion.pk])).json()["candidates"][0]

    # the same decision, under the assistant's own name for it (its label is unchecked: models_disagree)
    assert isinstance(shown["fooled"], bool)
    assert shown["fooled"] == stored.fooled == stored_answer.json()["fooled"] == candidate["models_disagree"]
    # the same ensemble answer and the same per-model rows
    ensembles = [shown["ensemble_prediction"], stored.ensemble_prediction, candidate["ensemble_prediction"]]
    assert len({e["label"] for e in ensembles}) == 1
    for label, p in ensembles[0]["probs"].items():
        assert all(abs(e["probs"][label] - p) < 1e-4 for e in ensembles)
    rows = [shown["model_predictions"], stored.model_predictions, candidate["model_predictions"]]
    assert [[(r["model_version"], r["prediction"]["label"]) for r in found] for found in rows] == [
        [(r["model_version"], r["prediction"]["label"]) for r in rows[0]]] * 3
    assert len(rows[0]) == 2  # the two members, no opponent on this task
    # and each is what the seam decides on that prediction
    assert decide(task, body["target"], stored.ensemble_prediction, stored.model_predictions).record() == {
        "fooled": stored.fooled, "ensemble_prediction": stored.ensemble_prediction,
        "model_predictions": stored.model_predictions}
