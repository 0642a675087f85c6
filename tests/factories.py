"""Factories for the core models. App-specific factories live next to their tests."""

from __future__ import annotations

import factory
from django.contrib.auth.models import User
from django.utils import timezone

from annotation.models import Example
from tasks.models import Context, LabeledItem, Round, Task, payload_hash
from validation.models import Validation

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password(PASSWORD)


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"task-{n}")
    name = factory.LazyAttribute(lambda t: t.slug.replace("-", " ").title())
    kind = "sentiment"
    config = factory.LazyFunction(dict)


class RoundFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Round

    task = factory.SubFactory(TaskFactory)
    number = factory.Sequence(lambda n: n + 1)
    status = Round.Status.OPEN
    opened_at = factory.LazyFunction(timezone.now)


def _context_payload(o) -> dict:
    kind = o.task.kind
    if kind == "nli":
        return {"premise": f"A man is playing a guitar on stage number {o.n}."}
    if kind == "qa":
        return {"passage": f"The Eiffel Tower was completed in 1889 and is {o.n} metres from the river."}
    return {"prompt": f"The food was good but the service was slow ({o.n})."}


class ContextFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Context
        exclude = ["n"]

    n = factory.Sequence(lambda n: n)
    task = factory.SubFactory(TaskFactory)
    round = None
    payload = factory.LazyAttribute(_context_payload)
    key = factory.LazyAttribute(lambda o: payload_hash(o.payload))
    source = "factory"


class LabeledItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LabeledItem

    task = factory.SubFactory(TaskFactory)
    collection = "base"
    split = LabeledItem.Split.TRAIN
    context = factory.LazyFunction(dict)
    input = factory.Sequence(lambda n: {"text": f"sentence number {n}"})
    target = "positive"
    key = factory.LazyAttribute(lambda o: payload_hash(o.context, o.input, o.target))


class ExampleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Example

    round = factory.SubFactory(RoundFactory)
    context = factory.LazyAttribute(lambda o: ContextFactory(task=o.round.task, round=o.round))
    author = factory.SubFactory(UserFactory)
    input = factory.Sequence(lambda n: {"text": f"an example sentence {n}"})
    target = "positive"
    scoring_state = Example.Scoring.SCORED
    fooled = True
    ensemble_prediction = factory.LazyFunction(lambda: {"label": "negative", "probs": {"positive": 0.3, "negative": 0.6, "neutral": 0.1}})


class ValidationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Validation

    example = factory.SubFactory(ExampleFactory)
    validator = factory.SubFactory(UserFactory)
    verdict = Validation.Verdict.CORRECT
