"""Chat conversations (chat.services, chat.api, chat.jobs): who may start and write, what the writer sees (blinded
slots), how targets are assigned, that a message is saved before any model is called, the refusals, and what
ratings, pairwise choices and failure marks save.

The targets answer from a real OpenAI-compatible HTTP server on 127.0.0.1 (`ChatEndpoint`), configured as the
operator's endpoints (tests/llm/endpoints.py); it answers "<model> heard: <the last message>" and records every
request, so the tests read what the model was sent."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from chat import jobs, services
from chat.models import Conversation, Failure, Judgement, Message, Preference, Rating
from tasks import guidelines, roles
from tasks.models import Round
from tasks.round_state import close_round
from tests.factories import RoundFactory, TaskFactory, UserFactory
from tests.llm.endpoints import use_endpoint

pytestmark = pytest.mark.django_db


# --- a real OpenAI-compatible server ---------------------------------------------------------------------------


class ChatEndpoint(BaseHTTPRequestHandler):
    """Chat completions. `behaviour` on the server: "ok"; "slow" (sleeps `delay` s, then answers); "quota" (429);
    "error" (503); "fail_first" (503 for the first `failures` requests, then ok). Every request is recorded in
    `seen` with when it came and when it was answered."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        came = time.monotonic()
        record = {"body": body, "came": came}
        self.server.seen.append(record)
        behaviour = self.server.behaviour
        if behaviour == "fail_first":
            if self.server.failures > 0:
                self.server.failures -= 1
                return self._send(503, {"error": {"message": "overloaded at 10.0.0.7"}})
        elif behaviour == "quota":
            return self._send(429, {"error": {"message": "rate limit"}}, {"Retry-After": "0"})
        elif behaviour == "error":
            return self._send(503, {"error": {"message": "overloaded at 10.0.0.7"}})
        elif behaviour == "slow":
            time.sleep(self.server.delay)
        last = next(t["content"] for t in reversed(body.get("messages", [])) if t["role"] == "user")
        record["answered"] = time.monotonic()
        return self._send(200, {"choices": [{"message": {"content": f"{body.get('model')} heard: {last}"}}],
                                "usage": {"prompt_tokens": 20, "completion_tokens": 6}, "model": body.get("model")})

    def _send(self, code: int, payload: dict, headers: dict | None = None):
        raw = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


@pytest.fixture
def chat_server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ChatEndpoint)
    httpd.behaviour, httpd.delay, httpd.failures, httpd.seen = "ok", 0.0, 0, []
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url_of(httpd) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}/v1"


