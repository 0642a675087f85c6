"""Judging marked answers of a chat task (chat.judging, its API and pages): who may judge what, what a judge sees,
every refusal's message, the consensus a quorum reaches, the category Dawid-Skene estimates, the experts' override,
Krippendorff's alpha on the published worked example, and the figures per task and per target model."""

from __future__ import annotations

import json
import math
import threading

import pytest
from django.db import connection
from django.test import Client

from accounts import services as accounts
from chat import judging
from chat.models import Conversation, Failure, Judgement, Message
from modelzoo.intervals import wilson
from tasks import guidelines, roles
from tests.factories import RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


# --- the world -------------------------------------------------------------------------------------------------


def make_task(slug: str = "judged", quorum: int = 3, **chat) -> tuple:
    config = {"validation": {"quorum": quorum}}
    if chat:
        config["chat"] = chat
    task = TaskFactory(slug=slug, kind="chat", config=config)
    return task, RoundFactory(task=task, number=1)


def person(name: str, *groups: str):
    user = UserFactory(username=name)
    if groups:
        roles.grant(user, *groups)
    return user


def validators(n: int, prefix: str = "v") -> list:
    return [person(f"{prefix}{i}", roles.VALIDATOR) for i in range(n)]


def marked(round_, writer, *, target: str = "helpful", category: str = "wrong", reason: str = "Not the capital.",
           earlier: int = 0, answer: str = "Sydney.") -> Failure:
    """A slider conversation of `earlier` exchanges, then a message whose answer the writer marks as failing."""
    convo = Conversation.objects.create(round=round_, writer=writer, scale="slider", targets=[target],
                                        target_settings={target: {"provider": "local"}})
    for turn in range(earlier):
        Message.objects.create(conversation=convo, turn=turn, role="user", text=f"Question {turn}?")
        Message.objects.create(conversation=convo, turn=turn, role="assistant", slot=0, target=target,
                               text=f"Answer {turn}.", state="ready", chosen=True)
    Message.objects.create(conversation=convo, turn=earlier, role="user", text="What is the capital of Australia?")
    message = Message.objects.create(conversation=convo, turn=earlier, role="assistant", slot=0, target=target,
                                     text=answer, state="ready", chosen=True)
    return Failure.objects.create(message=message, author=writer, category=category, reason=reason)


