"""Round simulation for researchers: replay labelled examples through the real services and measure the loop.

Simulated writers submit each example of a file through `annotation.services.submit` (scored by the round's live
ensemble, exactly as a writer's would be, but with no word map: maps are no part of the verdict), simulated
validators take items from the real validation queue (`validation.queue.claim_next`) and vote with
`validation.services.submit_vote` according to the file's label, and the round is closed through the round
pipeline (`rounds.services.start_pipeline`: splits, retraining, evaluation, the before/after comparison, seeding,
deployment). With several writers' files, one round per file, closed in order.

The report: each round's ensemble (the live one at the start, then the one each closed round deployed) on every
held-out file, its error with a 95 % Wilson interval; between consecutive ensembles, per held-out file, the exact
McNemar test on the discordant pairs and the paired difference with a 95 % paired bootstrap interval; and each
round's own figures (submitted, fooled, votes, the pipeline's decision table). `python -m research.simulate_rounds`
is the command (research/simulate_rounds/command.py); docs/simulate_rounds.md has runs' reports. It is research
that imports the product, not part of it: no app imports it (tests/site/test_import_layers.py).

Nothing is mocked: the simulation writes real rows (users named `sim-…`, examples, votes, pipeline runs, new
rounds) into the database it runs on, so run it on a copy or a scratch database, never on a live task.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model

from annotation.services import Submission, submit
from dynabench_site.errors import DomainError
from modelzoo.models import ModelVersion
from modelzoo.services import active_members, predict_with
from rounds import services
from rounds.models import PipelineRun
from rounds.statistics import Interval, discordant, mcnemar, mcnemar_exact, paired_bootstrap, wilson  # noqa: F401 - re-exported
from tasks import guidelines, roles
from tasks.kinds import decide
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


@dataclass(frozen=True)
class DataFile:
    """A JSONL file and, optionally, how many of its lines to use (writers: the first K; held out: a stable
    random sample of K)."""

    path: Path
    limit: int | None = None
    name: str = ""  # as the report names it (default: the path)
    preset: str | None = None  # an import preset (tasks.importing.PRESETS) that maps the file's own fields and labels

    def __str__(self) -> str:
        return self.name or str(self.path)


@dataclass
class RoundReport:
    """One simulated round: the writers' file replayed into it, the votes, and the pipeline that closed it."""

    number: int
    source: str
    rows: int = 0
    submitted: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    fooled: int = 0
    votes: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    word_maps: dict[str, int] = field(default_factory=dict)  # explanation_state -> examples
    opened_round: int | None = None
    pipeline: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def markdown(self, writers: int, validators: int) -> list[str]:
        lines = [
            f"### Round {self.number} (writers' file `{self.source}`)",
            "",
            f"- {self.rows} examples replayed by {writers} simulated writers; submitted: {self.submitted}; "
            f"refused: {self.refused or 'none'}; fooled the live ensemble: {self.fooled} "
            f"({_pct(self.fooled / self.submitted if self.submitted else 0)})",
            f"- votes by {validators} simulated validators: {self.votes}; decided: {self.verdicts or 'none'}",
            f"- word maps: {self.word_maps or 'none'}",
            f"- pipeline #{self.pipeline.get('id')}: {self.pipeline.get('status')} "
            f"(round {self.number} closed, round {self.opened_round} opened)",
        ]
        if self.pipeline.get("error"):
            lines.append(f"- pipeline error: {self.pipeline['error']}")
        if self.pipeline.get("retrain_log"):
            lines.append(f"- retraining: {self.pipeline['retrain_log']}")
        comparison = self.pipeline.get("comparison")
        if comparison:
            lines += ["", f"The pipeline's comparison ({comparison['metric']}, × 100; tolerance "
                          f"{comparison.get('tolerance')} points; decision: "
                          f"{self.pipeline.get('decision') or 'none needed'}):",
                      "", "| test set | examples | live | new | difference (points) |", "|---|---:|---:|---:|---:|"]
            for r in comparison["rows"]:
                delta = "–" if r["delta"] is None else f"{r['delta']:+.1f}"
                lines.append(f"| {r['label']} | {r['size']} | {_num(r['live'])} | {_num(r['new'])} | {delta} |")
        lines += ["", "Time (s): " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()), ""]
        return lines


