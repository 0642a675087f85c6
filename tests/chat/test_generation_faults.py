"""What a writer gets when a target's model cannot answer: a real endpoint that is down (a port nothing listens on),
one slower than its timeout, one over its quota (429), one failing a while then recovering, one misconfigured.
Each time the answer fails with a sentence for the writer (never an address or an HTTP status), the message and
everything before it stay saved, and asking again works once the endpoint answers. One integration test converses
with the packaged local model (SmolLM2, llama.cpp)."""

# ruff: noqa: F811 - the fixtures imported from test_conversations are used as parameters
from __future__ import annotations

import pytest

from chat import jobs
from chat.models import Message
from tests.chat.test_conversations import (  # noqa: F401 - fixtures
    _fast,
    chat_server,
    chat_task,
    client_of,
    get,
    inline,
    say,
    start,
    targets_on,
    url_of,
    writer,
)
from tests.llm.endpoints import down_endpoint, use_endpoint

pytestmark = pytest.mark.django_db


def one_target(settings, provider: dict) -> list[dict]:
    return [{"name": "solo", "provider": provider, "system_prompt": "Answer briefly.", "max_tokens": 32}]


def assert_for_people(error: str) -> None:
    assert "127.0.0.1" not in error and "http" not in error and "503" not in error and "429" not in error
    assert "10.0.0.7" not in error  # the server's own words stay in the operator's log


def test_a_down_endpoint_fails_the_answer_with_a_sentence_and_asking_again_works(settings, chat_server, writer,
                                                                                   inline):
    settings.CHAT_GENERATION_ATTEMPTS = 2
    task = chat_task(one_target(settings, down_endpoint(settings, name="solo-endpoint", timeout_s=2)))
    client = client_of(writer)
    convo = start(client, task)
    response = say(client, convo, "Is anyone there?")
    assert response.status_code == 202
    answer = client.get(response.json()["answers"][0]["links"]["self"]).json()
    assert answer["state"] == "failed" and answer["text"] == ""
    assert answer["error"] == ("Model A could not answer: the language model endpoint 'solo-endpoint' does not "
                               "answer. Your message is saved; ask again in a moment.")
    assert_for_people(answer["error"])
    assert answer["attempts"] == 2 and answer["usage"]["tries"] == 2
    assert Message.objects.filter(role="user", text="Is anyone there?").exists()
    assert get(client, convo)["can_send"] is True  # the writer may go on, or ask again

    # the operator's endpoint comes back (same name, now at a live server): asking again answers
    use_endpoint(settings, url_of(chat_server), name="solo-endpoint", model="back-model")
    again = client.post(answer["links"]["retry"], format="json")
    assert again.status_code == 202
    ready = again.json()
    assert ready["state"] == "ready" and ready["text"] == "back-model heard: Is anyone there?", ready
    assert ready["error"] == "" and ready["usage"]["retried"] == 1
    assert client.post(answer["links"]["retry"], format="json").status_code == 409  # ready: nothing to ask again


def test_a_slow_endpoint_past_its_timeout_fails_then_answers_when_it_is_quick(settings, chat_server, writer, inline):
    settings.CHAT_GENERATION_ATTEMPTS = 1
    chat_server.behaviour, chat_server.delay = "slow", 1.5
    task = chat_task(targets_on(settings, chat_server, names=("slow",), timeout_s=0.5))
    client = client_of(writer)
    convo = start(client, task)
    answer = say(client, convo, "Quick question").json()["answers"][0]
    answer = client.get(answer["links"]["self"]).json()
    assert answer["state"] == "failed"
    assert "did not answer within 0.5 s" in answer["error"] and answer["error"].startswith("Model A could not answer")
    assert_for_people(answer["error"])
    assert len(chat_server.seen) == 3  # one call: the provider's own three tries

    chat_server.behaviour = "ok"
    ready = client.post(answer["links"]["retry"], format="json").json()
    assert ready["state"] == "ready" and ready["text"] == "slow-model heard: Quick question"


def test_an_endpoint_over_its_quota_fails_clearly_and_nothing_is_lost(settings, chat_server, writer, inline):
    settings.CHAT_GENERATION_ATTEMPTS = 2
    chat_server.behaviour = "quota"
    task = chat_task(targets_on(settings, chat_server, names=("busy",)), scale="slider")
    client = client_of(writer)
    convo = start(client, task)
    answer = client.get(say(client, convo, "Hello?").json()["answers"][0]["links"]["self"]).json()
    assert answer["state"] == "failed" and "over its quota or rate limit" in answer["error"]
    assert_for_people(answer["error"])
    assert len(chat_server.seen) == 6  # two tries of the job, each the provider's three

    chat_server.behaviour = "ok"
    ready = client.post(answer["links"]["retry"], format="json").json()
    assert ready["state"] == "ready" and ready["text"] == "busy-model heard: Hello?"
    assert Message.objects.filter(role="user").count() == 1 and Message.objects.filter(role="assistant").count() == 1


def test_an_endpoint_that_recovers_between_tries_answers_without_the_writer_asking(settings, chat_server, writer,
                                                                                     inline):
    settings.CHAT_GENERATION_ATTEMPTS = 3
    chat_server.behaviour, chat_server.failures = "fail_first", 3  # the first call fails (its three requests)
    task = chat_task(targets_on(settings, chat_server, names=("flaky",)))
    client = client_of(writer)
    convo = start(client, task)
    answer = client.get(say(client, convo, "Try again").json()["answers"][0]["links"]["self"]).json()
    assert answer["state"] == "ready" and answer["text"] == "flaky-model heard: Try again"
    assert answer["attempts"] == 2 and answer["usage"]["tries"] == 2