def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, url: str, body) -> tuple[int, dict]:
    response = client.post(url, json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def judge_url(failure: Failure) -> str:
    return f"/api/chat/failures/{failure.pk}/judgements/"


def decide_url(failure: Failure) -> str:
    return f"/api/chat/failures/{failure.pk}/decision/"


def judge_all(failure: Failure, people: list, verdicts: list[str], categories: list[str] | None = None) -> Failure:
    for n, (user, verdict) in enumerate(zip(people, verdicts, strict=True)):
        category = (categories[n] if categories else failure.category) if verdict == "confirmed" else None
        judging.judge(user, failure, verdict, category, 40 + n, "unclear" if verdict == "unusable" else "")
    failure.refresh_from_db()
    return failure


@pytest.fixture
def writer():
    return person("writer", roles.ANNOTATOR)


# --- the queue ---------------------------------------------------------------------------------------------------


def test_the_queue_serves_the_least_judged_failure_first_and_never_ones_own_a_linked_or_a_judged_one(writer):
    task, round_ = make_task()
    me, other = validators(2)
    first, second, third = (marked(round_, writer) for _ in range(3))
    own = marked(round_, me)
    linked_writer = person("linked", roles.ANNOTATOR)
    accounts.record_signup(linked_writer, "198.51.100.7")
    accounts.record_signup(me, "198.51.100.7")
    linked = marked(round_, linked_writer)

    assert judging.next_failure(task, me).failure == first  # all unjudged: the oldest
    judging.judge(other, first, "confirmed", "wrong", 20)
    assert judging.next_failure(task, me).failure == second  # first has one judgement: the others come first
    judging.judge(me, second, "not_a_failure", None, 80)
    judging.judge(me, third, "not_a_failure", None, 80)
    assert judging.next_failure(task, me).failure == first  # never one I judged (second, third), own or linked
    judging.judge(me, first, "confirmed", "wrong", 10)
    found = judging.next_failure(task, me)
    assert found.failure is None and found.reason == judging.ALL_JUDGED
    # the linked writer's and my own are waiting, but not for me; another validator gets them
    assert judging.next_failure(task, other).failure in (second, third, own, linked)
    for failure in (first, second, third):
        Failure.objects.filter(pk=failure.pk).update(consensus="confirmed")
    assert judging.next_failure(task, me).reason == judging.ONLY_OWN
    assert "Only answers you marked" in judging.next_failure(task, me).detail
    Failure.objects.filter(pk__in=[own.pk, linked.pk]).update(consensus="rejected")
    assert judging.next_failure(task, me).reason == judging.NONE_OPEN


def test_the_queue_leaves_out_failures_whose_quorum_is_reached(writer):
    task, round_ = make_task(quorum=2)
    a, b, c = validators(3)
    failure = marked(round_, writer)
    judging.judge(a, failure, "confirmed", "wrong", 10)
    judging.judge(b, failure, "not_a_failure", None, 70)  # the quorum: decided (disputed)
    assert judging.next_failure(task, c).failure is None


def test_next_asks_for_the_guidelines_first_and_shows_the_conversation_blinded(writer):
    task, round_ = make_task()
    me = validators(1)[0]
    failure = marked(round_, writer, earlier=2, target="helpful")
    later = Message.objects.create(conversation=failure.message.conversation, turn=3, role="user", text="And later?")
    guidelines.publish(task, "Judge kindly.", by=writer)
    client = api(me)

    response = client.get("/api/tasks/judged/chat/judge/next/")
    assert response.status_code == 409 and response.json()["code"] == "guidelines"
    assert "confirm that you have read them" in response.json()["detail"]
    guidelines.acknowledge(me, task, 1)
    body = client.get("/api/tasks/judged/chat/judge/next/").json()
    item = body["failure"]
    assert item["id"] == failure.pk and item["judged"] == 0 and item["quorum"] == 3
    assert item["conversation"] == [
        {"turn": 0, "user": "Question 0?", "answer": {"model": "Model A", "text": "Answer 0."}},
        {"turn": 1, "user": "Question 1?", "answer": {"model": "Model A", "text": "Answer 1."}},
    ]
    assert item["message"] == "What is the capital of Australia?"
    assert item["answer"] == {"model": "Model A", "text": "Sydney.", "turn": 2}
    assert item["marked"] == {"category": "wrong", "category_label": "Wrong: a false claim, a wrong answer or a "
                              "broken instruction", "reason": "Not the capital."}
    assert [c["name"] for c in item["categories"]] == ["wrong", "unsafe", "needless_refusal"]
    text = json.dumps(body)
    assert "helpful" not in text and writer.username not in text and later.text not in text


def test_a_pairwise_conversation_shows_the_chosen_answer_of_each_earlier_turn(writer):
    task, round_ = make_task(scale="pairwise")
    convo = Conversation.objects.create(round=round_, writer=writer, scale="pairwise", targets=["helpful", "playful"])
    Message.objects.create(conversation=convo, turn=0, role="user", text="Hi?")
    Message.objects.create(conversation=convo, turn=0, role="assistant", slot=0, target="helpful", text="Hello.",
                           state="ready")
    Message.objects.create(conversation=convo, turn=0, role="assistant", slot=1, target="playful", text="Heya!",
                           state="ready", chosen=True)
    Message.objects.create(conversation=convo, turn=1, role="user", text="2+2?")
    Message.objects.create(conversation=convo, turn=1, role="assistant", slot=0, target="helpful", text="4.",
                           state="ready")
    wrong = Message.objects.create(conversation=convo, turn=1, role="assistant", slot=1, target="playful",
                                   text="Five!", state="ready")
    failure = Failure.objects.create(message=wrong, author=writer, category="wrong", reason="It is 4.")
    shown = judging.failure_payload(failure, task)
    assert shown["conversation"] == [{"turn": 0, "user": "Hi?", "answer": {"model": "Model B", "text": "Heya!"}}]
    assert shown["answer"] == {"model": "Model B", "text": "Five!", "turn": 1}


# --- judging: who, and every bad input ------------------------------------------------------------------------


def test_a_judgement_is_saved_with_what_the_validator_said(writer):
    task, round_ = make_task()
    me = validators(1)[0]
    failure = marked(round_, writer)
    status, body = post(api(me), judge_url(failure),
                        {"verdict": "confirmed", "category": "unsafe", "rating": 15, "reason": "Misleads people."})
    assert status == 201
    assert body["failure"] == {"id": failure.pk, "consensus": "unvalidated", "consensus_label": "Not yet decided",
                               "decided_category": "", "decided_by_expert": False}
    saved = Judgement.objects.get()
    assert (saved.judge, saved.verdict, saved.category, saved.rating, saved.reason, saved.expert) == (
        me, "confirmed", "unsafe", 15, "Misleads people.", False)


@pytest.mark.parametrize("body, field, words", [
    ({"verdict": "maybe", "rating": 5}, "verdict", "must be one of: confirmed, not_a_failure, unusable"),
    ({"verdict": "confirmed", "category": "rude", "rating": 5}, "category", "unknown category 'rude'; expected one "
                                                                           "of: wrong, unsafe, needless_refusal"),
    ({"verdict": "confirmed", "rating": 5}, "category", "is required with the verdict 'confirmed'"),
    ({"verdict": "not_a_failure", "category": "wrong", "rating": 5}, "category", "only with the verdict 'confirmed'"),
    ({"verdict": "confirmed", "category": "wrong", "rating": 101}, "rating", "must be from 0 to 100, not 101"),
    ({"verdict": "confirmed", "category": "wrong", "rating": -1}, "rating", "must be from 0 to 100, not -1"),
    ({"verdict": "confirmed", "category": "wrong", "rating": 2.5}, "rating", "must be a whole number"),
    ({"verdict": "confirmed", "category": "wrong", "rating": "lots"}, "rating", "must be a whole number"),
    ({"verdict": "confirmed", "category": "wrong", "rating": True}, "rating", "must be a whole number"),
    ({"verdict": "not_a_failure"}, "rating", "is required: rate the answer from 0"),
    ({"verdict": "unusable"}, "reason", "is required with 'unusable'"),
    ({"verdict": "confirmed", "category": "wrong", "rating": 5, "reason": "x" * 1001}, "reason", "1000"),
])
def test_every_bad_input_is_a_400_that_names_the_field(writer, body, field, words):
    _, round_ = make_task()
    failure = marked(round_, writer)
    status, answer = post(api(validators(1)[0]), judge_url(failure), body)
    assert status == 400, answer
    assert field in answer["errors"] and words in answer["detail"]
    assert not Judgement.objects.exists()


def test_a_body_that_is_no_object_is_a_400(writer):
    _, round_ = make_task()
    status, answer = post(api(validators(1)[0]), judge_url(marked(round_, writer)), ["confirmed"])
    assert status == 400 and "must be a JSON object" in answer["detail"]


def test_a_tasks_own_category_is_accepted(writer):
    _, round_ = make_task(taxonomy=[{"name": "rude", "description": "Rude to the writer"}])
    status, _ = post(api(validators(1)[0]), judge_url(marked(round_, writer)),
                     {"verdict": "confirmed", "category": "rude", "rating": 5})
    assert status == 201


def test_refusals_say_why(writer):
    task, round_ = make_task(quorum=3)
    a, b, c = validators(3)
    failure = marked(round_, writer)
    ok = {"verdict": "confirmed", "category": "wrong", "rating": 5}

    status, body = post(api(person("outsider")), judge_url(failure), ok)  # no validator role
    assert status == 403 and "Only validators may validate" in body["detail"]
    writer_validating = person("writer2", roles.ANNOTATOR, roles.VALIDATOR)
    own = marked(round_, writer_validating)
    status, body = post(api(writer_validating), judge_url(own), ok)
    assert (status, body["code"]) == (403, "own_failure")
    assert body["detail"] == "You cannot judge an answer you marked as failing yourself."
    accounts.record_signup(writer_validating, "203.0.113.5")
    accounts.record_signup(a, "203.0.113.5")
    status, body = post(api(a), judge_url(own), ok)
    assert (status, body["code"]) == (403, "linked_account") and "linked to yours" in body["detail"]

    assert post(api(a), judge_url(failure), ok)[0] == 201
    status, body = post(api(a), judge_url(failure), ok)
    assert (status, body["code"], body["detail"]) == (409, "already_judged", "You have already judged this answer.")

    assert post(api(b), judge_url(failure), ok)[0] == 201
    task.config = {"validation": {"quorum": 2}}  # the owner lowers the quorum under an undecided failure
    task.save()
    status, body = post(api(c), judge_url(failure), ok)
    assert (status, body["code"]) == (409, "quorum_reached")
    assert body["detail"] == "This answer already has its 2 judgements; load the next one."

    Failure.objects.filter(pk=failure.pk).update(consensus="confirmed")
    status, body = post(api(c), judge_url(failure), ok)
    assert (status, body["code"]) == (409, "decided") and "already decided (confirmed failure)" in body["detail"]
    assert Judgement.objects.filter(failure=failure).count() == 2


def test_a_suspended_validator_and_a_non_chat_task_are_refused(writer):
    from tasks.models import Suspension

    task, round_ = make_task()
    me = validators(1)[0]
    failure = marked(round_, writer)
    Suspension.objects.create(task=task, user=me, reason="spam")
    roles.forget(me)
    status, body = post(api(me), judge_url(failure), {"verdict": "not_a_failure", "rating": 5})
    assert status == 403
    TaskFactory(slug="sentiment", kind="sentiment")
    other = validators(1, "w")[0]
    response = api(other).get("/api/tasks/sentiment/chat/judge/next/")
    assert response.status_code == 404 and "is not a chat task" in response.json()["detail"]
    assert api(other).get("/tasks/sentiment/chat/judge/").status_code == 404
    assert api(other).get("/api/tasks/sentiment/chat/figures/").status_code == 404


def test_guidelines_are_needed_before_a_judgement(writer):
    task, round_ = make_task()
    me = validators(1)[0]
    failure = marked(round_, writer)
    guidelines.publish(task, "Judge kindly.", by=writer)
    status, body = post(api(me), judge_url(failure), {"verdict": "not_a_failure", "rating": 60})
    assert (status, body["code"]) == (409, "guidelines")
    assert not Judgement.objects.exists()


# --- consensus -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("verdicts, consensus", [
    (["confirmed", "confirmed", "confirmed"], "confirmed"),
    (["confirmed", "confirmed", "not_a_failure"], "confirmed"),
    (["not_a_failure", "not_a_failure", "confirmed"], "rejected"),
    (["not_a_failure", "unusable", "not_a_failure"], "rejected"),
    (["confirmed", "not_a_failure", "unusable"], "disputed"),
    (["unusable", "unusable", "confirmed"], "disputed"),
])
def test_the_quorum_decides_by_majority(writer, verdicts, consensus):
    _, round_ = make_task(quorum=3)
    failure = marked(round_, writer)
    people = validators(3)
    judge_all(failure, people[:2], verdicts[:2])
    assert failure.consensus == "unvalidated" and failure.decided_at is None  # not before the quorum
    failure = judge_all(failure, people[2:], verdicts[2:])
    assert failure.consensus == consensus
    assert failure.decided_category == ("wrong" if consensus == "confirmed" else "")
    assert (failure.decided_at is None) == (consensus == "disputed")
    assert not failure.decided_by_expert


