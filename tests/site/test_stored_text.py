"""Text stored before the text rule never breaks a page or an API answer, and the data check finds and fixes it.

Rows are written with the ORM, bypassing the rule, as an older version of the site could store them: a lone
surrogate (a JSON field keeps it as the escape `\\ud800`), a right-to-left override, a mark stack. Every page
and API call that shows them is opened as the writer, the owner, a validator and an expert: none answers 500.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from annotation.models import Example
from tasks.models import Context, LabeledItem
from tests.factories import ExampleFactory, LabeledItemFactory

# PostgreSQL's jsonb refuses a lone surrogate escape, so only SQLite could ever have stored one.
pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor == "postgresql", reason="jsonb never stores a lone surrogate")]

SURROGATE = "lone \ud800 surrogate"
RLO = "abc\u202eevil"
ZALGO = "z" + "\u0301" * 30


@pytest.fixture
def bad_example(open_round, personas, task):
    """A flagged example with a lone surrogate in its input and target, by the annotator (the expert queue's)."""
    return ExampleFactory(
        round=open_round, author=personas.annotator, input={"text": SURROGATE}, target="positive\udfff",
        consensus=Example.Consensus.FLAGGED, flagged=True, flag_reason=RLO, scoring_state=Example.Scoring.SCORED,
    )


@pytest.fixture
def pending_bad(open_round, personas):
    """One more, unvalidated, so a validator is offered it (a validation item carries the same text)."""
    return ExampleFactory(round=open_round, author=personas.annotator, input={"text": "item \udc00 here"},
                          consensus=Example.Consensus.UNVALIDATED)


def session(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_rows_really_hold_a_lone_surrogate(bad_example):
    stored = Example.objects.get(pk=bad_example.pk)
    assert stored.input == {"text": SURROGATE}
    with pytest.raises(UnicodeEncodeError):
        SURROGATE.encode("utf-8")


@pytest.mark.parametrize("persona", ["annotator", "owner", "expert", "validator", "admin"])
def test_no_page_or_api_answer_is_a_500(bad_example, pending_bad, personas, task, persona):
    client = session(personas.get(persona))
    paths = [
        "/me/examples/", "/api/me/examples/", f"/api/examples/{bad_example.pk}/",
        f"/tasks/{task.slug}/expert/", f"/tasks/{task.slug}/expert/?show=flags", f"/tasks/{task.slug}/validate/",
        f"/tasks/{task.slug}/", f"/tasks/{task.slug}/create/", f"/api/tasks/{task.slug}/inspiration/",
    ]
    for path in paths:
        response = client.get(path)
        assert response.status_code < 500, (persona, path, response.status_code)
        response.content.decode("utf-8")  # what was sent is valid UTF-8


def test_the_writer_sees_the_example_with_the_surrogate_escaped(bad_example, personas):
    client = session(personas.annotator)
    response = client.get(f"/api/examples/{bad_example.pk}/")
    assert response.status_code == 200
    assert b"\\ud800" in response.content  # JSON's escape: nothing lost
    assert json.loads(response.content)["input"]["text"] == SURROGATE
    page = client.get("/me/examples/")
    assert page.status_code == 200
    assert "lone \ufffd surrogate" in page.content.decode()  # a page shows the replacement character


def test_the_expert_queue_shows_the_flagged_example(bad_example, personas, task):
    response = session(personas.expert).get(f"/tasks/{task.slug}/expert/")
    assert response.status_code == 200
    assert bad_example.pk in {e.pk for e in response.context["examples"]}
    assert "lone \ufffd surrogate" in response.content.decode()


def test_a_validator_leases_the_item_and_reads_it(pending_bad, personas, task):
    client = session(personas.validator)
    response = client.post(f"/api/tasks/{task.slug}/validation/next/")
    assert response.status_code == 200, response.content
    item = json.loads(response.content)["item"]
    assert item is not None and item["input"]["text"] == "item \udc00 here"


# --- the data check -----------------------------------------------------------------------------------------


def run_check(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("check_text", *args, stdout=out, stderr=err)
    except CommandError as exc:  # --fail: found something (manage.py exits 1)
        err.write(f"error: {exc}\n")
    return out.getvalue(), err.getvalue()


def test_the_data_check_lists_every_offending_row(bad_example, pending_bad, task):
    item = LabeledItemFactory(task=task, input={"text": ZALGO})
    context = Context.objects.create(task=task, payload={"prompt": "\u200b\u200b"}, key="k-blank")
    out, _ = run_check()
    assert f"annotation.Example {bad_example.pk} input.text: contains an unpaired surrogate (U+D800) at position 5" in out
    assert f"annotation.Example {bad_example.pk} target: contains an unpaired surrogate (U+DFFF)" in out
    assert f"annotation.Example {bad_example.pk} flag_reason: contains the bidirectional control U+202E" in out
    assert f"annotation.Example {pending_bad.pk} input.text: contains an unpaired surrogate (U+DC00)" in out
    assert f"tasks.LabeledItem {item.pk} input.text: stacks 30 combining marks" in out
    assert f"tasks.Context {context.pk} payload.prompt: has no visible character" in out
    assert "6 problems in 4 rows" in out


def test_fix_replaces_what_it_can_and_retracts_nothing(bad_example, task):
    item = LabeledItemFactory(task=task, input={"text": ZALGO})
    blank = Context.objects.create(task=task, payload={"prompt": "\u200b\u200b"}, key="k-blank")
    out, _ = run_check("--fix")
    bad_example.refresh_from_db()
    item.refresh_from_db()
    assert bad_example.input == {"text": "lone \ufffd surrogate"}
    assert bad_example.target == "positive\ufffd"
    assert bad_example.flag_reason == "abcevil"
    assert not bad_example.retracted and bad_example.flagged
    assert item.input == {"text": "z" + "\u0301" * 8}
    assert f"fixed annotation.Example {bad_example.pk} input" in out
    assert f"left tasks.Context {blank.pk} payload" in out  # nothing to make up for a blank text
    assert Context.objects.get(pk=blank.pk).payload == {"prompt": "\u200b\u200b"}
    after, _ = run_check()
    assert "1 problem in 1 row" in after  # only the blank context is left


def test_a_clean_database_has_nothing_to_report(open_round):
    ExampleFactory(round=open_round, input={"text": "Café, naïve, 東京, مرحبا, שלום, 👍🏽 — fine"})
    out, _ = run_check("--fail")
    assert "no problems" in out


def test_fail_exits_non_zero_when_something_is_found(bad_example):
    _, err = run_check("--fail")
    assert "error: 3 stored texts break the text rule" in err


def test_labelled_items_from_the_factory_pass(task):
    LabeledItemFactory(task=task)
    assert LabeledItem.objects.count() == 1
    out, _ = run_check()
    assert "no problems" in out