@pytest.fixture(autouse=True)
def _fast(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CHAT_RETRY_BACKOFF_SECONDS = 0.0


@pytest.fixture
def inline(settings):
    """Jobs run in the request, in the test's transaction (a thread would not see its rows)."""
    settings.JOB_RUNNER = "inline"


def targets_on(settings, httpd, names=("alpha", "beta"), timeout_s: float = 5.0, **extra) -> list[dict]:
    """One target per name, each on an endpoint of its own (model "<name>-model") at the test server."""
    out = []
    for name in names:
        provider = use_endpoint(settings, url_of(httpd), name=name, model=f"{name}-model", timeout_s=timeout_s)
        out.append({"name": name, "provider": provider, "system_prompt": f"You are {name}.", "temperature": 0.2,
                    "max_tokens": 64, "seed": 7, **extra})
    return out


def chat_task(targets: list[dict], slug: str = "chat", **chat):
    task = TaskFactory(slug=slug, kind="chat", config={"chat": {"targets": targets, **chat}})
    RoundFactory(task=task, number=1)
    return task


@pytest.fixture
def writer(db):
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    return user


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def start(client, task) -> dict:
    response = client.post(reverse("api-chat-conversations", args=[task.slug]), {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def say(client, convo: dict, text: str):
    return client.post(convo["links"]["messages"], {"text": text}, format="json")


def get(client, convo: dict) -> dict:
    return client.get(convo["links"]["self"]).json()


# --- starting: assignment and blinding ---------------------------------------------------------------------------


def test_a_slider_conversation_gets_one_blinded_target_and_records_its_settings(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server))
    convo = start(client_of(writer), task)
    assert convo["scale"] == "slider" and convo["state"] == "open" and convo["blinded"] is True
    assert convo["slots"] == [{"slot": 0, "name": "Model A", "target": None, "model": None}]
    assert convo["can_send"] is True and convo["waiting_for"] is None and convo["turns"] == []
    assert [c["name"] for c in convo["categories"]][:3] == ["wrong", "unsafe", "needless_refusal"]
    stored = Conversation.objects.get(pk=convo["id"])
    assert len(stored.targets) == 1 and stored.targets[0] in {"alpha", "beta"}
    name = stored.targets[0]
    assert stored.target_settings == {name: {
        "provider": "openai", "endpoint": name, "provider_model": "", "timeout_s": 5.0, "model": f"{name}-model",
        "system_prompt": f"You are {name}.", "temperature": 0.2, "max_tokens": 64, "seed": 7}}
    assert "alpha" not in json.dumps(convo) and "beta" not in json.dumps(convo)


def test_a_pairwise_conversation_gets_two_distinct_targets(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server, names=("alpha", "beta", "gamma")), scale="pairwise")
    for _ in range(6):
        convo = start(client_of(writer), task)
        assert [s["name"] for s in convo["slots"]] == ["Model A", "Model B"]
        names = Conversation.objects.get(pk=convo["id"]).targets
        assert len(set(names)) == 2


def test_balanced_assignment_has_each_writer_meet_each_target_before_any_twice(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server, names=("alpha", "beta", "gamma")))
    other = UserFactory(username="other-writer")
    roles.grant(other, roles.ANNOTATOR)
    seen: dict[str, list[str]] = {"writer": [], "other": []}
    for _ in range(9):
        for who, user in (("writer", writer), ("other", other)):
            convo = start(client_of(user), task)
            seen[who] += Conversation.objects.get(pk=convo["id"]).targets
    for names in seen.values():
        for block in range(3):  # every target once in each block of three conversations
            assert sorted(names[block * 3:block * 3 + 3]) == ["alpha", "beta", "gamma"]
    # ties are broken at random: the two writers do not meet them in one fixed order (3! orders per block)
    orders = {tuple(names[b * 3:b * 3 + 3]) for names in seen.values() for b in range(3)}
    assert len(orders) > 1


def test_balanced_pairs_spread_evenly_and_random_assignment_is_uniform(settings, chat_server, writer):
    from chat.assignment import choose_targets

    task = chat_task(targets_on(settings, chat_server, names=("a1", "b2", "c3", "d4")), scale="pairwise")
    for _ in range(8):
        start(client_of(writer), task)
    met = Counter(n for c in Conversation.objects.filter(writer=writer) for n in c.targets)
    assert met == {"a1": 4, "b2": 4, "c3": 4, "d4": 4}

    rng = random.Random(3)
    settings_ = task.typed_config.chat.model_copy(update={"assignment": "random"})
    draws = Counter(n for _ in range(2000) for n in choose_targets(writer, task, settings_, rng=rng))
    assert all(abs(count / 4000 - 0.25) < 0.03 for count in draws.values()), draws
    slot0 = Counter(choose_targets(writer, task, settings_, rng=rng)[0] for _ in range(2000))
    assert len(slot0) == 4  # any target may be Model A


def test_who_sees_target_names(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    owner, expert = UserFactory(username="owner"), UserFactory(username="expert")
    task.owners.add(owner)
    roles.grant(expert, roles.EXPERT)
    convo = start(client_of(writer), task)
    assert say(client_of(writer), convo, "Hello there").status_code == 202
    name = Conversation.objects.get(pk=convo["id"]).targets[0]

    mine = get(client_of(writer), convo)
    answer = mine["turns"][0]["answers"][0]
    assert answer["slot_name"] == "Model A" and answer["target"] is None and answer["model"] is None
    assert answer["state"] == "ready" and answer["text"] == f"{name}-model heard: Hello there"
    # nothing but the answer's own text (this test model says its name) gives the target away
    assert name not in json.dumps({**mine, "turns": [{**answer, "text": ""}]})
    polled = client_of(writer).get(answer["links"]["self"]).json()
    assert polled["target"] is None and polled["model"] is None

    owners_view = get(client_of(owner), convo)
    assert owners_view["blinded"] is False and owners_view["slots"][0]["target"] == name
    assert owners_view["turns"][0]["answers"][0]["model"] == f"{name}-model"
    assert owners_view["can_send"] is False  # reading is not writing
    assert client_of(expert).get(convo["links"]["self"]).status_code == 404  # not theirs to read here

    close_round(Round.objects.get(task=task))
    after = get(client_of(writer), convo)  # the round's data is collected: nothing left to bias
    assert after["blinded"] is False and after["slots"][0]["target"] == name
    assert after["can_send"] is False and "round is closed" in after["waiting_for"]


def test_an_unblinded_task_shows_its_writers_the_names(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server), blinded=False)
    convo = start(client_of(writer), task)
    assert convo["blinded"] is False and convo["slots"][0]["target"] in {"alpha", "beta"}


