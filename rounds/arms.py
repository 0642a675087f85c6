"""The arms comparison of a task's study: per arm (optionally in one round), the participants, the examples, MER,
vMER, the validators' rejection rate and the time per example, each with a 95 % interval, and a test between the
arms for each metric (rounds.arm_stats). Shown on the round dashboard (researchers, owners, admins), answered by
GET /api/tasks/<slug>/arms/comparison/ and `manage.py compare_arms`.

The figures are the project's (annotation.managers, docs/validation.md), per arm instead of per round:
- MER = fooled / collected, vMER = verified fooled / collected (collected: not retracted; an example still being
  scored counts in collected, as everywhere on the site; `scored` says how many have a verdict);
- rejection rate = rejected / decided (decided = verified + rejected + flagged by the validators);
- time per example: the writer's `time_spent_ms`, where recorded.
Examples of people who withdrew consent are left out (exports.withdrawals), and the answer says how many.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.utils.translation import gettext as _

from annotation.models import Example
from dynabench_site.errors import InvalidInput
from exports.withdrawals import withdrawn_user_ids
from rounds import arm_stats
from study.models import Arm, Participant
from tasks.models import Round, Task

METRICS = ("mer", "vmer", "rejection_rate", "time")


def metric_labels() -> dict[str, str]:
    return {"mer": _("MER"), "vmer": _("vMER"), "rejection_rate": _("Rejection rate"),
            "time": _("Time per example")}


def find_round(task: Task, number: int | None) -> Round | None:
    """The round `number` of `task` (None: all rounds); InvalidInput (400) naming the rounds it has."""
    if number is None:
        return None
    found = task.rounds.filter(number=number).exclude(status=Round.Status.DRAFT).first()
    if found is None:
        have = ", ".join(str(n) for n in task.rounds.exclude(status=Round.Status.DRAFT)
                         .order_by("number").values_list("number", flat=True)) or "none yet"
        raise InvalidInput(f"task {task.slug!r} has no round {number}; its rounds: {have}", field="round")
    return found


def comparison(task: Task, round_number: int | None = None) -> dict[str, Any]:
    """The arms comparison (see the module docstring) as plain data: `arms` (one row per arm), `tests` (one per
    metric, Holm-adjusted across them), `left_out` (withdrawn people and their examples) and notes."""
    chosen = find_round(task, round_number)
    arms = list(Arm.objects.filter(task=task).order_by("position", "id"))
    scope = Example.objects.filter(round__task=task, arm__isnull=False)
    if chosen is not None:
        scope = scope.filter(round=chosen)
    withdrawn = withdrawn_user_ids(task)
    gone = scope.collected().filter(author_id__in=withdrawn) if withdrawn else Example.objects.none()
    left_out = {"examples": gone.count(), "people": gone.values("author_id").distinct().count()}
    if withdrawn:
        scope = scope.exclude(author_id__in=withdrawn)

    figures = scope.figures_by("arm_id")
    scored = dict(scope.collected().filter(fooled__isnull=False).values_list("arm_id").annotate(
        n=_count()).order_by())
    writers = dict(scope.collected().values_list("arm_id").annotate(n=_count("author_id", distinct=True)).order_by())
    timed: dict[int, list[int]] = {}
    for arm_id, ms in scope.collected().filter(time_spent_ms__isnull=False).values_list("arm_id", "time_spent_ms"):
        timed.setdefault(arm_id, []).append(ms)
    participants = dict(Participant.objects.filter(task=task, arm__isnull=False).exclude(
        Q(withdrawn_at__isnull=False) | Q(user_id__in=withdrawn)).values_list("arm_id").annotate(n=_count())
        .order_by())
    empty = Example.objects.none().figures()

    rows = []
    for arm in arms:
        f = figures.get(arm.pk, empty)
        rows.append({
            "key": arm.key, "name": arm.name, "model_in_loop": arm.model_in_loop, "assistant": arm.assistant,
            "active": arm.active, "participants": participants.get(arm.pk, 0), "writers": writers.get(arm.pk, 0),
            "examples": f["collected"], "scored": scored.get(arm.pk, 0), "fooled": f["fooled"],
            "verified_fooled": f["verified_fooled"], "decided": f["decided"], "rejected": f["rejected"],
            "mer": arm_stats.share(f["fooled"], f["collected"]).as_dict(),
            "vmer": arm_stats.share(f["verified_fooled"], f["collected"]).as_dict(),
            "rejection_rate": arm_stats.share(f["rejected"], f["decided"]).as_dict(),
            "time": arm_stats.times(timed.get(arm.pk, [])).as_dict(),
        })
    compared = [(arm, row) for arm, row in zip(arms, rows, strict=True) if row["examples"]]
    tests = [
        arm_stats.compare_shares("mer", [(r["fooled"], r["examples"]) for _, r in compared]),
        arm_stats.compare_shares("vmer", [(r["verified_fooled"], r["examples"]) for _, r in compared]),
        arm_stats.compare_shares("rejection_rate", [(r["rejected"], r["decided"]) for _, r in compared]),
        arm_stats.compare_times("time", [[ms / 1000 for ms in timed.get(a.pk, [])] for a, _ in compared]),
    ]
    arm_stats.adjust(tests)
    labels, why = metric_labels(), reasons()
    return {
        "task": task.slug,
        "round": chosen.number if chosen else None,
        "arms": rows,
        "compared_arms": [a.key for a, _ in compared],
        "tests": [{**t.as_dict(), "label": labels[t.metric],
                   "reason": why.get(t.reason, t.reason)} for t in tests],
        "left_out": left_out,
        "min_per_arm": arm_stats.MIN_PER_ARM,
        "correction": "holm",
    }


def _count(field: str = "id", distinct: bool = False) -> Count:
    return Count(field, distinct=distinct)


def reasons() -> dict[str, str]:
    return {arm_stats.TOO_FEW: _("too few examples to compare"),
            arm_stats.NO_VARIATION: _("every example has the same outcome")}


def as_text(data: dict[str, Any]) -> str:
    """The comparison as a plain-text table (the management command; the worked example in the docs)."""
    scope = f"round {data['round']}" if data["round"] is not None else "all rounds"
    lines = [f"Arms comparison: {data['task']}, {scope}", ""]
    if not data["arms"]:
        return "\n".join([*lines, "This task has no study arms."]) + "\n"
    head = ("arm", "participants", "examples", "MER (95 % CI)", "vMER (95 % CI)", "rejection (95 % CI)",
            "median s (95 % CI)", "mean s")
    table = [head]
    for r in data["arms"]:
        t = r["time"]
        table.append((r["key"], str(r["participants"]), str(r["examples"]), _share(r["mer"]), _share(r["vmer"]),
                      _share(r["rejection_rate"]),
                      "–" if t["median"] is None else f"{t['median']:.1f} ({t['low']:.1f}–{t['high']:.1f})",
                      "–" if t["mean"] is None else f"{t['mean']:.1f}"))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for n, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", "Tests between arms (two-sided; Holm's correction across the four metrics):"]
    for t in data["tests"]:
        if t["p_value"] is None:
            lines.append(f"- {t['label']}: {t['test']}: {t['reason']}")
        else:
            stat = "" if t["statistic"] is None else f"statistic {t['statistic']:g}, "
            note = f" ({t['reason']})" if t["reason"] else ""
            lines.append(f"- {t['label']}: {t['test']}: {stat}p = {_p(t['p_value'])}, Holm-adjusted p = "
                         f"{_p(t['p_holm'])}{note}")
    gone = data["left_out"]
    lines += ["", f"Left out: {gone['examples']} example(s) of {gone['people']} person(s) who withdrew consent."]
    return "\n".join(lines) + "\n"


def _share(s: dict[str, Any]) -> str:
    if s["value"] is None:
        return "–"
    return f"{s['value'] * 100:.1f} % ({s['low'] * 100:.1f}–{s['high'] * 100:.1f})"


def _p(value: float) -> str:
    return "1" if value >= 1 else (f"{value:.2g}" if value < 0.001 else f"{value:.3f}")
