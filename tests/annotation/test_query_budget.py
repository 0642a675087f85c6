"""What a writer's and a validator's requests cost the database (issue 27), and that the access cache behind those
figures never outlives a change of rights (dynabench_site.access_cache).

Budgets, counted as the database round trips of the web request alone, with a token as a script or the page's
API client sends it, after the caller's first request (which fills the cache). Scoring is a job: the worker's
queries are not the web tier's, so the job is left queued here. Transaction control (BEGIN, COMMIT, savepoints)
is not counted: PostgreSQL's driver sends no BEGIN of its own and SQLite's are local calls.
- a submission ≤ 6: the replay lookup of its idempotency key (the writer's page sends one), the context, the
  duplicate check (one indexed lookup of the input's fingerprint among the writer's and their linked accounts'
  examples), the example and its queue row, and the example read back (5 without a key);
- a verdict poll ≤ 3 (the example);
- the next context ≤ 5;
- the next validation item ≤ 5: the held lease, the candidates, the row locked with the others' leases (and, on
  PostgreSQL, the lease's relaxed commit in the same statement), the row's votes, the new lease. The gold counts
  and the validator's account origin come from the access cache; the unscored rows' refresh is a safety net run
  at most every 15 s per task (a stored verdict reaches its queue row through `annotation.signals`).

The invalidation matrix: every change below shows on the very next request, cache or no cache.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts import tokens
from crowd import members
from tasks import guidelines, roles, round_state
from tasks.models import Suspension, Task
from tests.annotation.conftest import sentiment_body
from tests.factories import ContextFactory, ExampleFactory, UserFactory

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


class Counted:
    def __init__(self):
        self.queries: list[str] = []

    def __len__(self) -> int:
        return len(self.queries)

    def __repr__(self) -> str:
        return "\n" + "\n".join(q[:150] for q in self.queries)


def counted(call):
    with CaptureQueriesContext(connection) as captured:
        response = call()
    result = Counted()
    result.queries = [q["sql"] for q in captured.captured_queries if not q["sql"].upper().startswith(CONTROL)]
    return response, result


@pytest.fixture
def quiet_jobs(monkeypatch):
    """The scoring job stays queued (a worker's work, not the web request's)."""
    monkeypatch.setattr("annotation.jobs.enqueue_scoring", lambda *args, **kwargs: None)


def token_client(user) -> APIClient:
    _, raw = tokens.issue(user, "budget")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


@pytest.fixture
def writer_token(writer, sentiment):
    task, _, _ = sentiment
    guidelines.publish(task, "Write a sentence the model gets wrong.")
    guidelines.acknowledge(writer, task, 1)
    return token_client(writer)


def submit(client, task, context, text: str, key: str | None = None):
    body = sentiment_body(context, input={"text": text})
    if key is not None:
        body["idempotency_key"] = key
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json")


def test_a_writers_requests_stay_within_their_query_budgets(writer_token, sentiment, deploy, quiet_jobs):
    task, round_, context = sentiment
    deploy(round_)
    assert submit(writer_token, task, context, "A first, warming sentence.").status_code == 202  # fills the cache

    response, queries = counted(lambda: writer_token.post(f"/api/tasks/{task.slug}/contexts/next/"))
    assert response.status_code == 200
    assert len(queries) <= 5, queries
    # With an idempotency key, as the writer's page sends one: the replay lookup is the sixth query.
    response, queries = counted(lambda: submit(writer_token, task, context, "The soup was cold and late.", "k-1"))
    assert response.status_code == 202 and response.data["scoring_state"] == "pending"
    assert response.data["round"] == 1 and response.data["context"] == context.payload  # all there, from memory
    assert len(queries) <= 6, queries
    replay, queries = counted(lambda: submit(writer_token, task, context, "The soup was cold and late.", "k-1"))
    assert replay.data["id"] == response.data["id"] and len(queries) <= 3, queries  # the key, the example, its verdict
    example = response.data["id"]
    response, queries = counted(lambda: writer_token.get(f"/api/examples/{example}/"))
    assert response.status_code == 200 and len(queries) <= 3, queries
    response, queries = counted(lambda: writer_token.post(f"/api/examples/{example}/score/"))
    assert response.status_code == 200 and len(queries) <= 3, queries


def test_a_submission_that_brings_the_next_context_is_one_request_within_budget(writer_token, sentiment, deploy,
                                                                                   quiet_jobs):
    """`next_context: true`: the example is saved and the next context comes with its answer, so a writer who moves
    on makes one request per example instead of two (what `contexts/next` would cost: the candidates and the use
    counted). Budget: the submission's 6 and those 2."""
    task, round_, context = sentiment
    other = ContextFactory(task=task, round=round_, payload={"prompt": "A harbour view at dusk."})
    deploy(round_)
    assert submit(writer_token, task, context, "A first, warming sentence.").status_code == 202
    body = {**sentiment_body(context, input={"text": "The bread arrived late, sadly."}), "next_context": True}
    response, queries = counted(lambda: writer_token.post(f"/api/tasks/{task.slug}/examples/", body, format="json"))
    assert response.status_code == 202 and response.data["scoring_state"] == "pending"
    assert response.data["next_context"]["id"] == other.pk  # never the one just written about, while others exist
    assert len(queries) <= 8, queries
    other.refresh_from_db()
    assert other.times_used == 1
    plain = submit(writer_token, task, context, "Without asking, no next context.")
    assert "next_context" not in plain.data


