"""Duplicates of a writer's examples: the same input *that the model reads*, once normalised.

Every example counts for MER, badges and the bonus, so the same example must not be paid twice. What makes
two examples the same is what the model is asked: the writer's input fields plus the context fields the task
kind feeds the model (`TaskKind.model_context_fields`). So:
- sentiment, hate speech (the prompt is inspiration the model never reads): the same text is a duplicate
  whatever prompt it was written under;
- NLI, QA (the premise or passage is part of the model's input): the same hypothesis or question is a
  duplicate only with the same premise or passage (compared by its text, so the same premise served as
  another context is still the same model input); under another premise it is a new example.

Compared: every example of the writer on the task that is not retracted, over all its rounds, and those of the
accounts linked to the writer's (the sybil rule of `accounts.services.linked_user_ids`: same external worker id,
or same sign-up address when the task's `same_ip_rule` is on). A linked account's copy is refused too, without
naming its example: two accounts of one person must not be paid twice for one text.

The database is the arbiter (issue 39, item 12): a lookup then an insert lets racing copies through (20 parallel
identical submissions once stored 10). So:
- a unique constraint holds one live (not retracted) example per writer, round and `model_key`
  (`example_model_key_unique_per_author_round`): a copy that loses the race fails its insert and is answered the
  same 409 `duplicate`. Per round, not per task, because a constraint cannot reach the task through the round;
  racing copies meet in the task's one open round. Examples that already repeated a key before the constraint
  existed are kept and marked `key_shared` (migration 0010), outside it;
- on PostgreSQL, a writer with linked accounts first takes a transaction-level advisory lock keyed by task and
  fingerprint (`lock_model_key`), so copies from linked accounts wait for each other's commit and the second
  one's check sees the first (the relation is symmetric, so both sides take the lock; writers without linked
  accounts need no lock and pay no extra round trip: issue 27's query budget). On SQLite (the embedded default) the constraint alone holds: the same
  writer's racing copies are refused, linked accounts' are caught only by the check.

How: each example stores the SHA-256 of its normalised model input (`Example.model_key`, indexed with its
author, set when it is saved), so a submission asks the database for that one value among the writer's
examples: one indexed lookup, whatever the writer's history (before, the latest 500 examples were read and
normalised on every submission: issue 27). The key follows the task kind's `model_context_fields` at the time
the example was saved.

Normalised as the encoder's tokenizer reads the text (`annotation.fingerprints.normalise`): Unicode NFKC, case
folded, invisible characters dropped (zero-width spaces and joiners, direction marks, variation selectors, every
default-ignorable code point), accents dropped however they are written (the uncased tokenizer strips them),
punctuation dropped, runs of white space made one space. So "Great food!!" and "great   food" are the same example,
"sound\u200btrack", "soundtrack\ufe0f" and "sóundtrack" (precomposed or with a combining accent) are the same as
"soundtrack", and "great food, slow service" is not "great food". Why a fingerprint and not a text rule that refuses
format characters inside words: those characters have honest uses (U+200C/U+200D join or break letters in Persian
and Indic scripts, U+FE0F picks an emoji's look, U+200E is typed by right-to-left keyboards), so refusing them
would refuse real text; the model never sees them, so the fingerprint need not either. The label
does not matter: the same text under another label is still the same example (and writing both labels
would be a sure way to "fool" the model once).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import connection
from django.db.models import Q

from accounts.services import linked_user_ids
from annotation.fingerprints import fingerprint
from annotation.models import Example
from dynabench_site.errors import Conflict
from tasks.models import Task


class DuplicateExample(Conflict):
    code = "duplicate"

    def __init__(self, first: Example, *, reads_context: bool):
        where = "for this context" if reads_context else "on this task (the model reads only your text, not the prompt)"
        super().__init__(
            f"You already wrote this example {where} (example #{first.pk}). Change the text"
            + (", or ask for a new context." if reads_context else "."),
            extra={"duplicate_of": first.pk},
        )


class LinkedDuplicate(Conflict):
    """The same model input from an account linked to the writer's: refused without naming that example."""

    code = "duplicate"

    def __init__(self):
        super().__init__(
            "This example was already written on this task from an account linked to yours (the same external "
            "worker id or sign-up address); the same example is accepted and paid once. Write a new one."
        )


def lock_model_key(task: Task, key: str) -> None:
    """On PostgreSQL, wait until no other transaction holds a submission of the model input `key` on `task`, and
    hold it until this transaction ends (call inside `transaction.atomic()`). Elsewhere nothing (SQLite: the
    unique constraint refuses the same writer's copy)."""
    if connection.vendor != "postgresql":
        return
    digest = hashlib.sha256(f"annotation.duplicates|{task.pk}|{key}".encode()).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest[:8], "big", signed=True)])


def find_duplicate(user, task: Task, context: dict[str, Any] | None, inputs: dict[str, str],
                   key: str | None = None, *, lock: bool = False) -> Example | None:
    """The latest example (not retracted) of the writer or a linked account with the same model input. `key`:
    its fingerprint, when the caller computed it already. `lock` (inside a transaction that goes on to insert):
    when the writer has linked accounts, take `lock_model_key` before looking, so a linked account's racing copy
    waits for this transaction and then sees its example (the unique constraint covers the writer alone, and
    costs no extra round trip)."""
    linked = linked_user_ids(user, by_ip=task.typed_config.crowd.same_ip_rule)
    key = key or fingerprint(task, context, inputs)
    if lock and linked:
        lock_model_key(task, key)
    return (Example.objects.filter(Q(author=user) | Q(author__in=linked), model_key=key, round__task=task,
                                   retracted=False)
            .only("pk", "author_id").order_by("-id").first())


def check_not_duplicate(user, task: Task, context: dict[str, Any] | None, inputs: dict[str, str],
                        key: str | None = None, *, lock: bool = False) -> None:
    """Refuse (409, code `duplicate`) an example whose model input the writer, or a linked account, already
    wrote on the task. `context` is the shown context's payload (None without one); `key` its fingerprint;
    `lock` as in `find_duplicate`."""
    first = find_duplicate(user, task, context, inputs, key, lock=lock)
    if first is None:
        return
    if first.author_id != user.pk:
        raise LinkedDuplicate()
    raise DuplicateExample(first, reads_context=bool(task.kind_impl.model_context_fields(task.typed_config)))