@dataclass
class EnsembleRow:
    """One ensemble on every held-out file: the live one at the start, or the one a closed round deployed."""

    round: int  # the round it serves
    label: str
    members: list[str]
    errors: dict[str, list[int]] = field(default_factory=dict)  # held-out file -> 1 where wrong, per example

    def interval(self, heldout: str) -> Interval:
        wrong = self.errors[heldout]
        return wilson(sum(wrong), len(wrong))

    def as_dict(self) -> dict[str, Any]:
        return {"round": self.round, "label": self.label, "members": self.members,
                "errors": {h: self.interval(h).as_dict() for h in self.errors},
                "size": {h: len(e) for h, e in self.errors.items()},
                "wrong": self.errors}  # per held-out example (in sample order): 1 where wrong


@dataclass
class PairedTest:
    """Two ensembles on the same held-out examples: the exact McNemar test and the paired difference."""

    heldout: str
    before: int  # index of the earlier row
    after: int
    fixed: int  # wrong before, right after
    broken: int  # right before, wrong after
    p_value: float
    difference: Interval  # after − before, paired bootstrap

    def as_dict(self) -> dict[str, Any]:
        return {"heldout": self.heldout, "before": self.before, "after": self.after, "fixed": self.fixed,
                "broken": self.broken, "p_value": self.p_value, "difference": self.difference.as_dict()}


@dataclass
class Report:
    task: str
    sources: list[str]
    heldouts: list[str]
    writers: int
    validators: int
    heldout_sizes: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, list[str]] = field(default_factory=dict)  # file -> lines left out (the site refuses them)
    rounds: list[RoundReport] = field(default_factory=list)
    ensembles: list[EnsembleRow] = field(default_factory=list)
    tests: list[PairedTest] = field(default_factory=list)
    stopped: str = ""  # why the simulation stopped before its last file, if it did
    seconds: dict[str, float] = field(default_factory=dict)

    def compare(self, resamples: int = 2000) -> None:
        """The paired tests between consecutive ensembles, per held-out file (and first against last when
        there are more than two)."""
        pairs = [(i, i + 1) for i in range(len(self.ensembles) - 1)]
        if len(self.ensembles) > 2:
            pairs.append((0, len(self.ensembles) - 1))
        self.tests = []
        for heldout in self.heldouts:
            for i, j in pairs:
                b, a = self.ensembles[i].errors[heldout], self.ensembles[j].errors[heldout]
                fixed, broken = discordant(b, a)
                self.tests.append(PairedTest(heldout, i, j, fixed, broken, mcnemar(fixed, broken),
                                             paired_bootstrap(b, a, resamples)))

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.task, "sources": self.sources, "heldouts": self.heldouts, "writers": self.writers,
                "validators": self.validators, "heldout_sizes": self.heldout_sizes, "skipped": self.skipped,
                "rounds": [r.__dict__ for r in self.rounds], "ensembles": [e.as_dict() for e in self.ensembles],
                "tests": [t.as_dict() for t in self.tests], "stopped": self.stopped, "seconds": self.seconds}

    def table(self) -> list[str]:
        """The round-over-round table: one row per ensemble, one column per held-out file."""
        head = "| ensemble | members | " + " | ".join(
            f"`{h}` (n = {self.heldout_sizes.get(h, 0)})" for h in self.heldouts) + " |"
        lines = [head, "|---|---|" + "---:|" * len(self.heldouts)]
        for row in self.ensembles:
            cells = []
            for h in self.heldouts:
                iv = row.interval(h)
                cells.append(f"{_pct(iv.value)} ({_pct(iv.low)} – {_pct(iv.high)})")
            lines.append(f"| {row.label} | {', '.join(row.members)} | " + " | ".join(cells) + " |")
        return lines

    def test_table(self) -> list[str]:
        lines = ["| held-out file | ensembles | error change | 95 % interval (paired bootstrap) | "
                 "wrong before only | wrong after only | McNemar p |", "|---|---|---:|---|---:|---:|---:|"]
        for t in self.tests:
            d = t.difference
            lines.append(f"| `{t.heldout}` | {self.ensembles[t.before].label} → {self.ensembles[t.after].label} | "
                         f"{_signed(d.value)} | {_signed(d.low)} – {_signed(d.high)} | {t.fixed} | {t.broken} | "
                         f"{_p(t.p_value)} |")
        return lines

    def markdown(self) -> str:
        lines = [
            f"# Round simulation: {self.task}",
            "",
            "- writers' files (one round each, in order): " + ", ".join(f"`{s}`" for s in self.sources),
            "- held-out files: " + ", ".join(f"`{h}` ({self.heldout_sizes.get(h, 0)} examples)" for h in self.heldouts),
            f"- {self.writers} simulated writers, {self.validators} simulated validators; no word maps computed",
        ]
        for name, errors in self.skipped.items():
            lines.append(f"- `{name}`: {len(errors)} line(s) left out, as the site would refuse them ({errors[0]}"
                         f"{' …' if len(errors) > 1 else ''})")
        if self.stopped:
            lines.append(f"- stopped early: {self.stopped}")
        lines += [
            "",
            "## Held-out error of each round's ensemble",
            "",
            "The share of each held-out file's examples the ensemble gets wrong (the kind's `is_fooled` rule), with "
            "its 95 % Wilson interval; the first row is the live ensemble at the start, each next row the one the "
            "closed round deployed.",
            "",
            *self.table(),
        ]
        if self.tests:
            lines += [
                "",
                "## Paired tests between rounds",
                "",
                "The same held-out examples under two ensembles: the exact McNemar test (two-sided binomial test on "
                "the discordant pairs: examples only the earlier ensemble gets wrong against examples only the later "
                "one gets wrong), and the error change (later − earlier) with a 95 % paired bootstrap interval "
                "(2,000 resamples). No correction for the number of tests.",
                "",
                *self.test_table(),
            ]
        lines += ["", "## Each round", ""]
        for r in self.rounds:
            lines += r.markdown(self.writers, self.validators)
        lines.append("Time (s): " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()))
        return "\n".join(lines) + "\n"


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def _signed(value: float) -> str:
    return f"{value * 100:+.1f} points"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}"