def test_a_submission_without_a_word_map_says_so(writer_token, sentiment, deploy, monkeypatch):
    """`word_map: false` asks for the verdict alone; anything but a boolean is a 400 that names the field."""
    task, round_, context = sentiment
    deploy(round_)
    asked = []
    monkeypatch.setattr("annotation.jobs.enqueue_scoring", lambda pk, word_map=True: asked.append(word_map))
    body = {**sentiment_body(context, input={"text": "Only the verdict, please."}), "word_map": False}
    assert writer_token.post(f"/api/tasks/{task.slug}/examples/", body, format="json").status_code == 202
    assert asked == [False]
    bad = writer_token.post(f"/api/tasks/{task.slug}/examples/", {**body, "word_map": "maybe", "idempotency_key": "x"},
                            format="json")
    assert bad.status_code == 400 and "word_map" in bad.json()["errors"]


def test_the_next_validation_item_stays_within_its_budget(open_round):
    """After a vote, the next item: at most 5 round trips on SQLite and PostgreSQL alike (10 on PostgreSQL and 9 on
    SQLite before: the gold standing, the unscored rows' refresh, the linked accounts twice, the others' leases and the
    SET LOCAL each made one of their own)."""
    task = open_round.task
    task.config = {**task.config, "crowd": {**task.config.get("crowd", {}), "gold_rate": 0}}  # gold: its own path
    task.save()
    validator = UserFactory(username="judge")
    roles.grant(validator, roles.VALIDATOR)
    for _ in range(3):
        ExampleFactory(round=open_round)
    client = token_client(validator)
    first = client.post(f"/api/tasks/{task.slug}/validation/next/")  # fills the cache
    voted = client.post(f"/api/examples/{first.data['item']['id']}/validations/", {"verdict": "correct"}, format="json")
    assert voted.status_code == 201
    response, queries = counted(lambda: client.post(f"/api/tasks/{task.slug}/validation/next/"))
    assert response.status_code == 200 and response.data["item"] is not None
    assert len(queries) <= 5, queries


# --- the access cache never outlives a change of rights ------------------------------------------


@pytest.fixture
def primed(writer_token, sentiment, deploy, quiet_jobs):
    """A writer whose token, roles, task, round and acknowledgement are all in the access cache."""
    task, round_, context = sentiment
    deploy(round_)
    assert submit(writer_token, task, context, "Priming the cache, politely.").status_code == 202
    return writer_token, task, round_, context


def test_a_suspension_and_its_lifting_show_on_the_next_request(primed, writer):
    client, task, _, context = primed
    Suspension.objects.create(task=task, user=writer, reason="copying")
    assert submit(client, task, context, "Suspended writers write nothing.").status_code == 403
    members.lift(task, writer.username)  # a queryset update
    assert submit(client, task, context, "Back at it, and quite well.").status_code == 202


