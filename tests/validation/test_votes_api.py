"""POST /api/examples/{id}/validations/ and POST /api/tasks/{slug}/validation/next/: rules and clear 4xx answers."""

import pytest

from annotation.models import Example
from tests.factories import ContextFactory, ExampleFactory, RoundFactory, TaskFactory
from tests.validation.conftest import set_validation
from validation.models import Validation


def vote_url(example) -> str:
    return f"/api/examples/{example.pk}/validations/"


@pytest.fixture
def as_validator(client_for):
    return client_for("validator")


def test_correct_vote_is_recorded_and_answers_the_consensus(as_validator, example):
    response = as_validator.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert response.status_code == 201, response.data
    assert response.data["mode"] == "crowd" and response.data["consensus"] == "unvalidated"
    assert Validation.objects.filter(example=example, verdict="correct").count() == 1


def test_three_correct_votes_verify_the_example(api, example, make_validator):
    for name in ("a", "b", "c"):
        api.force_authenticate(make_validator(name))
        response = api.post(vote_url(example), {"verdict": "correct"}, format="json")
    example.refresh_from_db()
    assert response.data["consensus"] == "verified"
    assert (example.consensus, example.validated_label) == ("verified", "positive")


def test_three_incorrect_votes_reject_with_the_corrected_label(api, example, make_validator):
    for name in ("a", "b", "c"):
        api.force_authenticate(make_validator(name))
        api.post(vote_url(example), {"verdict": "incorrect", "label": "negative"}, format="json")
    example.refresh_from_db()
    assert (example.consensus, example.validated_label) == ("rejected", "negative")


def test_adaptive_task_verifies_after_two_agreeing_votes(api, task, example, make_validator):
    set_validation(task, mode="adaptive", adaptive_min=2)
    for name in ("a", "b"):
        api.force_authenticate(make_validator(name))
        response = api.post(vote_url(example), {"verdict": "flagged", "reason": "gibberish"}, format="json")
    assert response.data["consensus"] == "flagged"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({}, "verdict", "required"),
        ({"verdict": "maybe"}, "verdict", "valid choice"),
        ({"verdict": "incorrect"}, "label", "required"),
        ({"verdict": "incorrect", "label": "sarcastic"}, "label", "unknown label"),
        ({"verdict": "incorrect", "label": 3}, "label", "unknown label"),
        ({"verdict": "incorrect", "label": "positive"}, "label", "writer's own label"),
        ({"verdict": "correct", "label": "negative"}, "label", "only with the verdict 'incorrect'"),
        ({"verdict": "flagged"}, "reason", "required when flagging"),
        ({"verdict": "flagged", "reason": "   "}, "reason", "required when flagging"),
        ({"verdict": "flagged", "reason": "x" * 1001}, "reason", "1000"),
    ],
)
def test_bad_votes_answer_400_naming_the_field(as_validator, example, body, field, words):
    response = as_validator.post(vote_url(example), body, format="json")
    assert response.status_code == 400, response.data
    assert field in response.data["errors"]
    assert words in response.data["detail"]
    assert not Validation.objects.exists()


def test_qa_correction_must_be_a_span_of_the_passage(api, make_validator):
    task = TaskFactory(slug="qa", kind="qa")
    rnd = RoundFactory(task=task)
    context = ContextFactory(task=task, payload={"passage": "The tower was completed in 1889."})
    example = ExampleFactory(round=rnd, context=context, input={"question": "When?"},
                             target={"text": "tower", "start": 4}, ensemble_prediction={"text": "tower"})
    api.force_authenticate(make_validator("a"))
    bad = api.post(vote_url(example), {"verdict": "incorrect", "label": {"text": "1890", "start": 0}}, format="json")
    assert bad.status_code == 400 and "label.text" in bad.data["errors"]
    good = api.post(vote_url(example), {"verdict": "incorrect", "label": {"text": "1889", "start": 27}}, format="json")
    assert good.status_code == 201 and good.data["label"] == {"text": "1889", "start": 27}


def test_validator_cannot_validate_own_example(api, open_round, make_validator):
    alice = make_validator("alice")
    example = ExampleFactory(round=open_round, author=alice)
    api.force_authenticate(alice)
    response = api.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert response.status_code == 403 and response.data["code"] == "own_example"


