"""Round simulation for researchers: replay labelled examples through the real services and measure the loop.

Simulated writers submit each example of a file through `annotation.services.submit` (scored by the round's live
ensemble, exactly as a writer's would be), simulated validators take items from the real validation queue
(`validation.queue.claim_next`) and vote with `validation.services.submit_vote` according to the file's label,
and the round is closed through the round pipeline (`rounds.services.start_pipeline`: splits, retraining,
evaluation, the before/after comparison, seeding, deployment). The report gives the live ensemble's error on a
held-out file before and after, each with a 95 % Wilson interval, and the paired difference with a 95 % paired
bootstrap interval. `manage.py simulate_rounds` is the command; docs/simulate_rounds.md has one run's report.

Nothing is mocked: the simulation writes real rows (users named `sim-…`, examples, votes, a pipeline run, a new
round) into the database it runs on, so run it on a copy or a scratch database, never on a live task.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.test.utils import override_settings

from annotation.services import Submission, submit
from dynabench_site.errors import DomainError
from modelzoo.models import ModelVersion
from modelzoo.services import active_members, predict_with
from rounds import services
from rounds.models import PipelineRun
from tasks import guidelines, roles
from tasks.models import Context, Task, payload_hash
from validation.queue import claim_next
from validation.services import submit_vote

Log = Callable[[str], None]
ON_WORSE = ("approve", "discard", "stop")


class SimulationError(Exception):
    """The simulation cannot run as asked (no open round, a file that does not fit the task)."""


@dataclass
class Row:
    context: dict[str, Any]
    input: dict[str, Any]
    target: Any
    uid: str
    claimed: Any = None  # what the writer says the label is (the file's `writer_label`; default: the label)


@dataclass
class Interval:
    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": round(self.value, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


@dataclass
class Report:
    task: str
    source: str
    heldout: str
    writers: int
    validators: int
    rows: int = 0
    submitted: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    fooled: int = 0
    votes: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    heldout_size: int = 0
    closed_round: int | None = None
    opened_round: int | None = None
    pipeline: dict[str, Any] = field(default_factory=dict)
    before: Interval | None = None
    after: Interval | None = None
    difference: Interval | None = None
    before_members: list[str] = field(default_factory=list)
    after_members: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if not isinstance(v, Interval)}
        for name in ("before", "after", "difference"):
            value = getattr(self, name)
            out[name] = value.as_dict() if value else None
        return out

    def markdown(self) -> str:
        b, a, d = self.before, self.after, self.difference
        lines = [
            f"# Round simulation: {self.task}",
            "",
            f"- writers' file: `{self.source}` ({self.rows} examples replayed by {self.writers} simulated writers)",
            f"- held-out file: `{self.heldout}` ({self.heldout_size} examples)",
            f"- submitted: {self.submitted}; refused: {self.refused or 'none'}; fooled the live ensemble: "
            f"{self.fooled} ({_pct(self.fooled / self.submitted if self.submitted else 0)})",
            f"- votes by {self.validators} simulated validators: {self.votes}; decided: {self.verdicts or 'none'}",
            f"- pipeline #{self.pipeline.get('id')}: {self.pipeline.get('status')} "
            f"(round {self.closed_round} closed, round {self.opened_round} opened)",
        ]
        if self.pipeline.get("retrain_log"):
            lines.append(f"- retraining: {self.pipeline['retrain_log']}")
        comparison = self.pipeline.get("comparison")
        if comparison:
            lines += ["", f"The pipeline's comparison ({comparison['metric']}, × 100; tolerance "
                          f"{comparison.get('tolerance')} points; decision: {self.pipeline.get('decision') or 'none needed'}):",
                      "", "| test set | examples | live | new | difference (points) |", "|---|---:|---:|---:|---:|"]
            for r in comparison["rows"]:
                delta = "–" if r["delta"] is None else f"{r['delta']:+.1f}"
                lines.append(f"| {r['label']} | {r['size']} | {_num(r['live'])} | {_num(r['new'])} | {delta} |")
        lines += [
            "",
            "Error of the live ensemble on the held-out file (share of examples it gets wrong, the kind's "
            "`is_fooled` rule), with 95 % intervals (Wilson for each; paired bootstrap, 2,000 resamples, for the "
            "difference):",
            "",
            "| | ensemble | error | 95 % interval |",
            "|---|---|---:|---|",
            f"| before | {', '.join(self.before_members)} | {_pct(b.value)} | {_pct(b.low)} – {_pct(b.high)} |" if b else "",
            f"| after | {', '.join(self.after_members)} | {_pct(a.value)} | {_pct(a.low)} – {_pct(a.high)} |" if a else "",
            f"| after − before | | {_signed(d.value)} | {_signed(d.low)} – {_signed(d.high)} |" if d else "",
            "",
            "Time (s): " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()),
        ]
        return "\n".join(line for line in lines if line is not None) + "\n"


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def _signed(value: float) -> str:
    return f"{value * 100:+.1f} points"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}"


# --- statistics ------------------------------------------------------------------------------------------


def wilson(errors: int, n: int, z: float = 1.959964) -> Interval:
    """The error rate and its Wilson score interval."""
    if n == 0:
        return Interval(0.0, 0.0, 1.0)
    p = errors / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def paired_bootstrap(before: Sequence[int], after: Sequence[int], resamples: int = 2000, seed: int = 0) -> Interval:
    """The difference of error rates (after − before) on the same examples, with a percentile interval from
    resampling the examples (pairs kept together)."""
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if len(b) == 0:
        return Interval(0.0, 0.0, 0.0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(b), size=(resamples, len(b)))
    diffs = (a[idx] - b[idx]).mean(axis=1)
    return Interval(float(a.mean() - b.mean()), float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5)))


# --- reading the files -----------------------------------------------------------------------------------


def read_rows(task: Task, path: Path, limit: int | None = None, seed: int | None = None) -> list[Row]:
    """The file's examples in the task's shape: its context fields, input fields and a `label` (or `target`), and
    optionally the `writer_label` a writer claims (validators then vote it incorrect when it is not the label).
    With `seed`, a stable random sample of `limit` rows; else the first `limit`."""
    config = task.typed_config
    needed = [*task.kind_impl.model_context_fields(config), *config.input_fields]  # shown-only context: optional
    rows: list[Row] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            raw = json.loads(line)
            missing = [f for f in needed if f not in raw]
            target = raw.get("target", raw.get("label"))
            if missing or target is None:
                raise SimulationError(f"{path}:{number}: missing {', '.join(missing) or 'label'} (the task "
                                      f"needs {needed} and a label)")
            rows.append(Row({f: raw[f] for f in config.context_fields if f in raw},
                            {f: raw[f] for f in config.input_fields},
                            target, str(raw.get("uid") or number), raw.get("writer_label", target)))
    if seed is not None and limit is not None and limit < len(rows):
        rows = random.Random(seed).sample(rows, limit)
    return rows[:limit] if limit is not None else rows


# --- the simulation --------------------------------------------------------------------------------------


def simulated_user(name: str, *grant: str):
    user, created = get_user_model().objects.get_or_create(username=name, defaults={"email": f"{name}@sim.invalid"})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    if grant:
        roles.grant(user, *grant)
    return user


def acknowledge(users, task: Task) -> None:
    current = guidelines.current(task)
    if current is not None:
        for user in users:
            guidelines.acknowledge(user, task, current.version)


def ensemble_errors(task: Task, members: Sequence[ModelVersion], rows: Sequence[Row]) -> list[int]:
    """1 where the ensemble gets the held-out example wrong (the kind's "fooled" rule), else 0."""
    kind, config = task.kind_impl, task.typed_config
    inputs = [kind.model_input(config, r.context, kind.clean_input(config, r.context, r.input)) for r in rows]
    predictions = predict_with(list(members), inputs)
    return [int(kind.is_fooled(config, kind.clean_target(config, r.context, r.target), p))
            for r, p in zip(rows, predictions, strict=True)]


def context_for(task: Task, payload: dict[str, Any]) -> Context | None:
    if not payload:
        return None
    context, _ = Context.objects.get_or_create(task=task, key=payload_hash(payload),
                                               defaults={"payload": payload, "source": "simulation"})
    return context


def live_members(task: Task) -> list[ModelVersion]:
    return active_members(task.current_round)


def simulate(task: Task, source: Path, heldout: Path, *, writers: int = 4, validators: int = 3,
             limit: int | None = None, heldout_limit: int | None = None, options: dict[str, Any] | None = None,
             on_worse: str = "approve", bootstrap: bool = False, log: Log = print) -> Report:
    """Replay `source` through one round of `task` and measure the live ensemble on `heldout` before and after."""
    if on_worse not in ON_WORSE:
        raise SimulationError(f"on_worse must be one of {', '.join(ON_WORSE)}")
    if writers < 1 or validators < 1:
        raise SimulationError("at least one writer and one validator")
    clock: dict[str, float] = {}
    started = time.perf_counter()
    report = Report(task.slug, str(source), str(heldout), writers, validators)
    owner = simulated_user(f"sim-{task.slug}-owner")
    task.owners.add(owner)
    with override_settings(JOB_RUNNER="inline"):  # every job in this process, in order: a reproducible run
        if task.current_round is None or not live_members(task):
            if not bootstrap:
                raise SimulationError(f"task {task.slug!r} has no open round with a live ensemble; open one first "
                                      f"(close a round in the console) or pass --bootstrap")
            log("no open round with a live ensemble: opening one through the pipeline (--bootstrap)")
            run = services.start_pipeline(task, owner, options, "simulation: first round")
            run.refresh_from_db()
            if run.status != PipelineRun.Status.DONE:
                raise SimulationError(f"the first round's pipeline ended {run.status}: {run.error}")
            task.refresh_from_db()
        clock["bootstrap"] = time.perf_counter() - started
        rows = read_rows(task, source, limit)
        held = read_rows(task, heldout, heldout_limit, seed=0)
        report.rows, report.heldout_size = len(rows), len(held)
        before_members = live_members(task)
        report.before_members = [v.name for v in before_members]
        mark = time.perf_counter()
        before = ensemble_errors(task, before_members, held)
        clock["held-out before"] = time.perf_counter() - mark
        log(f"held-out error before: {sum(before)}/{len(before)}")

        mark = time.perf_counter()
        people = [simulated_user(f"sim-{task.slug}-writer-{i + 1}", roles.ANNOTATOR) for i in range(writers)]
        judges = [simulated_user(f"sim-{task.slug}-validator-{i + 1}", roles.VALIDATOR) for i in range(validators)]
        acknowledge([*people, *judges], task)
        expected: dict[int, Any] = {}
        round_ = task.current_round
        report.closed_round = round_.number
        for i, row in enumerate(rows):
            context = context_for(task, row.context)
            try:
                result = submit(people[i % writers], task, Submission(
                    input=row.input, target=row.claimed, context_id=context.pk if context else None,
                    round_number=round_.number, idempotency_key=f"sim-{round_.number}-{row.uid}"[:64]))
            except DomainError as exc:
                report.refused[type(exc).__name__] = report.refused.get(type(exc).__name__, 0) + 1
                continue
            example = result.example
            example.refresh_from_db(fields=["fooled", "target", "scoring_state"])
            expected[example.pk] = task.kind_impl.clean_target(task.typed_config, row.context, row.target)
            report.submitted += 1
            report.fooled += int(bool(example.fooled))
            if (i + 1) % 50 == 0:
                log(f"submitted {i + 1}/{len(rows)} ({report.fooled} fooled)")
        clock["writing"] = time.perf_counter() - mark

        mark = time.perf_counter()
        report.votes = vote_everything(task, judges, expected)
        from annotation.models import Example

        for state in Example.objects.filter(pk__in=list(expected)).values_list("consensus", flat=True):
            report.verdicts[state] = report.verdicts.get(state, 0) + 1
        clock["validation"] = time.perf_counter() - mark
        log(f"{report.votes} votes; consensus: {report.verdicts}")

        mark = time.perf_counter()
        run = services.start_pipeline(task, owner, options, "simulation: close the round")
        run.refresh_from_db()
        if run.status == PipelineRun.Status.AWAITING and on_worse != "stop":
            log(f"the retrained ensemble is worse than the live one on {run.comparison.get('worse')}: {on_worse}")
            act = services.approve_pipeline if on_worse == "approve" else services.discard_pipeline
            run = act(run, owner)
            run.refresh_from_db()
        clock["closing the round"] = time.perf_counter() - mark
        retrain = run.steps.filter(name="retrain").first()
        report.pipeline = {"id": run.pk, "status": run.status, "error": run.error, "decision": run.decision,
                           "comparison": run.comparison,
                           "retrain_log": (retrain.log.strip().splitlines() or [""])[0][9:] if retrain else ""}
        task.refresh_from_db()
        report.opened_round = task.current_round.number if task.current_round else None

        mark = time.perf_counter()
        after_members = live_members(task) or before_members
        report.after_members = [v.name for v in after_members]
        after = ensemble_errors(task, after_members, held)
        clock["held-out after"] = time.perf_counter() - mark
    report.before = wilson(sum(before), len(before))
    report.after = wilson(sum(after), len(after))
    report.difference = paired_bootstrap(before, after)
    clock["total"] = time.perf_counter() - started
    report.seconds = {k: round(v, 1) for k, v in clock.items()}
    return report


def vote_everything(task: Task, judges, expected: dict[int, Any]) -> int:
    """Each simulated validator takes items from the real queue and votes "correct" when the writer's label is
    the file's label (else "incorrect"), until the queue has nothing left for any of them."""
    votes, idle = 0, 0
    while idle < len(judges):
        idle = 0
        for judge in judges:
            claim = claim_next(task, judge)
            if claim.example is None:
                idle += 1
                continue
            example = claim.example
            truth = expected.get(example.pk, example.target)
            verdict = "correct" if example.target == truth else "incorrect"
            try:
                submit_vote(judge, example, verdict, label=None if verdict == "correct" else truth)
            except DomainError:
                idle += 1
                continue
            votes += 1
    return votes