def test_a_revoked_role_and_a_revoked_token_show_on_the_next_request(primed, writer):
    client, task, _, context = primed
    writer.groups.clear()
    assert submit(client, task, context, "No role, no example here.").status_code == 403
    roles.grant(writer, roles.ANNOTATOR)
    assert submit(client, task, context, "The role is back again.").status_code == 202
    token = writer.api_tokens.get(name="budget")
    tokens.revoke(writer, token.pk)
    response = submit(client, task, context, "A revoked token writes nothing.")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_a_deactivated_user_a_hidden_task_and_a_closed_round_show_on_the_next_request(primed, writer):
    client, task, round_, context = primed
    task.visibility = Task.Visibility.HIDDEN
    task.save()
    assert submit(client, task, context, "The task is hidden from me.").status_code == 404
    task.visibility = Task.Visibility.PUBLIC
    task.save()
    round_state.transition(round_, "closed")  # a queryset update
    response = submit(client, task, context, "The round has closed by now.")
    assert response.status_code == 409 and "no open round" in str(response.json())
    writer.is_active = False
    writer.save()
    assert submit(client, task, context, "Deactivated, so refused.").status_code == 401


def test_new_guidelines_must_be_acknowledged_on_the_next_request(primed, writer):
    client, task, _, context = primed
    guidelines.publish(task, "New rules: no sarcasm about trains.")
    response = submit(client, task, context, "Trains are always on time.")
    assert response.status_code == 409 and "guidelines" in str(response.json()).lower()
    guidelines.acknowledge(writer, task, 2)
    assert submit(client, task, context, "Trains are sometimes on time.").status_code == 202


def test_without_the_cache_every_request_reads_the_database(primed, settings):
    client, task, _, context = primed
    settings.ACCESS_CACHE_SECONDS = 0
    response, queries = counted(lambda: submit(client, task, context, "Uncached, and that is fine."))
    assert response.status_code == 202 and len(queries) > 6


def test_a_validators_gold_standing_and_linked_accounts_show_on_the_next_request(open_round):
    """The next-item path caches the validator's gold counts and their account's origin: a gold answer that blocks
    them, and an origin that links them to a writer, both show on the very next request."""
    from accounts.models import Account
    from validation import gold, queue
    from validation.models import GoldItem

    task = open_round.task
    task.config = {**task.config, "crowd": {**task.config.get("crowd", {}), "gold_rate": 0,
                                             "gold_min_answers": 1, "gold_min_accuracy": 0.5}}
    task.save()
    validator, author = UserFactory(username="judge"), UserFactory(username="author")
    roles.grant(validator, roles.VALIDATOR)
    Account.objects.create(user=validator, signup_ip="10.0.0.1")
    Account.objects.create(user=author, signup_ip="10.0.0.2")
    written = ExampleFactory(round=open_round, author=author)
    client = token_client(validator)
    first = client.post(f"/api/tasks/{task.slug}/validation/next/")  # fills the cache
    assert first.data["item"]["id"] == written.pk

    mine = Account.objects.get(user=validator)
    mine.signup_ip = "10.0.0.2"  # now the same address as the writer's
    mine.save()
    linked = client.post(f"/api/tasks/{task.slug}/validation/next/")
    assert linked.data["item"] is None and linked.data["reason"] == queue.ONLY_OWN

    mine.signup_ip = "10.0.0.1"
    mine.save()
    decided = ExampleFactory(round=open_round)
    item = GoldItem.objects.create(example=decided, task=task, verdict="correct")
    assert client.post(f"/api/tasks/{task.slug}/validation/next/").data["item"] is not None  # refills the cache
    gold.record_answer(validator, item, "incorrect", "negative")  # wrong: accuracy 0 of 1
    blocked = client.post(f"/api/tasks/{task.slug}/validation/next/")
    assert blocked.data["item"] is None and blocked.data["reason"] == queue.LOW_ACCURACY