def _p(value: float) -> str:
    return "1" if value >= 1 else f"{value:.3g}"


# --- reading the files -----------------------------------------------------------------------------------


def read_rows(task: Task, path: Path, limit: int | None = None, seed: int | None = None,
              preset: str | None = None, skipped: list[str] | None = None) -> list[Row]:
    """The file's examples in the task's shape: its context fields, input fields and a `label` (or `target`), and
    optionally the `writer_label` a writer claims (validators then vote it incorrect when it is not the label).
    With `preset` (tasks.importing.PRESETS: e.g. "dynasent", "sst2") the file keeps its own field names and labels
    and the importer's mapping and checks turn each line into the task's shape; a line the site would refuse
    (e.g. longer than its text limit) is left out and described in `skipped` when given (else it is an error).
    With `seed`, a stable random sample of `limit` rows; else the first `limit`."""
    rows = _plain_rows(task, path) if preset is None else _preset_rows(task, path, preset, skipped)
    if seed is not None and limit is not None and limit < len(rows):
        rows = random.Random(seed).sample(rows, limit)
    return rows[:limit] if limit is not None else rows


def _plain_rows(task: Task, path: Path) -> list[Row]:
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
                                      f"needs {needed} and a label; a file in a dataset's own shape needs its "
                                      f"import preset: FILE@PRESET)")
            rows.append(Row({f: raw[f] for f in config.context_fields if f in raw},
                            {f: raw[f] for f in config.input_fields},
                            target, str(raw.get("uid") or number), raw.get("writer_label", target)))
    return rows


def _preset_rows(task: Task, path: Path, preset: str, skipped: list[str] | None) -> list[Row]:
    from tasks.importing import ImportReport, ImportSpec, parse_rows, read_jsonl

    try:
        spec = ImportSpec.from_preset(preset, target="eval")
    except ValueError as exc:
        raise SimulationError(f"{path}: {exc}") from None
    report = ImportReport()
    records = parse_rows(task, spec, read_jsonl(path), report)
    if report.errors and skipped is not None and len(report.errors) < len(records):
        skipped += [str(e) for e in report.errors]
    elif report.errors:
        shown = "; ".join(str(e) for e in report.errors[:5])
        raise SimulationError(f"{path} (preset {preset}): {len(report.errors)} bad row(s): {shown}")
    return [Row(r["context"], r["input"], r["target"], r["external_id"] or str(i), r["target"])
            for i, r in enumerate(records, 1)]