def test_only_writers_of_a_chat_task_with_an_open_round_start_conversations(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server))
    url = reverse("api-chat-conversations", args=[task.slug])
    nobody = UserFactory(username="nobody")
    assert client_of(nobody).post(url, {}, format="json").status_code == 403
    assert APIClient().post(url, {}, format="json").status_code in (401, 403)

    refused = client_of(writer).post(url, {"targets": ["alpha"]}, format="json")
    assert refused.status_code == 400 and "targets" in refused.json()["errors"]

    guidelines.publish(task, "Be kind to the models.", by=UserFactory(username="owner"))
    unread = client_of(writer).post(url, {}, format="json")
    assert unread.status_code == 409, unread.content
    guidelines.acknowledge(writer, task, 1)
    assert client_of(writer).post(url, {}, format="json").status_code == 201

    close_round(Round.objects.get(task=task))
    closed = client_of(writer).post(url, {}, format="json")
    assert closed.status_code == 409 and "no open round" in closed.json()["detail"]

    sentiment = TaskFactory(slug="plain", kind="sentiment")
    RoundFactory(task=sentiment, number=1)
    other = client_of(writer).post(reverse("api-chat-conversations", args=["plain"]), {}, format="json")
    assert other.status_code == 409 and "not a chat task" in other.json()["detail"]


def test_the_list_holds_the_requesters_own_conversations(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server))
    other = UserFactory(username="other-writer")
    roles.grant(other, roles.ANNOTATOR)
    mine = [start(client_of(writer), task)["id"] for _ in range(2)]
    start(client_of(other), task)
    listed = client_of(writer).get(reverse("api-chat-conversations", args=[task.slug])).json()
    assert listed["count"] == 2 and [row["id"] for row in listed["results"]] == mine[::-1]
    assert listed["results"][0]["slots"][0]["target"] is None and listed["results"][0]["turns_used"] == 0


# --- sending ---------------------------------------------------------------------------------------------------


def test_a_message_is_saved_with_its_pending_answers_before_any_model_is_called(settings, chat_server, writer):
    """No JOB_RUNNER override: the job is queued for after the commit, which a test transaction never reaches, so
    what the request answered and stored is all that happened before any model could be called."""
    task = chat_task(targets_on(settings, chat_server), scale="pairwise")
    client = client_of(writer)
    convo = start(client, task)
    response = say(client, convo, "  What is the capital of Australia?  ")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["message"]["text"] == "What is the capital of Australia?"
    assert [a["state"] for a in body["answers"]] == ["pending", "pending"]
    assert [a["slot_name"] for a in body["answers"]] == ["Model A", "Model B"]
    assert chat_server.seen == []  # no model was asked
    stored = Message.objects.filter(conversation_id=convo["id"])
    assert stored.filter(role="user", turn=0, text="What is the capital of Australia?").count() == 1
    assert stored.filter(role="assistant", state="pending").count() == 2
    assert get(client, convo)["waiting_for"].startswith("the models are still answering")

    ids = [answer["id"] for answer in body["answers"]]
    for pk in ids:  # now the jobs run (as the thread or a worker would)
        assert jobs.run(pk) == "ready"
    assert len(chat_server.seen) == 2
    ready = Message.objects.filter(conversation_id=convo["id"], role="assistant").order_by("slot")
    targets = Conversation.objects.get(pk=convo["id"]).targets
    for answer, name in zip(ready, targets, strict=True):
        assert answer.state == "ready" and answer.text == f"{name}-model heard: What is the capital of Australia?"
        assert answer.model == f"{name}-model" and answer.target == name and answer.attempts == 1
        assert answer.usage["prompt_tokens"] == 20 and answer.usage["completion_tokens"] == 6
        assert answer.usage["seconds"] >= 0 and answer.usage["tries"] == 1 and answer.ready_at is not None
    sent = {r["body"]["model"]: r["body"] for r in chat_server.seen}
    for name in targets:
        body = sent[f"{name}-model"]
        assert body["messages"] == [{"role": "system", "content": f"You are {name}."},
                                    {"role": "user", "content": "What is the capital of Australia?"}]
        assert body["max_tokens"] == 64 and body["temperature"] == 0.2 and body["seed"] == 7
    assert jobs.run(ids[0]) == "skipped"  # a second job for a ready answer does nothing