def test_validator_cannot_vote_twice(as_validator, example):
    as_validator.post(vote_url(example), {"verdict": "correct"}, format="json")
    response = as_validator.post(vote_url(example), {"verdict": "flagged", "reason": "changed my mind"}, format="json")
    assert response.status_code == 409 and "already validated" in response.data["detail"]


def test_decided_example_takes_no_more_crowd_votes(api, example, personas, make_validator):
    api.force_authenticate(personas.expert)
    api.post(vote_url(example), {"verdict": "correct"}, format="json")
    api.force_authenticate(make_validator("late"))
    response = api.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert response.status_code == 409 and response.data["code"] == "decided"


def test_retracted_example_is_not_validated(as_validator, example):
    Example.objects.filter(pk=example.pk).update(retracted=True)
    response = as_validator.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert response.status_code == 409 and response.data["code"] == "retracted"


def test_non_fooling_example_is_out_of_scope_for_the_crowd(as_validator, open_round):
    example = ExampleFactory(round=open_round, fooled=False)
    response = as_validator.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert response.status_code == 409 and response.data["code"] == "out_of_scope"


def test_vote_on_an_item_held_by_others_is_refused(api, task, example, make_validator):
    set_validation(task, quorum=1)
    holder, other = make_validator("holder"), make_validator("other")
    api.force_authenticate(holder)
    assert api.post(f"/api/tasks/{task.slug}/validation/next/").data["item"]["id"] == example.pk
    api.force_authenticate(other)
    response = api.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert response.status_code == 409 and response.data["code"] == "reserved"


def test_expert_vote_overrides_and_resolves_a_dispute(api, task, example, personas, make_validator):
    verdicts = [("correct", None, ""), ("flagged", None, "spam"), ("incorrect", "negative", ""), ("incorrect", "neutral", "")]
    for i, (verdict, label, reason) in enumerate(verdicts):
        api.force_authenticate(make_validator(f"v{i}"))
        body = {"verdict": verdict, "reason": reason} | ({"label": label} if label else {})
        api.post(vote_url(example), body, format="json")
    example.refresh_from_db()
    assert example.consensus == "disputed"
    api.force_authenticate(personas.expert)
    response = api.post(vote_url(example), {"verdict": "incorrect", "label": "negative"}, format="json")
    assert response.status_code == 201 and response.data["mode"] == "expert"
    example.refresh_from_db()
    assert (example.consensus, example.validated_label) == ("rejected", "negative")


def test_owner_vote_overrides_and_may_be_revised(api, example, personas):
    api.force_authenticate(personas.owner)
    first = api.post(vote_url(example), {"verdict": "flagged", "reason": "duplicate"}, format="json")
    assert first.data["mode"] == "owner" and first.data["consensus"] == "flagged"
    second = api.post(vote_url(example), {"verdict": "correct"}, format="json")
    assert second.status_code == 201 and second.data["consensus"] == "verified"
    assert Validation.objects.filter(example=example, validator=personas.owner).count() == 1


def test_unknown_example_is_404(as_validator, db):
    assert as_validator.post("/api/examples/999999/validations/", {"verdict": "correct"}, format="json").status_code == 404


def test_next_returns_the_item_with_context_label_and_model_verdict(as_validator, task, example):
    response = as_validator.post(f"/api/tasks/{task.slug}/validation/next/")
    item = response.data["item"]
    assert response.status_code == 200 and response.data["reason"] is None
    assert item["id"] == example.pk and item["writer_label"] == "positive"
    assert item["context"] == example.context.payload and item["input"] == example.input
    assert item["model"] == {"fooled": True, "prediction": example.ensemble_prediction}
    assert item["labels"] == ["positive", "negative", "neutral"]
    assert item["validate_url"] == vote_url(example)


def test_next_says_why_when_empty(as_validator, task, open_round):
    response = as_validator.post(f"/api/tasks/{task.slug}/validation/next/")
    assert response.data["item"] is None and response.data["reason"] == "nothing_written"
    assert "written" in response.data["detail"]


def test_next_on_unknown_task_is_404(as_validator, db):
    assert as_validator.post("/api/tasks/nope/validation/next/").status_code == 404


def test_openapi_schema_documents_the_validation_endpoints(api, db):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert "/api/tasks/{slug}/validation/next/" in paths
    assert {"201", "400", "403", "409"} <= set(paths["/api/examples/{id}/validations/"]["post"]["responses"])
    assert "/api/tasks/{slug}/stats/" in paths