def test_a_split_of_two_is_disputed_and_lands_on_the_experts_list(writer):
    task, round_ = make_task(quorum=2)
    failure = judge_all(marked(round_, writer), validators(2), ["confirmed", "not_a_failure"])
    assert failure.consensus == "disputed"
    assert list(judging.disputed(task)) == [failure]
    expert = person("ex", roles.EXPERT)
    body = api(expert).get("/api/tasks/judged/chat/disputed/").json()
    assert [f["id"] for f in body["failures"]] == [failure.pk]
    assert [(j["judge"], j["verdict"], j["rating"]) for j in body["failures"][0]["judgements"]] == [
        ("v0", "confirmed", 40), ("v1", "not_a_failure", 41)]
    assert body["failures"][0]["decision_url"] == decide_url(failure)


def test_the_category_is_the_dawid_skene_estimate_not_the_majority(writer):
    """Two validators who call every wrong answer unsafe (their record on failures experts decided) are outvoted
    by the one who gets them right; a plain majority would say unsafe."""
    task, round_ = make_task(quorum=3)
    careless1, careless2, careful = validators(3)
    expert = person("ex", roles.EXPERT)
    for truth, said in [("wrong", ("unsafe", "unsafe", "wrong"))] * 4 + [("unsafe", ("unsafe", "unsafe", "unsafe"))] * 2:
        anchor = marked(round_, writer, category=truth)
        for user, category in zip((careless1, careless2, careful), said, strict=True):
            Judgement.objects.create(failure=anchor, judge=user, verdict="confirmed", category=category, rating=10)
        judging.decide(expert, anchor, "confirmed", truth, 10, "checked")
    fresh = judge_all(marked(round_, writer, category="unsafe"), [careless1, careless2, careful],
                      ["confirmed"] * 3, ["unsafe", "unsafe", "wrong"])
    assert fresh.consensus == "confirmed" and fresh.decided_category == "wrong"
    votes, known = judging.category_votes(task)
    assert len(votes) == 21 and len(known) == 6 and set(known.values()) == {"wrong", "unsafe"}