def test_backoff_doubles_between_tries(settings):
    settings.CHAT_RETRY_BACKOFF_SECONDS = 1.5
    assert [jobs.backoff_seconds(n) for n in (1, 2, 3, 10)] == [1.5, 3.0, 6.0, 30.0]


def test_a_misconfigured_target_fails_at_once_saying_who_can_fix_it(settings, writer, inline):
    settings.CHAT_GENERATION_ATTEMPTS = 3
    task = chat_task(one_target(settings, {"provider": "openai", "endpoint": "nowhere"}))
    client = client_of(writer)
    convo = start(client, task)
    answer = client.get(say(client, convo, "Hello").json()["answers"][0]["links"]["self"]).json()
    assert answer["state"] == "failed" and "not set up correctly" in answer["error"]
    assert "no language model endpoint named 'nowhere'" in answer["error"] and "owners can fix it" in answer["error"]


def test_one_slot_failing_leaves_the_other_and_the_writer_chooses_the_one_that_answered(settings, chat_server, writer,
                                                                                          inline):
    settings.CHAT_GENERATION_ATTEMPTS = 1
    working = targets_on(settings, chat_server, names=("up",))
    down = one_target(settings, down_endpoint(settings, name="gone", timeout_s=1))[0] | {"name": "down"}
    task = chat_task([*working, down], scale="pairwise")
    client = client_of(writer)
    convo = start(client, task)
    answers = say(client, convo, "Pick me").json()["answers"]
    states = {a["slot"]: client.get(a["links"]["self"]).json()["state"] for a in answers}
    assert sorted(states.values()) == ["failed", "ready"]
    ready_slot = next(slot for slot, state in states.items() if state == "ready")
    failed_slot = 1 - ready_slot
    url = convo["links"]["preferences"]
    assert client.post(url, {"turn": 0, "winner": failed_slot}, format="json").status_code == 409
    assert client.post(url, {"turn": 0, "winner": None}, format="json").status_code == 409  # a tie needs both
    assert client.post(url, {"turn": 0, "winner": ready_slot}, format="json").status_code == 200
    assert say(client, convo, "Next").status_code == 202


def test_an_exchange_without_an_answer_is_left_out_of_the_history(settings, chat_server, writer, inline):
    settings.CHAT_GENERATION_ATTEMPTS = 1
    task = chat_task(targets_on(settings, chat_server, names=("solo",)))
    client = client_of(writer)
    convo = start(client, task)
    chat_server.behaviour = "error"
    say(client, convo, "lost words")
    chat_server.behaviour = "ok"
    say(client, convo, "found words")
    sent = chat_server.seen[-1]["body"]["messages"]
    assert [t["role"] for t in sent] == ["system", "user"] and sent[1]["content"] == "found words"


def test_a_job_that_crashes_still_ends_the_answer(settings, chat_server, writer):
    """Anything unexpected in the job (here: the conversation's recorded settings are unreadable) ends the answer
    failed with a sentence, never pending for ever."""
    task = chat_task(targets_on(settings, chat_server, names=("solo",)))
    client = client_of(writer)
    convo = start(client, task)
    answer = say(client, convo, "hello").json()["answers"][0]
    from chat.models import Conversation

    Conversation.objects.filter(pk=convo["id"]).update(target_settings={"solo": {"temperature": "hot"}})
    assert jobs.run(answer["id"]) == "failed"
    stored = Message.objects.get(pk=answer["id"])
    assert stored.state == "failed" and stored.error == "Model A failed this time. Your message is saved; ask again."


def test_what_a_model_writes_is_kept_as_plain_text():
    assert jobs.usable("**Canberra** is the <b>capital</b>.\u200b") == "Canberra is the capital ."
    assert jobs.usable("   ") == "" and jobs.usable("<script>alert(1)</script>") == ""
    assert len(jobs.usable("word " * 5000)) <= jobs.MAX_ANSWER_CHARS + 1


@pytest.mark.integration
@pytest.mark.slow
def test_a_conversation_with_the_packaged_local_model(writer, inline, settings):
    """The real local model (SmolLM2-135M via llama.cpp, in process) answers two turns; the second is sent the
    first exchange. Its answer is stored as plain text with its tokens and the model's name."""
    task = chat_task([{"name": "local", "provider": {"provider": "local"}, "system_prompt": "Answer in one sentence.",
                       "temperature": 0.0, "max_tokens": 24, "seed": 1}])
    client = client_of(writer)
    convo = start(client, task)
    first = client.get(say(client, convo, "What is the capital of France?").json()["answers"][0]["links"]["self"])
    first = first.json()
    assert first["state"] == "ready", first["error"]
    assert first["text"] and first["usage"]["completion_tokens"] > 0
    second = client.get(say(client, convo, "And of Italy?").json()["answers"][0]["links"]["self"]).json()
    assert second["state"] == "ready" and second["text"]
    stored = Message.objects.get(pk=second["id"])
    assert stored.model.startswith("SmolLM2-135M-Instruct") and stored.usage["prompt_tokens"] > 20
