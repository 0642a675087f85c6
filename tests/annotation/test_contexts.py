"""Context sampling strategies, 'new context', inspiration, and the OpenAPI documentation."""

from __future__ import annotations

import pytest

from annotation import sampling, services
from annotation.models import Example
from tasks.models import Context, Round
from tests.annotation.conftest import make_task
from tests.factories import ContextFactory, ExampleFactory, LabeledItemFactory, RoundFactory

pytestmark = pytest.mark.django_db


def pool(task, round, n: int = 3, **fields) -> list[Context]:
    return [ContextFactory(task=task, round=round, **fields) for _ in range(n)]


def test_least_used_spreads_contexts_evenly(sentiment):
    task, round, first = sentiment
    task.config = {**task.config, "sampling": "least_used"}
    task.save()
    contexts = [first, *pool(task, round, 2)]
    shown = [services.next_context(task, round).pk for _ in range(6)]
    assert sorted(shown) == sorted([c.pk for c in contexts] * 2)
    assert set(Context.objects.values_list("times_used", flat=True)) == {2}


def test_hardness_first_shows_seeds_hardest_first(sentiment):
    task, round, plain = sentiment
    easy = ContextFactory(task=task, round=round, is_seed=True, hardness_score=0.2)
    hard = ContextFactory(task=task, round=round, is_seed=True, hardness_score=0.9)
    order = [services.next_context(task, round).pk for _ in range(3)]
    assert order == [hard.pk, easy.pk, plain.pk]


def test_uniform_draws_from_every_candidate(sentiment):
    task, round, first = sentiment
    contexts = [first, *pool(task, round, 2)]
    draws = {sampling.uniform(services.context_candidates(task, round)).pk for _ in range(60)}
    assert draws == {c.pk for c in contexts}


def test_contexts_come_from_the_round_and_the_shared_pool_only(sentiment):
    task, round, own = sentiment
    shared = ContextFactory(task=task, round=None)
    old_round = RoundFactory(task=task, number=5, status=Round.Status.CLOSED)
    ContextFactory(task=task, round=old_round)
    make_task("sentiment", slug="elsewhere")
    assert set(services.context_candidates(task, round)) == {own, shared}


def test_new_context_endpoint_avoids_the_one_shown(writer_api, sentiment):
    task, round, first = sentiment
    second = ContextFactory(task=task, round=round)
    url = f"/api/tasks/{task.slug}/contexts/next/"
    response = writer_api.post(f"{url}?exclude={first.pk}")
    assert response.status_code == 200 and response.data["id"] == second.pk
    assert response.data["payload"] == second.payload and response.data["round"] == 1
    assert writer_api.post(f"{url}?exclude={second.pk}").data["id"] == first.pk


def test_next_context_on_a_closed_task_is_a_conflict(writer_api, sentiment):
    task, round, _ = sentiment
    Round.objects.filter(pk=round.pk).update(status=Round.Status.CLOSED)
    response = writer_api.post(f"/api/tasks/{task.slug}/contexts/next/")
    assert response.status_code == 409 and "round" in response.data["errors"]


def test_a_task_without_contexts_answers_204(writer_api, sentiment):
    task, _, context = sentiment
    context.delete()
    assert writer_api.post(f"/api/tasks/{task.slug}/contexts/next/").status_code == 204


def test_inspiration_shows_verified_fooling_examples_and_hard_seeds(writer_api, sentiment):
    task, round, _ = sentiment
    verified = ExampleFactory(round=round, fooled=True, consensus=Example.Consensus.VERIFIED, input={"text": "sly praise"})
    ExampleFactory(round=round, fooled=True)  # not verified
    ExampleFactory(round=round, fooled=True, consensus=Example.Consensus.VERIFIED, retracted=True)
    LabeledItemFactory(task=task, seed_round=round, hardness_score=0.4, input={"text": "medium"})
    LabeledItemFactory(task=task, seed_round=round, hardness_score=0.95, input={"text": "hardest"})
    LabeledItemFactory(task=task, input={"text": "not seeded"})
    data = writer_api.get(f"/api/tasks/{task.slug}/inspiration/").data
    assert [row["input"] for row in data["fooling_examples"]] == [verified.input]
    assert [row["input"]["text"] for row in data["hard_examples"]] == ["hardest", "medium"]
    assert "author" not in data["fooling_examples"][0]


def test_the_create_flow_is_in_the_openapi_schema(writer_api):
    schema = writer_api.get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    for path in ("/api/tasks/{slug}/contexts/next/", "/api/tasks/{slug}/examples/", "/api/tasks/{slug}/sandbox/",
                 "/api/tasks/{slug}/inspiration/", "/api/examples/{id}/", "/api/examples/{id}/retract/",
                 "/api/examples/{id}/flag/", "/api/examples/{id}/explanation/", "/api/me/stats/"):
        assert path in paths, path
    create = paths["/api/tasks/{slug}/examples/"]["post"]
    assert {"201", "202", "429"} <= set(create["responses"])
    request = schema["components"]["schemas"]["SubmissionRequest"]["properties"]
    assert "fooled" not in request and {"context_id", "input", "target", "idempotency_key"} <= set(request)
    example = schema["components"]["schemas"]["Example"]["properties"]
    assert example["fooled"].get("readOnly") is True
