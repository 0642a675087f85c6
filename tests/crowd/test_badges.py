"""Badges and streaks appear and disappear with the data (derived by the periodic job), and show on the
profile page and on the writers' leaderboards."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.test import Client

from annotation.models import Example
from crowd import badges, jobs
from crowd.models import Badge
from tests.factories import ExampleFactory, UserFactory

pytestmark = pytest.mark.django_db
TODAY = date(2031, 5, 20)


def held(user, task) -> set[str]:
    return set(Badge.objects.filter(user=user, task=task).values_list("code", flat=True))


def on_day(example: Example, day: date) -> None:
    Example.objects.filter(pk=example.pk).update(created_at=datetime(day.year, day.month, day.day, 12, tzinfo=UTC))


def test_badges_appear_and_disappear_with_the_data(crowd_task):
    writer = UserFactory(username="prolific-writer")
    rnd = crowd_task.rounds.get()
    examples = [ExampleFactory(round=rnd, author=writer, fooled=False, input={"text": f"t{n}"}) for n in range(10)]
    for n, example in enumerate(examples[:3]):
        on_day(example, TODAY - timedelta(days=n))
    for example in examples[3:]:
        on_day(example, TODAY - timedelta(days=10))
    assert held(writer, crowd_task) == set()  # nothing until the job derives them

    badges.derive_task(crowd_task, today=TODAY)
    assert held(writer, crowd_task) == {"examples-10", "streak-3"}

    Example.objects.filter(pk=examples[0].pk).update(fooled=True, consensus="verified")
    badges.derive_task(crowd_task, today=TODAY)
    assert held(writer, crowd_task) == {"examples-10", "streak-3", "fooler"}

    Example.objects.filter(pk=examples[0].pk).update(consensus="rejected")  # the verification was reversed
    Example.objects.filter(pk=examples[9].pk).update(retracted=True)  # nine examples count now
    badges.derive_task(crowd_task, today=TODAY)
    assert held(writer, crowd_task) == {"streak-3"}

    badges.derive_task(crowd_task, today=TODAY + timedelta(days=2))  # two idle days break the streak
    assert held(writer, crowd_task) == set()


def test_a_streak_counts_days_in_a_row_up_to_today_or_yesterday():
    days = {TODAY - timedelta(days=n) for n in (1, 2, 3, 5)}
    assert badges.streak(days, TODAY) == 3
    assert badges.streak(days | {TODAY}, TODAY) == 4
    assert badges.streak(days, TODAY + timedelta(days=2)) == 0


def test_the_periodic_job_derives_every_task_and_is_scheduled(crowd_task, settings):
    writer = UserFactory(username="busy")
    for n in range(10):
        ExampleFactory(round=crowd_task.rounds.get(), author=writer, input={"text": f"b{n}"})
    jobs.derive_badges()
    jobs.derive_badges()  # idempotent
    assert Badge.objects.filter(user=writer, code="examples-10").count() == 1
    assert any(e["task"] == "crowd.derive_badges" for e in settings.CELERY_BEAT_SCHEDULE.values())


def test_badges_show_on_the_profile_and_the_leaderboards(crowd_task):
    writer = UserFactory(username="shown")
    for n in range(10):
        ExampleFactory(round=crowd_task.rounds.get(), author=writer, input={"text": f"s{n}"})
    badges.derive_task(crowd_task)
    client = Client()
    profile = client.get("/people/shown/").content.decode()
    assert 'data-badge="examples-10"' in profile and "10 examples" in profile
    for page in (f"/tasks/{crowd_task.slug}/", f"/tasks/{crowd_task.slug}/figures/", f"/tasks/{crowd_task.slug}/dashboard/"):
        assert 'data-badge="examples-10"' in client.get(page).content.decode(), page
    stats = client.get(f"/api/tasks/{crowd_task.slug}/stats/").json()
    assert stats["annotators"][0]["badges"][0]["code"] == "examples-10"