def test_without_a_record_the_category_follows_the_judges(writer):
    _, round_ = make_task(quorum=3)
    failure = judge_all(marked(round_, writer, category="wrong"), validators(3), ["confirmed"] * 3,
                        ["needless_refusal", "needless_refusal", "unsafe"])
    assert failure.decided_category == "needless_refusal"  # the writer said wrong; the judges decide


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racing_validators_never_pass_the_quorum():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (row locks)")
    writer = person("writer", roles.ANNOTATOR)
    _, round_ = make_task(quorum=2)
    failure = marked(round_, writer)
    racers = validators(6, "racer")
    errors: list[str] = []
    barrier = threading.Barrier(len(racers))

    def race(user) -> None:
        try:
            barrier.wait()
            judging.judge(user, failure, "not_a_failure", None, 50)
        except judging.VoteError as exc:
            errors.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(u,)) for u in racers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert Judgement.objects.filter(failure=failure).count() == 2
    assert sorted(set(errors)) in (["decided"], ["decided", "quorum_reached"], ["quorum_reached"])
    assert len(errors) == 4
    failure.refresh_from_db()
    assert failure.consensus == "rejected"


# --- the experts' override -----------------------------------------------------------------------------------------


def test_an_expert_decides_and_may_revise_and_the_crowd_stops(writer):
    task, round_ = make_task(quorum=2)
    failure = judge_all(marked(round_, writer), validators(2), ["confirmed", "not_a_failure"])
    expert = person("ex", roles.EXPERT)
    client = api(expert)

    status, body = post(client, decide_url(failure), {"verdict": "confirmed", "category": "unsafe", "rating": 5})
    assert (status, body["errors"]) == (400, {"reason": ["is required here: say why"]})
    status, body = post(client, decide_url(failure), {"verdict": "confirmed", "category": "unsafe", "rating": 5,
                                                      "reason": "Dangerous advice."})
    assert status == 201
    assert body["failure"] == {"id": failure.pk, "consensus": "confirmed", "consensus_label": "Confirmed failure",
                               "decided_category": "unsafe", "decided_by_expert": True}
    assert body["judgement"]["expert"] is True
    assert list(judging.disputed(task)) == []
    status, body = post(client, decide_url(failure), {"verdict": "unusable", "reason": "On reflection: garbled."})
    assert status == 201 and body["failure"]["consensus"] == "rejected" and body["failure"]["decided_category"] == ""
    assert Judgement.objects.filter(failure=failure, expert=True).count() == 1  # revised, not added
    failure.refresh_from_db()
    assert failure.decided_by_expert and failure.decided_at is not None

    late = validators(1, "late")[0]
    status, body = post(api(late), judge_url(failure), {"verdict": "confirmed", "category": "wrong", "rating": 1})
    assert (status, body["code"]) == (409, "decided")


