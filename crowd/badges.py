"""Badges and streaks, derived from the data: examples written, verified fooling examples, validations,
accuracy on gold items, and days in a row of work.

`derive` (run by the periodic job `crowd.derive_badges`) computes who earns what on each task now, adds
the badges newly earned and removes the ones no longer earned (an example retracted, a verification
reversed, a streak broken): a badge says what the data says today, like every other figure.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from django.db import transaction
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotation.models import Example
from crowd.models import Badge
from tasks.models import Task
from validation.models import GoldAnswer, Validation

STREAK_LOOKBACK_DAYS = 60


@dataclass(frozen=True)
class BadgeRule:
    code: str
    name: str
    description: str
    measure: str  # examples, verified_fooling, validations, gold_accuracy, streak
    threshold: float
    min_gold: int = 0  # gold answers needed before gold accuracy counts


RULES = [
    BadgeRule("examples-10", "10 examples", "wrote 10 examples that count", "examples", 10),
    BadgeRule("examples-100", "100 examples", "wrote 100 examples that count", "examples", 100),
    BadgeRule("fooler", "Model fooler", "wrote an example that fooled the model and was verified", "verified_fooling", 1),
    BadgeRule("fooler-10", "Master fooler", "wrote 10 verified fooling examples", "verified_fooling", 10),
    BadgeRule("validator-50", "50 validations", "cast 50 validations that count", "validations", 50),
    BadgeRule("sharp-eye", "Sharp eye", "right on at least 90% of 10 or more check items", "gold_accuracy", 0.9,
              min_gold=10),
    BadgeRule("streak-3", "3-day streak", "worked on the task 3 days in a row (up to today or yesterday)", "streak", 3),
    BadgeRule("streak-7", "7-day streak", "worked on the task 7 days in a row (up to today or yesterday)", "streak", 7),
]
BY_CODE = {rule.code: rule for rule in RULES}


def streak(days: set[date], today: date) -> int:
    """Consecutive active days ending today, or yesterday (today's work may not have started yet)."""
    day = today if today in days else today - timedelta(days=1)
    count = 0
    while day in days:
        count += 1
        day -= timedelta(days=1)
    return count


def measures(task: Task, today: date) -> dict[int, dict[str, float]]:
    """user id -> each measure on `task`."""
    found: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    written = Example.objects.filter(round__task=task, retracted=False).values("author").annotate(
        n=Count("pk"), fooled=Count("pk", filter=Q(fooled=True, consensus=Example.Consensus.VERIFIED)))
    for r in written.order_by():
        found[r["author"]].update(examples=r["n"], verified_fooling=r["fooled"])
    votes = Validation.objects.filter(example__round__task=task, mode=Validation.Mode.CROWD, counted=True)
    for r in votes.values("validator").annotate(n=Count("pk")).order_by():
        found[r["validator"]]["validations"] += r["n"]
    gold = GoldAnswer.objects.filter(task=task).values("validator").annotate(
        n=Count("pk"), right=Count("pk", filter=Q(correct=True)))
    for r in gold.order_by():
        found[r["validator"]].update(validations=found[r["validator"]]["validations"] + r["n"], gold_answers=r["n"],
                                     gold_accuracy=r["right"] / r["n"])
    for user_id, days in active_days(task, today).items():
        found[user_id]["streak"] = streak(days, today)
    return found


def active_days(task: Task, today: date) -> dict[int, set[date]]:
    """The days each person wrote, validated or answered a gold item on the task (recent ones only)."""
    since = today - timedelta(days=STREAK_LOOKBACK_DAYS)
    sources = [
        (Example.objects.filter(round__task=task, retracted=False), "author"),
        (Validation.objects.filter(example__round__task=task, counted=True), "validator"),
        (GoldAnswer.objects.filter(task=task), "validator"),
    ]
    days: dict[int, set[date]] = defaultdict(set)
    for rows, who in sources:
        recent = rows.filter(created_at__date__gte=since).annotate(day=TruncDate("created_at"))
        for user_id, day in recent.values_list(who, "day").distinct():
            days[user_id].add(day)
    return days


def earned(rule: BadgeRule, values: dict[str, float]) -> bool:
    if rule.measure == "gold_accuracy" and values.get("gold_answers", 0) < rule.min_gold:
        return False
    return values.get(rule.measure, 0) >= rule.threshold


def detail(rule: BadgeRule, values: dict[str, float]) -> str:
    value = values.get(rule.measure, 0)
    return f"{value:.0%}" if rule.measure == "gold_accuracy" else f"{value:g}"


@transaction.atomic
def derive_task(task: Task, today: date | None = None) -> tuple[int, int]:
    """Make the task's badges match the data; (added, removed)."""
    today = today or timezone.localdate()
    wanted = {(user_id, rule.code): detail(rule, values)
              for user_id, values in measures(task, today).items() for rule in RULES if earned(rule, values)}
    held = {(b.user_id, b.code): b for b in Badge.objects.filter(task=task)}
    gone = [b.pk for key, b in held.items() if key not in wanted]
    Badge.objects.filter(pk__in=gone).delete()
    Badge.objects.bulk_create([Badge(user_id=u, task=task, code=c, detail=d)
                               for (u, c), d in wanted.items() if (u, c) not in held])
    for key, text in wanted.items():
        if key in held and held[key].detail != text:
            Badge.objects.filter(pk=held[key].pk).update(detail=text)
    return len(wanted.keys() - held.keys()), len(gone)


def derive(today: date | None = None) -> dict[str, tuple[int, int]]:
    return {task.slug: derive_task(task, today) for task in Task.objects.all()}


def describe(badge: Badge) -> dict[str, str]:
    rule = BY_CODE.get(badge.code)
    name, text = (rule.name, rule.description) if rule else (badge.code, "")
    return {"code": badge.code, "name": name, "description": f"{text} ({badge.detail})" if badge.detail else text}


def by_username(task: Task) -> dict[str, list[dict[str, str]]]:
    """username -> badges held on the task (what `tasks.badges` shows on the leaderboards)."""
    held: dict[str, list[dict[str, str]]] = defaultdict(list)
    for badge in Badge.objects.filter(task=task).select_related("user").order_by("code"):
        held[badge.user.username].append(describe(badge))
    return dict(held)