def test_the_history_holds_the_last_exchanges_with_the_chosen_answers(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server), scale="pairwise", history_turns=2)
    client = client_of(writer)
    convo = start(client, task)
    names = Conversation.objects.get(pk=convo["id"]).targets
    for turn, (text, winner) in enumerate((("one", 1), ("two", None), ("three", 0), ("four", 1))):
        assert say(client, convo, text).status_code == 202
        if turn < 3:
            response = client.post(convo["links"]["preferences"], {"turn": turn, "winner": winner}, format="json")
            assert response.status_code == 200, response.content
    last_two = [r["body"]["messages"] for r in chat_server.seen[-2:]]
    # the chosen answers: turn 1 a tie (slot 0), turn 2 slot 0; turn 0 fell out of the window of two
    expected = [{"role": "user", "content": "two"}, {"role": "assistant", "content": f"{names[0]}-model heard: two"},
                {"role": "user", "content": "three"},
                {"role": "assistant", "content": f"{names[0]}-model heard: three"},
                {"role": "user", "content": "four"}]
    for messages in last_two:
        assert messages[1:] == expected  # after each target's own system prompt
    third = [r["body"]["messages"] for r in chat_server.seen[2:4]]
    assert all(m[2] == {"role": "assistant", "content": f"{names[1]}-model heard: one"} for m in third)


def test_refusals_say_why(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server), max_turns=2, max_message_chars=40)
    client = client_of(writer)
    convo = start(client, task)

    for text, field_message in (("", "must not be empty"), ("x" * 41, "the limit is 40"),
                                ("bad\u0000text", "control character"), (12, "must be a string")):
        response = say(client, convo, text)
        assert response.status_code == 400 and field_message in response.json()["detail"], response.content
    surplus = client.post(convo["links"]["messages"], {"text": "hi", "model": "alpha"}, format="json")
    assert surplus.status_code == 400 and "model" in surplus.json()["errors"]

    settings.JOB_RUNNER = ""  # the answer stays pending (its job waits for a commit that never comes)
    assert say(client, convo, "first").status_code == 202
    pending = say(client, convo, "too soon")
    assert pending.status_code == 409 and "still answering" in pending.json()["detail"]
    answer = Message.objects.get(conversation_id=convo["id"], role="assistant")
    jobs.run(answer.pk)
    assert say(client, convo, "second").status_code == 202
    jobs.run(Message.objects.get(conversation_id=convo["id"], role="assistant", turn=1).pk)
    limit = say(client, convo, "third")
    assert limit.status_code == 409 and "limit of 2 messages" in limit.json()["detail"]
    assert Message.objects.filter(conversation_id=convo["id"], role="user").count() == 2

    closed = start(client, task)
    assert client.post(closed["links"]["close"], format="json").json()["state"] == "closed"
    refused = say(client, closed, "hello")
    assert refused.status_code == 409 and "finished" in refused.json()["detail"]

    pairwise = chat_task(targets_on(settings, chat_server), slug="pairs", scale="pairwise")
    pair = start(client, pairwise)
    settings.JOB_RUNNER = "inline"
    assert say(client, pair, "first").status_code == 202
    unchosen = say(client, pair, "second")
    assert unchosen.status_code == 409 and "choose the better answer" in unchosen.json()["detail"]
    assert get(client, pair)["can_send"] is False

    open_one = start(client, task)
    close_round(Round.objects.get(task=task))
    late = say(client, open_one, "hello")
    assert late.status_code == 409 and "round is closed" in late.json()["detail"]