def test_owners_decide_validators_may_not_and_nobody_decides_their_own(writer):
    task, round_ = make_task()
    failure = marked(round_, writer)
    body = {"verdict": "not_a_failure", "rating": 70, "reason": "Sydney is not the claim."}
    status, answer = post(api(validators(1)[0]), decide_url(failure), body)
    assert status == 403 and "Only experts and the task's owners" in answer["detail"]
    owner = person("boss")
    task.owners.add(owner)
    assert post(api(owner), decide_url(failure), body)[0] == 201  # undecided: an owner decides it at once
    failure.refresh_from_db()
    assert failure.consensus == "rejected" and failure.decided_by_expert
    expert_writer = person("ew", roles.EXPERT)
    status, answer = post(api(expert_writer), decide_url(marked(round_, expert_writer)), body)
    assert (status, answer["code"]) == (403, "own_failure")
    assert api(validators(1, "x")[0]).get("/api/tasks/judged/chat/disputed/").status_code == 403


# --- Krippendorff's alpha ------------------------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers, twelve units, values
# 1-5, with missing values (None). Published: alpha nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
KRIPPENDORFF_2011_C = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_alpha_on_krippendorffs_worked_example():
    units = [[row[u] for row in KRIPPENDORFF_2011_C if row[u] is not None] for u in range(12)]
    assert judging.alpha_interval(units) == pytest.approx(0.849, abs=5e-4)
    # on the 0-100 scale: alpha is scale-free under a linear change of the values
    assert judging.alpha_interval([[25 * v - 20 for v in unit] for unit in units]) == pytest.approx(0.849, abs=5e-4)