def data_files(files: Path | DataFile | Sequence[Path | DataFile], limit: int | None) -> list[DataFile]:
    """Files as DataFiles, each with its own limit or else `limit`."""
    if isinstance(files, (Path, DataFile, str)):
        files = [files]
    out = []
    for f in files:
        spec = f if isinstance(f, DataFile) else DataFile(Path(f))
        out.append(spec if spec.limit is not None else DataFile(spec.path, limit, spec.name, spec.preset))
    return out


def unique_names(files: Sequence[DataFile]) -> list[str]:
    """Each file's name as the report shows it: the path as given, numbered when two are the same."""
    names: list[str] = []
    for f in files:
        name = str(f)
        while name in names:
            name += "'"
        names.append(name)
    return names


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
    return [int(bool(decide(task, kind.clean_target(config, r.context, r.target), p).fooled))
            for r, p in zip(rows, predictions, strict=True)]


def context_for(task: Task, payload: dict[str, Any]) -> Context | None:
    if not payload:
        return None
    context, _ = Context.objects.get_or_create(task=task, key=payload_hash(payload),
                                               defaults={"payload": payload, "source": "simulation"})
    return context


def live_members(task: Task) -> list[ModelVersion]:
    return active_members(task.current_round)


def simulate(task: Task, sources: Path | DataFile | Sequence[Path | DataFile],
             heldout: Path | DataFile | Sequence[Path | DataFile], *, writers: int = 4, validators: int = 3,
             limit: int | None = None, heldout_limit: int | None = None, options: dict[str, Any] | None = None,
             on_worse: str = "approve", bootstrap: bool = False, log: Log = print) -> Report:
    """Replay each of `sources` through one round of `task` in turn (round n, n + 1, …), closing each through
    the pipeline, and measure each round's ensemble on every `heldout` file."""
    from django.test.utils import override_settings  # a command's tool: not imported by the dashboard's pages

    if on_worse not in ON_WORSE:
        raise SimulationError(f"on_worse must be one of {', '.join(ON_WORSE)}")
    if writers < 1 or validators < 1:
        raise SimulationError("at least one writer and one validator")
    files, held_files = data_files(sources, limit), data_files(heldout, heldout_limit)
    if not files or not held_files:
        raise SimulationError("at least one writers' file and one held-out file")
    held_names = unique_names(held_files)
    clock: dict[str, float] = {}
    started = time.perf_counter()
    report = Report(task.slug, [str(f) for f in files], held_names, writers, validators)
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
        names = unique_names(files)
        replays = [read_rows(task, f.path, f.limit, preset=f.preset, skipped=report.skipped.setdefault(n, []))
                   for n, f in zip(names, files, strict=True)]  # every file checked before any round runs
        held = {name: read_rows(task, f.path, f.limit, seed=0, preset=f.preset,
                                skipped=report.skipped.setdefault(name, []))
                for name, f in zip(held_names, held_files, strict=True)}
        report.skipped = {name: errors for name, errors in report.skipped.items() if errors}
        for name, errors in report.skipped.items():
            log(f"{name}: {len(errors)} line(s) left out, as the site would refuse them ({errors[0]})")
        report.heldout_sizes = {name: len(rows) for name, rows in held.items()}

        mark = time.perf_counter()
        report.ensembles.append(measure(task, f"round {task.current_round.number} (live at start)", held, log))
        clock["held-out, live at start"] = time.perf_counter() - mark

        people = [simulated_user(f"sim-{task.slug}-writer-{i + 1}", roles.ANNOTATOR) for i in range(writers)]
        judges = [simulated_user(f"sim-{task.slug}-validator-{i + 1}", roles.VALIDATOR) for i in range(validators)]
        for f, rows in zip(files, replays, strict=True):
            acknowledge([*people, *judges], task)  # the guidelines' current version, each round
            round_report = play_round(task, owner, people, judges, rows, str(f), options, on_worse, log)
            report.rounds.append(round_report)
            status = round_report.pipeline.get("status")
            if status != PipelineRun.Status.DONE:
                report.stopped = (f"round {round_report.number}'s pipeline is {status}"
                                  f"{' (--on-worse stop)' if status == PipelineRun.Status.AWAITING else ''}; "
                                  f"{len(files) - len(report.rounds)} writers' file(s) not replayed")
                log(report.stopped)
                break
            mark = time.perf_counter()
            kept = round_report.pipeline.get("decision") == PipelineRun.Decision.DISCARDED
            label = (f"round {round_report.opened_round} (after round {round_report.number}"
                     f"{', live one kept' if kept else ''})")
            report.ensembles.append(measure(task, label, held, log))
            round_report.seconds["held-out after"] = round(time.perf_counter() - mark, 1)
    report.compare()
    clock["total"] = time.perf_counter() - started
    report.seconds = {k: round(v, 1) for k, v in clock.items()}
    return report