def test_a_suspended_or_former_writer_cannot_go_on(settings, chat_server, writer, inline):
    from crowd.members import suspend  # test-only: chat itself never imports crowd

    task = chat_task(targets_on(settings, chat_server))
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    convo = start(client_of(writer), task)
    suspend(task, writer.username, by=owner, reason="spam")
    roles.forget(writer)
    assert say(client_of(writer), convo, "hello").status_code == 403


# --- ratings, choices, marks -----------------------------------------------------------------------------------


def test_ratings_are_saved_and_rating_again_replaces_them(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    client = client_of(writer)
    convo = start(client, task)
    answer = say(client, convo, "Tell me a fact").json()["answers"][0]
    url = answer["links"]["rating"]
    assert client.post(url, {"score": 35}, format="json").json()["rating"] == 35
    assert client.post(url, {"score": 80}, format="json").json()["rating"] == 80
    assert list(Rating.objects.values_list("score", "rater__username")) == [(80, "writer")]
    for bad in (101, -1, "high", None, 3.5):
        response = client.post(url, {"score": bad}, format="json")
        assert response.status_code == 400 and "score" in response.json()["errors"], (bad, response.content)
    assert client.post(url, {}, format="json").status_code == 400
    assert get(client, convo)["turns"][0]["answers"][0]["rating"] == 80


def test_an_answer_not_ready_cannot_be_rated_chosen_or_marked(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server), scale="pairwise")
    client = client_of(writer)
    convo = start(client, task)
    answers = say(client, convo, "hello").json()["answers"]  # pending: the job waits for a commit
    rated = client.post(answers[0]["links"]["rating"], {"score": 50}, format="json")
    assert rated.status_code == 409 and "only a ready answer can be rated" in rated.json()["detail"]
    marked = client.post(answers[0]["links"]["failure"], {"category": "wrong", "reason": "x"}, format="json")
    assert marked.status_code == 409
    chosen = client.post(convo["links"]["preferences"], {"turn": 0, "winner": 0}, format="json")
    assert chosen.status_code == 409
    again = client.post(answers[0]["links"]["retry"], format="json")
    assert again.status_code == 409 and "still being written" in again.json()["detail"]


def test_pairwise_choices_mark_the_chosen_answer_and_can_change_until_the_next_message(settings, chat_server, writer,
                                                                                        inline):
    task = chat_task(targets_on(settings, chat_server), scale="pairwise")
    client = client_of(writer)
    convo = start(client, task)
    say(client, convo, "first")
    url = convo["links"]["preferences"]
    data = client.post(url, {"turn": 0, "winner": 1, "reason": "more precise"}, format="json").json()
    assert data["turns"][0]["preference"] == {"winner": 1, "reason": "more precise"}
    assert [a["chosen"] for a in data["turns"][0]["answers"]] == [False, True]
    tie = client.post(url, {"turn": 0, "winner": None}, format="json").json()
    assert tie["turns"][0]["preference"]["winner"] is None
    assert [a["chosen"] for a in tie["turns"][0]["answers"]] == [True, False]  # a tie goes on with slot 0
    assert Preference.objects.get().winner_slot is None

    for body, field in (({"turn": 0, "winner": 2}, "winner"), ({"turn": 5, "winner": 0}, "turn"),
                        ({"turn": "zero", "winner": 0}, "turn"), ({"winner": 0}, "turn"),
                        ({"turn": 0, "winner": 0, "reason": "a\u202eb"}, "reason")):
        response = client.post(url, body, format="json")
        assert response.status_code == 400 and field in response.json()["detail"], (body, response.content)

    say(client, convo, "second")
    late = client.post(url, {"turn": 0, "winner": 1}, format="json")
    assert late.status_code == 409 and "only the last turn" in late.json()["detail"]

    slider = chat_task(targets_on(settings, chat_server), slug="slider")
    other = start(client, slider)
    say(client, other, "hi")
    response = client.post(other["links"]["preferences"], {"turn": 0, "winner": 0}, format="json")
    assert response.status_code == 409 and "slider" in response.json()["detail"]