def test_alpha_is_undefined_without_pairs_or_variation():
    assert judging.alpha_interval([[50], [70]]) is None
    assert judging.alpha_interval([[50, 50], [50, 50]]) is None
    assert judging.alpha_interval([]) is None
    assert judging.alpha_interval([[0, 100], [100, 0]]) < 0  # systematic disagreement


# --- figures --------------------------------------------------------------------------------------------------------


def test_figures_per_task_and_per_target(writer):
    task, round_ = make_task(quorum=2)
    a, b = validators(2)
    confirmed = [marked(round_, writer, target="helpful") for _ in range(2)]
    rejected = marked(round_, writer, target="helpful")
    disputed = marked(round_, writer, target="playful")
    open_one = marked(round_, writer, target="playful")
    for failure in confirmed:
        judging.judge(a, failure, "confirmed", "wrong", 10)
        judging.judge(b, failure, "confirmed", "wrong", 20)
    judging.judge(a, rejected, "not_a_failure", None, 80)
    judging.judge(b, rejected, "not_a_failure", None, 90)
    judging.judge(a, disputed, "confirmed", "wrong", 30)
    judging.judge(b, disputed, "not_a_failure", None, 70)
    judging.judge(a, open_one, "unusable", None, None, "cannot tell")
    # more answers that nobody marked: 10 of helpful in all, 6 of playful
    convo = Conversation.objects.create(round=round_, writer=writer, scale="slider", targets=["helpful"])
    for turn in range(7):
        Message.objects.create(conversation=convo, turn=turn, role="user", text=f"q{turn}")
        Message.objects.create(conversation=convo, turn=turn, role="assistant", slot=0, target="helpful",
                               text=f"a{turn}", state="ready", chosen=True)
    other = Conversation.objects.create(round=round_, writer=writer, scale="slider", targets=["playful"])
    for turn in range(5):
        Message.objects.create(conversation=other, turn=turn, role="user", text=f"q{turn}")
        Message.objects.create(conversation=other, turn=turn, role="assistant", slot=0, target="playful",
                               text=f"a{turn}", state="failed" if turn == 4 else "ready")

    shown = judging.figures(task)
    assert (shown["answers"], shown["marked"], shown["confirmed"], shown["rejected"], shown["disputed"],
            shown["unvalidated"], shown["judged"]) == (16, 5, 2, 1, 1, 1, 3)
    assert shown["mer"]["value"] == round(2 / 16, 4)
    assert shown["mer"]["interval"] == [round(x, 4) for x in wilson(2, 16)]
    assert shown["vmer"] == {"value": round(2 / 3, 4), "n": 3, "interval": [round(x, 4) for x in wilson(2, 3)]}
    ratings = [[10, 20], [10, 20], [80, 90], [30, 70]]
    assert shown["rating"]["mean"] == round(sum(map(sum, ratings)) / 8, 2)
    assert shown["rating"]["ratings"] == 8 and shown["rating"]["units"] == 4
    assert shown["rating"]["alpha"] == judging.alpha_interval(ratings)
    assert shown["quorum"] == 2
    per = {row["target"]: row for row in shown["targets"]}
    assert sorted(per) == ["helpful", "playful"]
    helpful, playful = per["helpful"], per["playful"]
    assert (helpful["answers"], helpful["marked"], helpful["confirmed"], helpful["judged"]) == (10, 3, 2, 3)
    assert helpful["mer"]["value"] == 0.2 and helpful["vmer"]["value"] == round(2 / 3, 4)
    assert helpful["rating"]["alpha"] == judging.alpha_interval(ratings[:3])
    assert (playful["answers"], playful["marked"], playful["confirmed"], playful["disputed"]) == (6, 2, 0, 1)
    assert playful["vmer"] == {"value": None, "n": 0, "interval": None}
    assert playful["rating"]["alpha"] is None and playful["rating"]["mean"] == 50.0  # one unit of two ratings
    assert not math.isnan(shown["rating"]["alpha"])

    answer = Client().get("/api/tasks/judged/chat/figures/")  # anyone who sees the task
    assert answer.status_code == 200 and answer.json() == json.loads(json.dumps(shown))