def measure(task: Task, label: str, held: dict[str, list[Row]], log: Log) -> EnsembleRow:
    """The task's live ensemble on every held-out file."""
    members = live_members(task)
    if not members:
        raise SimulationError(f"round {task.current_round.number} has no live ensemble to measure")
    row = EnsembleRow(task.current_round.number, label, [v.name for v in members])
    for name, rows in held.items():
        row.errors[name] = ensemble_errors(task, members, rows)
        log(f"{label} on {name}: {sum(row.errors[name])}/{len(rows)} wrong")
    return row


def play_round(task: Task, owner, people, judges, rows: list[Row], source: str, options: dict[str, Any] | None,
               on_worse: str, log: Log) -> RoundReport:
    """The writers submit every row into the open round (no word maps), the validators vote through the queue,
    and the owner closes the round through the pipeline (approving or discarding a worse ensemble as told)."""
    from annotation.models import Example

    round_ = task.current_round
    report = RoundReport(round_.number, source, rows=len(rows))
    writers = len(people)
    mark = time.perf_counter()
    expected: dict[int, Any] = {}
    for i, row in enumerate(rows):
        context = context_for(task, row.context)
        try:
            result = submit(people[i % writers], task, Submission(
                input=row.input, target=row.claimed, context_id=context.pk if context else None,
                round_number=round_.number, idempotency_key=f"sim-{round_.number}-{row.uid}"[:64]), word_map=False)
        except DomainError as exc:
            report.refused[type(exc).__name__] = report.refused.get(type(exc).__name__, 0) + 1
            continue
        example = result.example
        example.refresh_from_db(fields=["fooled", "target", "scoring_state"])
        expected[example.pk] = task.kind_impl.clean_target(task.typed_config, row.context, row.target)
        report.submitted += 1
        report.fooled += int(bool(example.fooled))
        if (i + 1) % 50 == 0:
            log(f"round {round_.number}: submitted {i + 1}/{len(rows)} ({report.fooled} fooled)")
    report.seconds["writing"] = round(time.perf_counter() - mark, 1)

    mark = time.perf_counter()
    report.votes = vote_everything(task, judges, expected)
    mine = Example.objects.filter(pk__in=list(expected))
    for state in mine.values_list("consensus", flat=True):
        report.verdicts[state] = report.verdicts.get(state, 0) + 1
    for state in mine.values_list("explanation_state", flat=True):
        report.word_maps[state or "none"] = report.word_maps.get(state or "none", 0) + 1
    report.seconds["validation"] = round(time.perf_counter() - mark, 1)
    log(f"round {round_.number}: {report.votes} votes; consensus: {report.verdicts}")

    mark = time.perf_counter()
    run = services.start_pipeline(task, owner, options, f"simulation: close round {round_.number}")
    run.refresh_from_db()
    if run.status == PipelineRun.Status.AWAITING and on_worse != "stop":
        log(f"the retrained ensemble is worse than the live one on {run.comparison.get('worse')}: {on_worse}")
        act = services.approve_pipeline if on_worse == "approve" else services.discard_pipeline
        run = act(run, owner)
        run.refresh_from_db()
    report.seconds["closing the round"] = round(time.perf_counter() - mark, 1)
    retrain = run.steps.filter(name="retrain").first()
    report.pipeline = {"id": run.pk, "status": run.status, "error": run.error, "decision": run.decision,
                       "comparison": run.comparison,
                       "retrain_log": (retrain.log.strip().splitlines() or [""])[0][9:] if retrain else ""}
    task.refresh_from_db()
    report.opened_round = task.current_round.number if task.current_round else None
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