def test_failure_marks_are_saved_once_and_retracted_while_unjudged(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server), taxonomy=[{"name": "rude", "description": "Rude"}])
    client = client_of(writer)
    convo = start(client, task)
    answer = say(client, convo, "Be rude to me").json()["answers"][0]
    url = answer["links"]["failure"]
    assert get(client, convo)["categories"][-1] == {"name": "rude", "description": "Rude"}

    for body, field in (({"category": "boring", "reason": "dull"}, "category"),
                        ({"category": "wrong", "reason": ""}, "reason"), ({"category": "wrong"}, "reason"),
                        ({"category": "wrong", "reason": "x", "consensus": "confirmed"}, "consensus")):
        response = client.post(url, body, format="json")
        assert response.status_code == 400 and field in response.json()["detail"], (body, response.content)

    made = client.post(url, {"category": "rude", "reason": "It was not rude at all."}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["failure"] == {"category": "rude", "reason": "It was not rude at all.",
                                      "consensus": "unvalidated", "can_retract": True}
    twice = client.post(url, {"category": "wrong", "reason": "again"}, format="json")
    assert twice.status_code == 409 and "already marked" in twice.json()["detail"]
    assert client.delete(url).json()["failure"] is None
    assert not Failure.objects.exists()
    assert client.delete(url).status_code == 409

    client.post(url, {"category": "wrong", "reason": "Made up."}, format="json")
    validator = UserFactory(username="validator")
    Judgement.objects.create(failure=Failure.objects.get(), judge=validator, verdict="confirmed", category="wrong")
    assert get(client, convo)["turns"][0]["answers"][0]["failure"]["can_retract"] is False
    judged = client.delete(url)
    assert judged.status_code == 409 and "validators have judged" in judged.json()["detail"]
    assert Failure.objects.count() == 1


def test_closing_keeps_everything_and_stops_writing(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    client = client_of(writer)
    convo = start(client, task)
    answer = say(client, convo, "hello").json()["answers"][0]
    closed = client.post(convo["links"]["close"], format="json").json()
    assert closed["state"] == "closed" and closed["can_send"] is False and len(closed["turns"]) == 1
    assert client.post(convo["links"]["close"], format="json").status_code == 200  # again: nothing changes
    assert client.post(answer["links"]["rating"], {"score": 3}, format="json").status_code == 409


def test_someone_elses_conversation_does_not_exist_for_you(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    convo = start(client_of(writer), task)
    answer = say(client_of(writer), convo, "mine").json()["answers"][0]
    stranger = UserFactory(username="stranger")
    roles.grant(stranger, roles.ANNOTATOR)
    other = client_of(stranger)
    assert other.get(convo["links"]["self"]).status_code == 404
    assert say(other, convo, "theirs").status_code == 404
    assert other.post(convo["links"]["preferences"], {"turn": 0, "winner": 0}, format="json").status_code == 404
    assert other.post(convo["links"]["close"], format="json").status_code == 404
    assert other.get(answer["links"]["self"]).status_code == 404
    assert other.post(answer["links"]["rating"], {"score": 1}, format="json").status_code == 404
    assert other.post(answer["links"]["retry"], format="json").status_code == 404
    assert other.post(answer["links"]["failure"], {"category": "wrong", "reason": "x"}, format="json").status_code == 404
    assert other.delete(answer["links"]["failure"]).status_code == 404
    user_message = Message.objects.get(role="user")
    assert client_of(writer).get(reverse("api-chat-message-self", args=[user_message.pk])).status_code == 404
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    refused = say(client_of(owner), convo, "owner's words")
    assert refused.status_code == 403 and "writer" in refused.json()["detail"]
    assert not Rating.objects.exists() and Message.objects.filter(role="user").count() == 1


# --- the embedded default: a thread answers, the request does not wait ---------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_request_answers_at_once_and_two_slots_are_written_side_by_side(settings, chat_server):
    """The real embedded path (no JOB_RUNNER override: each answer's job in a thread of this process, after the
    commit): a model that takes 1 s per answer; the message is answered in far less, and the two answers of a pair,
    written side by side, are both ready in about 1 s, not 2."""
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    chat_server.behaviour, chat_server.delay = "slow", 1.0
    task = chat_task(targets_on(settings, chat_server), scale="pairwise")
    client = client_of(writer)
    convo = start(client, task)
    began = time.monotonic()
    response = say(client, convo, "Take your time")
    answered_in = time.monotonic() - began
    assert response.status_code == 202 and answered_in < 0.8, answered_in
    links = [a["links"]["self"] for a in response.json()["answers"]]
    deadline = time.monotonic() + 20
    states = []
    while time.monotonic() < deadline:
        states = [client.get(link).json()["state"] for link in links]
        if "pending" not in states:
            break
        time.sleep(0.05)
    assert states == ["ready", "ready"]
    came = sorted(r["came"] for r in chat_server.seen)
    assert len(came) == 2 and came[1] - came[0] < 0.5  # both asked before either answered


def test_the_sweep_queues_again_an_answer_whose_job_was_lost(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server))
    client = client_of(writer)
    convo = start(client, task)
    say(client, convo, "Anyone there?")  # its job waits for a commit the test never makes: a lost job
    answer = Message.objects.get(role="assistant")
    settings.JOB_RUNNER = "inline"
    assert jobs.sweep_pending() == 0  # within the grace period: its job may still be running
    old = (timezone.now() - timezone.timedelta(seconds=jobs.grace_seconds() + 5)).isoformat()
    Message.objects.filter(pk=answer.pk).update(created_at=timezone.now() - timezone.timedelta(hours=1),
                                                usage={"queued_at": old})
    assert jobs.sweep_pending() == 1
    answer.refresh_from_db()
    assert answer.state == "ready" and answer.text == f"{answer.target}-model heard: Anyone there?"
    assert jobs.sweep_pending() == 0  # nothing pending: idempotent


def test_a_swept_answer_is_not_queued_again_within_the_grace_period(settings, chat_server, writer):
    """The sweep renews an answer's `queued_at` as it queues it: while that job runs, the next sweeps leave it."""
    task = chat_task(targets_on(settings, chat_server))
    client = client_of(writer)
    convo = start(client, task)
    say(client, convo, "Anyone there?")
    answer = Message.objects.get(role="assistant")
    Message.objects.filter(pk=answer.pk).update(created_at=timezone.now() - timezone.timedelta(hours=1),
                                                usage={"queued_at": "2000-01-01T00:00:00+00:00"})
    assert jobs.sweep_pending() == 1  # queued (for after the commit: it stays pending here)
    assert jobs.sweep_pending() == 0 and jobs.sweep_pending() == 0
    answer.refresh_from_db()
    assert answer.state == "pending" and answer.usage["requeued"] == 1


def test_the_service_refuses_rating_ones_own_message(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    convo = services.start(writer, task)
    message, _ = services.send(writer, convo, "hello")
    from dynabench_site.errors import Conflict

    with pytest.raises(Conflict, match="your own message"):
        services.rate(writer, message, 10)


# --- how fast: the task's submission_rate per writer (chat/throttles.py) ----------------------------------------


def test_starting_conversations_past_the_tasks_rate_is_429_and_stores_nothing(settings, chat_server, writer):
    task = chat_task(targets_on(settings, chat_server))
    task.config = {**task.config, "submission_rate": "2/min"}
    task.save(update_fields=["config"])
    client = client_of(writer)
    start(client, task)
    start(client, task)
    response = client.post(reverse("api-chat-conversations", args=[task.slug]), {}, format="json")
    assert response.status_code == 429
    assert "faster than this task allows (2/min)" in response.json()["detail"]
    assert int(response["Retry-After"]) > 0
    assert Conversation.objects.filter(writer=writer).count() == 2


def test_messages_count_against_the_same_rate(settings, chat_server, writer, inline):
    task = chat_task(targets_on(settings, chat_server))
    task.config = {**task.config, "submission_rate": "3/min"}
    task.save(update_fields=["config"])
    client = client_of(writer)
    convo = start(client, task)  # 1
    assert say(client, convo, "Hello there.").status_code == 202  # 2 (answered inline)
    assert say(client, convo, "And again.").status_code == 202  # 3
    response = say(client, convo, "One too many.")
    assert response.status_code == 429 and "try again in" in response.json()["detail"]
    assert Message.objects.filter(conversation_id=convo["id"], role="user").count() == 2