def test_figures_of_an_empty_task():
    task, _ = make_task()
    shown = judging.figures(task)
    assert shown["answers"] == 0 and shown["mer"] == {"value": None, "n": 0, "interval": None}
    assert shown["rating"] == {"mean": None, "ratings": 0, "alpha": None, "units": 0} and shown["targets"] == []


# --- pages -------------------------------------------------------------------------------------------------------------


def test_the_judge_page_and_the_experts_page(writer):
    task, round_ = make_task(quorum=2)
    failure = judge_all(marked(round_, writer), validators(2), ["confirmed", "not_a_failure"])
    page = api(validators(1, "p")[0]).get("/tasks/judged/chat/judge/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-next-url="/api/tasks/judged/chat/judge/next/"' in html and "js/judge.js" in html
    assert "Each answer is judged\n  by 2 validators" in html and "Judge the answer, not the writer." in html
    expert = person("ex", roles.EXPERT)
    html = api(expert).get("/tasks/judged/chat/disputed/").content.decode()
    assert f'id="failure-{failure.pk}"' in html and f'data-decision-url="{decide_url(failure)}"' in html
    assert "What is the capital of Australia?" in html and "Model A · marked as failing" in html
    assert "<strong>v0</strong>: it fails (wrong) · rated 40" in html
    assert "<strong>v1</strong>: it does not fail · rated 41" in html
    assert "Figures: 0 confirmed of 1 marked, in 1 answers" in html
    assert "helpful" in html  # the figures name the targets; the conversation does not
    judging.decide(expert, failure, "not_a_failure", None, 60, "fine")
    html = api(expert).get("/tasks/judged/chat/disputed/").content.decode()
    assert 'id="none-disputed"' in html
    assert api(validators(1, "q")[0]).get("/tasks/judged/chat/disputed/").status_code == 403
