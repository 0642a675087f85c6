"""My examples (page and API): each example's verdict, validation outcome, corrected label and flag reasons;
a writer appeals a rejection to an expert once, and the appeal lands in the expert queue."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Example
from tests.factories import ExampleFactory, RoundFactory, TaskFactory, UserFactory, ValidationFactory
from tests.site.screens import WIDTHS, shot, sized, too_wide

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine(writer):
    task = TaskFactory(slug="mine-task", kind="sentiment")
    rnd = RoundFactory(task=task)
    rejected = ExampleFactory(round=rnd, author=writer, consensus="rejected", validated_label="negative",
                              input={"text": "rejected one"})
    ValidationFactory(example=rejected, verdict="incorrect", label="negative", reason="sarcasm: it is negative")
    flagged = ExampleFactory(round=rnd, author=writer, flagged=True, flag_reason="typo", input={"text": "flagged one"})
    ValidationFactory(example=flagged, verdict="flagged", reason="not English")
    pending = ExampleFactory(round=rnd, author=writer, scoring_state="pending", fooled=None, input={"text": "pending"})
    ExampleFactory(round=rnd, input={"text": "someone else's"})
    return {"task": task, "rejected": rejected, "flagged": flagged, "pending": pending}


def test_the_api_lists_only_my_examples_with_their_outcome(writer_api, mine):
    data = writer_api.get("/api/me/examples/").json()
    rows = {r["id"]: r for r in data["results"]}
    assert set(rows) == {mine["rejected"].pk, mine["flagged"].pk, mine["pending"].pk}
    rejected = rows[mine["rejected"].pk]
    assert rejected["consensus"] == "rejected" and rejected["corrected_label"] == "negative"
    assert rejected["flag_reasons"]["validators"] == ["sarcasm: it is negative"]
    assert rejected["fooled"] is True and rejected["model_prediction"] == "negative"
    assert rejected["appeal"]["allowed"] is True and rejected["links"]["appeal"].endswith("/appeal/")
    flagged = rows[mine["flagged"].pk]
    assert flagged["flag_reasons"] == {"yours": "typo", "validators": ["not English"]}
    assert flagged["appeal"]["allowed"] is False  # not decided: nothing to appeal
    assert rows[mine["pending"].pk]["scoring_state"] == "pending"


def test_the_api_filters_by_task(writer_api, mine):
    other = TaskFactory(slug="other-mine")
    assert writer_api.get(f"/api/me/examples/?task={other.slug}").json()["results"] == []
    assert writer_api.get(f"/api/me/examples/?task={mine['task'].slug}").json()["count"] == 3


def test_the_page_shows_the_outcome_and_the_appeal_form(writer, mine):
    client = Client()
    client.force_login(writer)
    html = client.get("/me/examples/").content.decode()
    assert "rejected one" in html and "someone else" not in html
    assert "corrected label: <strong>negative</strong>" in html and "sarcasm: it is negative" in html
    assert html.count('class="appeal-form"') == 1


def test_a_writer_appeals_a_rejection_once_and_it_reaches_the_experts(writer, writer_api, mine):
    url = f"/api/examples/{mine['rejected'].pk}/appeal/"
    assert writer_api.post(url, {"reason": "it is sarcastic, but positive"}, format="json").status_code == 200
    again = writer_api.post(url, {"reason": "please"}, format="json")
    assert again.status_code == 409 and "already appealed" in again.json()["detail"]

    expert = UserFactory(username="the-expert")
    mine["task"].owners.add(expert)
    client = Client()
    client.force_login(expert)
    queue = client.get(f"/tasks/{mine['task'].slug}/expert/?show=appeals")
    assert [e.pk for e in queue.context["examples"]] == [mine["rejected"].pk]
    assert b"it is sarcastic, but positive" in queue.content
    client.post(f"/tasks/{mine['task'].slug}/expert/{mine['rejected'].pk}/resolve/", {"verdict": "correct"})
    example = Example.objects.get(pk=mine["rejected"].pk)
    assert example.consensus == "verified" and example.appeal_resolved_at is not None
    assert client.get(f"/tasks/{mine['task'].slug}/expert/?show=appeals").context["examples"] == []
    row = writer_api.get("/api/me/examples/").json()["results"]
    assert next(r for r in row if r["id"] == example.pk)["appeal"]["resolved_at"] is not None


def test_an_undecided_example_cannot_be_appealed(writer_api, mine):
    response = writer_api.post(f"/api/examples/{mine['pending'].pk}/appeal/", {"reason": "x"}, format="json")
    assert response.status_code == 409 and "only a rejected or flagged" in response.json()["detail"]


def test_the_appeal_form_on_the_page_works(writer, mine):
    client = Client()
    client.force_login(writer)
    page = client.post(f"/me/examples/{mine['rejected'].pk}/appeal/", {"reason": "look again", "next": "/me/examples/"},
                       follow=True)
    assert b"sent to an expert" in page.content and b"waiting for an expert" in page.content


# --- where each example stands in validation (issue 39, item 5) -------------------------------------------------

@pytest.fixture
def scoped(writer):
    """A task with the default validation scope (fooling examples only): one example of each fate."""
    task = TaskFactory(slug="scoped", kind="sentiment")
    rnd = RoundFactory(task=task)
    make = lambda text, **kw: ExampleFactory(round=rnd, author=writer, input={"text": text}, **kw)  # noqa: E731
    return {
        "task": task, "round": rnd,
        "plain": make("did not fool", fooled=False),
        "fooling": make("fooled, no votes yet"),
        "voted": make("fooled, one vote"),
        "verified": make("verified one", consensus="verified"),
        "retracted": make("retracted one", retracted=True),
        "pending": make("still scoring", scoring_state="pending", fooled=None),
    }


def states(writer_api, slug) -> dict[str, dict]:
    rows = writer_api.get(f"/api/me/examples/?task={slug}").json()["results"]
    return {r["input"]["text"]: r["validation"] for r in rows}


def test_examples_that_will_never_be_validated_say_so_instead_of_not_yet_decided(writer_api, scoped):
    from tasks import roles
    from validation import services as votes

    crowd = UserFactory(username="crowd-validator")
    roles.grant(crowd, roles.VALIDATOR)
    votes.submit_vote(crowd, scoped["voted"], "correct")
    got = states(writer_api, scoped["task"].slug)
    assert got["did not fool"]["state"] == "out_of_scope"
    assert got["did not fool"]["text"].startswith("Not sent to validation: it did not fool the models")
    assert got["fooled, no votes yet"] == {"state": "waiting", "text": "Waiting for validators: no votes yet.", "votes": 0}
    assert got["fooled, one vote"] == {"state": "waiting", "text": "Waiting for validators: 1 vote so far.", "votes": 1}
    assert got["verified one"]["state"] == "decided" and got["verified one"]["text"].startswith("Verified")
    assert got["retracted one"]["state"] == "retracted"
    assert got["still scoring"]["state"] == "scoring"
    assert not any(v["text"] == "Not yet decided" for v in got.values())


def test_the_writers_page_follows_the_queues_rule(writer, writer_api, scoped):
    """"Waiting" is exactly what the queue would offer a validator; a task that validates every example waits for
    the plain one too; a closed round of a task that stops validating at close says so."""
    from validation import queue

    task = scoped["task"]
    offered = set(queue.open_items(task, task.typed_config.validation).values_list("example_id", flat=True))
    got = states(writer_api, task.slug)
    waiting = {scoped[k].pk for k in scoped if k not in ("task", "round") and got[scoped[k].input["text"]]["state"] == "waiting"}
    assert waiting == offered == {scoped["fooling"].pk, scoped["voted"].pk}

    task.config = {**task.config, "validation": {"scope": "all"}}
    task.save()
    assert states(writer_api, task.slug)["did not fool"]["state"] == "waiting"

    task.config = {**task.config, "validation": {"scope": "fooling", "continue_after_close": False}}
    task.save()
    scoped["round"].status = "closed"
    scoped["round"].save()
    closed = states(writer_api, task.slug)["fooled, no votes yet"]
    assert closed["state"] == "round_closed" and "its round closed" in closed["text"]


def test_the_page_shows_the_context_and_the_fate_of_each_example(writer):
    from tests.factories import ContextFactory

    task = TaskFactory(slug="nli-mine", kind="nli")
    rnd = RoundFactory(task=task)
    context = ContextFactory(task=task, round=rnd, payload={"premise": "A woman is walking a small dog in the rain."})
    ExampleFactory(round=rnd, author=writer, context=context, input={"hypothesis": "Nobody is outside."},
                   target="contradiction", fooled=False)
    client = Client()
    client.force_login(writer)
    html = client.get("/me/examples/").content.decode()
    assert "A woman is walking a small dog in the rain." in html and "Nobody is outside." in html
    assert "Not sent to validation: it did not fool the models" in html and "Not yet decided" not in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_my_examples_work_on_a_phone_and_a_desktop(browser, writer, width):
    """Every column of a row is on the screen at 420 px (each row a card) as at 1400 px: the context, the model's
    verdict and where the example stands in validation."""
    from selenium.webdriver.common.by import By

    from tests.factories import ContextFactory

    nli = TaskFactory(slug="nli-demo", name="Natural language inference (demo)", kind="nli")
    rnd = RoundFactory(task=nli, number=1)
    premise = ContextFactory(task=nli, round=rnd, payload={
        "premise": "A woman in a red raincoat is walking a small dog along a wet pavement."})
    rows = [("The woman is dry and indoors.", "contradiction", False), ("Someone is outdoors with an animal.",
                                                                        "entailment", True),
            ("The dog belongs to her neighbour, who is away on holiday this week.", "neutral", False)]
    for text, label, fooled in rows:
        ExampleFactory(round=rnd, author=writer, context=premise, input={"hypothesis": text}, target=label,
                       fooled=fooled, ensemble_prediction={"label": "neutral" if fooled else label, "probs": {}})
    browser.login(writer)
    with sized(browser, width):
        browser.go("/me/examples/")
        table = browser.find_element(By.ID, "my-examples")
        assert too_wide(browser) is None
        first = table.find_element(By.CSS_SELECTOR, "tbody tr")
        for cell in ("Example", "Model", "Validation"):
            node = first.find_element(By.CSS_SELECTOR, f"td[data-label='{cell}']")
            left, right = browser.execute_script(
                "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right];", node)
            assert left >= 0 and right <= width + 0.5, f"{cell} is cut off at {width}px ({left:.0f}-{right:.0f})"
        assert "A woman in a red raincoat" in first.text
        assert "Not sent to validation: it did not fool the models" in first.text
        shot(browser, "annotator-my-examples", width)
