"""Prediction-file uploads: a researcher's predictions for a task's public test sets, scored like a model on what
predictions allow, and ranked on the leaderboard with a "predictions only" mark (docs/evaluation/predictions.md).

The test sets are the leaderboard's (`rounds.datasets.test_sets`: each round's test split, the base test set, the
base held-out slice). Their rows are named by public ids defined here, because a `LabelledSet`'s keys cannot be
shown: a round row's key hashes the example id *with its label*, so anyone could recover the label by hashing each
candidate. The ids:

  "example-<pk>"   a round's test example (the example's id, as the dataset exports' `example_id` names it)
  "item-<pk>"      an imported test or held-out item (the LabeledItem's id)

A round's test split is read as stored (`exports.splits.in_split`; no split is assigned here), so the inputs a
researcher downloads, the rows a file is scored on and the leaderboard column's size (`rounds.datasets.set_size`)
are the same rows.

A file is JSON lines, one prediction a line: {"id": "item-12", "label": "positive"} for a classification kind,
{"id": "example-7", "answer": {"text": "Canberra", "start": 31}} for extractive QA (the span must lie inside the
passage and match it). Every line that fails is reported with its line number, id, field and reason; the lines
that pass are scored. Per test set: `scored` when the file predicts every row (the kind's metrics with their 95 %
intervals, `rounds.evaluation.scored`; ranked), `incomplete` when it misses some (how many is said; the figures on
the rows it covers are shown but never ranked, and withheld under PARTIAL_MIN_SHARE of the set: a few rows'
accuracy would give their labels away), `missing` when it predicts none. Scoring runs inline: it is arithmetic on
the rows (no model), well under a second for the sets here (docs/evaluation/predictions.md gives the figure).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from dynabench_site.errors import InvalidInput, NotFound, NotPermitted
from dynabench_site.throttles import Throttled
from exports import splits
from modelzoo.intervals import interval_of
from rounds import datasets, uploads
from rounds.evaluation import scored
from rounds.models import PredictionScore, PredictionUpload
from tasks import roles
from tasks.access import visible_tasks
from tasks.models import LabeledItem, Task
from zoo.data import LabelledSet

MB = 1024 * 1024
MAX_BYTES = 10 * MB  # a prediction file's cap (the site's body cap for these routes is 20 MB: bodylimit)
MAX_LINES = 200_000
MAX_LINE_CHARS = 20_000
REPORT_MAX_ERRORS = 1000  # errors kept in the stored report (all are counted)
DAILY_LIMIT = 10  # prediction uploads per researcher and task in 24 hours (owners and admins: no limit)
PARTIAL_MIN_SHARE = 0.5  # an incomplete set's figures are shown only when the file covers this share of it
EXAMPLE, ITEM = "example-", "item-"
OUTPUT_FIELDS = {"label": "label", "span": "answer"}
CODE_LABELS = {"bad_json": "not JSON", "not_object": "not an object", "too_long": "line too long",
               "missing_id": "no id", "unknown_field": "unknown field", "unknown_id": "unknown id",
               "duplicate_id": "duplicate id", "missing_output": "no prediction", "bad_label": "not a label",
               "bad_span": "malformed answer", "span_outside": "span outside the passage",
               "span_mismatch": "span not the passage's text"}


class PredictionsRefused(uploads.UploadRefused):
    """The file cannot be read at all (too large, not UTF-8 text, empty, no name): 400, nothing stored."""

    def __init__(self, errors: list[str], field: str = "file"):
        super().__init__(errors, field=field)


# --- the test sets as a researcher sees them ---------------------------------------------------------


@dataclass
class Row:
    id: str
    context: dict[str, Any]
    input: dict[str, Any]
    target: Any


def set_rows(task: Task, name: str) -> list[Row]:
    """Test set `name`'s rows with their public ids, in id order (see the module docstring)."""
    source, _, split = name.partition("/")
    if source.startswith("round-"):
        round_ = task.rounds.filter(number=int(source.removeprefix("round-"))).first()
        if round_ is None:
            return []
        rows = (splits.in_split(round_, split or "test").order_by("id")
                .values_list("id", "context__payload", "input", "target", "validated_label"))
        return [Row(f"{EXAMPLE}{pk}", context or {}, model_input, splits.learned_target(target, validated))
                for pk, context, model_input, target, validated in rows.iterator(chunk_size=2000)]
    items = LabeledItem.objects.filter(task=task, split=split or "test").order_by("id")
    if source not in ("", "*"):
        items = items.filter(collection__in=source.split(","))
    return [Row(f"{ITEM}{pk}", context or {}, model_input, target)
            for pk, context, model_input, target in items.values_list("id", "context", "input", "target")
            .iterator(chunk_size=2000)]


def shown(task: Task, row: Row) -> dict[str, Any]:
    """A row as a researcher may see it: its id, context and input fields, never its label."""
    config = task.typed_config
    return {"id": row.id, "context": {f: row.context.get(f) for f in config.context_fields if f in row.context},
            "input": {f: row.input.get(f) for f in config.input_fields if f in row.input}}


def public_sets(task: Task) -> list[dict[str, Any]]:
    """The test sets a prediction file is scored on: name, label, what each is, its size (the leaderboard's)."""
    return datasets.describe_sets(task, datasets.test_sets(task))


def output_kind(task: Task) -> str | None:
    """What a line predicts: "label", "span", or None (a generative kind: nothing to predict)."""
    kind = task.kind_impl
    if kind.generative:
        return None
    return "span" if kind.answer_is_span else "label" if kind.target_is_label else None


def line_format(task: Task) -> str:
    """One example line of a prediction file for this task."""
    if output_kind(task) == "span":
        return '{"id": "example-7", "answer": {"text": "the answer span", "start": 31}}'
    labels = list(getattr(task.typed_config, "labels", []) or ["label"])
    return json.dumps({"id": "item-12", "label": labels[0]})


# --- who may upload, and how often -------------------------------------------------------------------


def can_upload(user, task: Task) -> bool:
    """The people who may upload a model (`rounds.uploads.can_upload`: researchers, owners, admins)."""
    return uploads.can_upload(user, task)


def can_see(user, upload: PredictionUpload) -> bool:
    """The row-level report and the per-set figures: the uploader, the task's owners and admins."""
    return user.is_authenticated and (upload.uploaded_by_id == user.pk or roles.can_manage(user, upload.task))


def visible_uploads(user, task: Task):
    """The uploads of `task` that `user` may list: everyone's for the task's owners and admins, else their own."""
    rows = PredictionUpload.objects.filter(task=task).select_related("task", "uploaded_by")
    return rows if roles.can_manage(user, task) else rows.filter(uploaded_by=user)


def get_visible(user, pk: int) -> PredictionUpload:
    """Upload `pk` for its uploader and the task's owners and admins (`can_see`, on a task they can see); NotFound
    for anyone else, as for an upload that does not exist."""
    upload = PredictionUpload.objects.select_related("task", "uploaded_by").filter(pk=pk).first()
    if upload is None or not can_see(user, upload) or not visible_tasks(user).filter(pk=upload.task_id).exists():
        raise NotFound("No such prediction upload.")
    return upload


def check_rate(user, task: Task) -> None:
    """At most DAILY_LIMIT uploads per researcher and task in 24 hours: each scored file says something about
    the hidden labels, so a flood of files could recover them. Owners and admins know the labels: no limit."""
    if roles.can_manage(user, task):
        return
    since = timezone.now() - timedelta(days=1)
    recent = list(PredictionUpload.objects.filter(task=task, uploaded_by=user, created_at__gte=since)
                  .order_by("created_at").values_list("created_at", flat=True)[:DAILY_LIMIT])
    if len(recent) >= DAILY_LIMIT:
        wait = max(1, int((recent[0] + timedelta(days=1) - timezone.now()).total_seconds()))
        raise Throttled(f"You uploaded {DAILY_LIMIT} prediction files for {task.name} in the last 24 hours, the "
                        f"most allowed; try again in {wait // 3600} h {wait % 3600 // 60} min.", wait)


# --- reading and checking a file ---------------------------------------------------------------------


@dataclass
class Checked:
    lines: int
    accepted: dict[str, dict[str, Any]]  # id -> the prediction as the kind's evaluate reads it
    errors: list[dict[str, Any]]
    error_count: int
    codes: Counter

    def report(self) -> dict[str, Any]:
        return {"errors": self.errors, "error_count": self.error_count, "by_code": dict(self.codes),
                "truncated": self.error_count > len(self.errors), "max_errors": REPORT_MAX_ERRORS}


def read_file(file) -> str:
    """The file's text, or a refusal naming what is wrong with it as a whole."""
    if file is None:
        raise PredictionsRefused(["choose a prediction file (JSON lines)"])
    size = getattr(file, "size", None) or 0
    if size > MAX_BYTES:
        raise PredictionsRefused([f"the file is {_bytes(size)}; the limit is {_bytes(MAX_BYTES)}"])
    raw = b"".join(file.chunks()) if hasattr(file, "chunks") else file.read()
    if len(raw) > MAX_BYTES:
        raise PredictionsRefused([f"the file is {_bytes(len(raw))}; the limit is {_bytes(MAX_BYTES)}"])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PredictionsRefused([f"the file is not UTF-8 text (byte {exc.start}); save it as UTF-8 JSON lines"]) from None
    if not text.strip():
        raise PredictionsRefused(["the file is empty: give one JSON object per line"])
    if text.count("\n") + 1 > MAX_LINES:
        raise PredictionsRefused([f"the file has more than {MAX_LINES} lines; the limit is {MAX_LINES}"])
    return text


def _bytes(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB // 10 else f"{n} bytes"


class _Report:
    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []
        self.count = 0
        self.codes: Counter = Counter()

    def add(self, line: int, id_: Any, field: str, code: str, message: str) -> None:
        self.count += 1
        self.codes[code] += 1
        if len(self.errors) < REPORT_MAX_ERRORS:
            self.errors.append({"line": line, "id": id_ if isinstance(id_, str | int) else None, "field": field,
                                "code": code, "message": message})


def check(task: Task, text: str, rows: dict[str, Row]) -> Checked:
    """Every line of `text` checked against the task's output and the test sets' rows (`rows`, by public id)."""
    out = output_kind(task)
    if out is None:
        raise InvalidInput("A chat task's models are language models answering people: there is nothing to "
                           "predict, so prediction files are not accepted.", field="file")
    key = OUTPUT_FIELDS[out]
    labels = list(getattr(task.typed_config, "labels", []) or [])
    report, accepted, first_line = _Report(), {}, {}
    lines = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        lines += 1
        if len(line) > MAX_LINE_CHARS:
            report.add(number, None, "line", "too_long", f"the line is {len(line)} characters; at most {MAX_LINE_CHARS}")
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            report.add(number, None, "line", "bad_json", f"not valid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(value, dict):
            report.add(number, None, "line", "not_object", f'must be a JSON object such as {line_format(task)}')
            continue
        id_ = value.get("id")
        if not isinstance(id_, str) or not id_:
            hint = f' (ids are text such as "{ITEM}12" or "{EXAMPLE}7")' if isinstance(id_, int) else ""
            report.add(number, id_, "id", "missing_id", f"needs an \"id\": the test row it predicts{hint}")
            continue
        unknown = sorted(set(value) - {"id", key})
        if unknown:
            report.add(number, id_, unknown[0], "unknown_field",
                       f"unknown field(s) {', '.join(unknown)}; a line has \"id\" and \"{key}\"")
            continue
        row = rows.get(id_)
        if row is None:
            report.add(number, id_, "id", "unknown_id", f"no public test row has the id {id_!r} "
                       "(the test-set download lists them)")
            continue
        if id_ in first_line:
            report.add(number, id_, "id", "duplicate_id", f"line {first_line[id_]} already predicts {id_}; the first "
                       "line counts")
            continue
        if key not in value:
            report.add(number, id_, key, "missing_output", f"needs \"{key}\": {line_format(task)}")
            continue
        problem = (_label_problem(value[key], labels) if out == "label"
                   else _span_problem(task, row, value[key]))
        if problem:
            report.add(number, id_, key, *problem)
            continue
        first_line[id_] = number
        accepted[id_] = ({"label": value[key]} if out == "label"
                         else {"text": value[key]["text"], "start": value[key]["start"]})
    return Checked(lines, accepted, report.errors, report.count, report.codes)


def _label_problem(label: Any, labels: list[str]) -> tuple[str, str] | None:
    if not isinstance(label, str) or label not in labels:
        return "bad_label", f"{json.dumps(label)[:60]} is not one of the task's labels: {', '.join(labels)}"
    return None


def _span_problem(task: Task, row: Row, answer: Any) -> tuple[str, str] | None:
    if not isinstance(answer, dict) or set(answer) != {"text", "start"}:
        return "bad_span", 'must be an object {"text": the answer span, "start": its character offset in the passage}'
    text, start = answer["text"], answer["start"]
    if not isinstance(text, str) or not text.strip():
        return "bad_span", "the answer text must be a non-empty string"
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        return "bad_span", "start must be a non-negative whole number (a character offset into the passage)"
    passage = task.kind_impl.passage(task.typed_config, row.context)
    if start + len(text) > len(passage):
        return "span_outside", (f"the span {start}–{start + len(text)} lies outside the passage "
                                f"({len(passage)} characters)")
    if passage[start:start + len(text)] != text:
        found = passage[start:start + len(text)]
        return "span_mismatch", f"the passage has {found[:60]!r} at character {start}, not {text[:60]!r}"
    return None


# --- scoring -----------------------------------------------------------------------------------------


def score_sets(task: Task, sets: dict[str, list[Row]], accepted: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each test set's status, coverage and figures (see the module docstring)."""
    kind, config = task.kind_impl, task.typed_config
    out = []
    for name, rows in sets.items():
        covered = [r for r in rows if r.id in accepted]
        size = len(rows)
        if not covered:
            status, metrics = PredictionScore.Status.MISSING, {}
        else:
            status = PredictionScore.Status.SCORED if len(covered) == size else PredictionScore.Status.INCOMPLETE
            metrics = {}
            if status == PredictionScore.Status.SCORED or len(covered) >= PARTIAL_MIN_SHARE * size:
                labelled = LabelledSet(name)
                for r in covered:
                    labelled.add(kind.model_input(config, r.context, r.input), r.target, r.id)
                metrics = scored(task, labelled, [accepted[r.id] for r in covered])
        out.append({"dataset": name, "size": size, "covered": len(covered), "status": status, "metrics": metrics})
    return out


def test_rows(task: Task) -> dict[str, list[Row]]:
    return {name: set_rows(task, name) for name in datasets.test_sets(task)}


def submit(task: Task, user, name: Any, file, description: Any = "") -> PredictionUpload:
    """Check a prediction file, store it with its row-level report, and score it on every test set.

    Raises NotPermitted (not a researcher), Throttled (DAILY_LIMIT), PredictionsRefused (no name; a file that cannot
    be read as a whole) or InvalidInput (a chat task): nothing is stored then. A file whose every line fails is
    stored as rejected, with its report (the caller answers 400 and points to it)."""
    if not can_upload(user, task):
        raise NotPermitted("Only researchers, task owners and admins may upload predictions.")
    if output_kind(task) is None:
        check(task, "", {})  # raises the chat kind's refusal
    name = uploads.text_field(name, "name").strip()[:100]
    description = uploads.text_field(description, "description").strip()
    if not name:
        raise PredictionsRefused(["give the predictions a name (it is shown on the leaderboard)"], field="name")
    check_rate(user, task)
    text = read_file(file)
    sets = test_rows(task)
    rows = {r.id: r for set_ in sets.values() for r in set_}
    checked = check(task, text, rows)
    results = score_sets(task, sets, checked.accepted) if checked.accepted else []
    status = PredictionUpload.Status.SCORED if checked.accepted else PredictionUpload.Status.REJECTED
    error = "" if checked.accepted else (f"no line could be used: {checked.error_count} error(s)" if checked.lines
                                         else "the file holds no prediction")
    with transaction.atomic():
        # Counted again under a lock on the uploader: parallel uploads of one researcher are stored one at a time,
        # so the daily limit holds however many arrive at once (the check above spares reading a refused file).
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        check_rate(user, task)
        upload = PredictionUpload.objects.create(
            task=task, uploaded_by=user, name=name, description=description,
            filename=str(getattr(file, "name", "") or "")[:200], rows=checked.lines, accepted=len(checked.accepted),
            report=checked.report(), status=status, error=error)
        PredictionScore.objects.bulk_create([PredictionScore(upload=upload, **r) for r in results])
    return upload


# --- what the pages and the API show -----------------------------------------------------------------


def summary(upload: PredictionUpload, sets: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per test set, in the leaderboard's order: status, size, coverage, missing rows, and the figures with
    intervals (metric, value, low, high), and whether the set's size has changed since (stale). `sets`: the task's
    `public_sets`, when the caller lists several uploads (counted once, not per upload)."""
    task = upload.task
    columns = {c["name"]: c for c in (public_sets(task) if sets is None else sets)}
    metrics = task.kind_impl.metrics
    out = []
    by_set = {s.dataset: s for s in upload.scores.all()}
    for name in [*columns, *sorted(set(by_set) - set(columns))]:
        score, column = by_set.get(name), columns.get(name)
        size_now = column["size"] if column else None
        if score is None:
            out.append({"dataset": name, "label": datasets.dataset_label(name), "status": "missing",
                        "status_label": "No predictions", "size": size_now, "covered": 0, "missing": size_now,
                        "figures": [], "ranked": False, "stale": False, "withheld": False})
            continue
        figures = []
        for metric in metrics:
            value = score.metrics.get(metric)
            if value is None:
                continue
            interval = interval_of(score.metrics, metric, score.covered) or [None, None]
            figures.append({"metric": metric, "label": metric.replace("_", " "), "value": value,
                            "low": interval[0], "high": interval[1]})
        out.append({"dataset": name, "label": datasets.dataset_label(name), "status": score.status,
                    "status_label": score.get_status_display(), "size": score.size, "covered": score.covered,
                    "missing": score.size - score.covered, "figures": figures,
                    "ranked": score.status == PredictionScore.Status.SCORED and column is not None,
                    "stale": column is not None and size_now != score.size,
                    "withheld": score.status == PredictionScore.Status.INCOMPLETE and not figures})
    return out


def payload(upload: PredictionUpload, *, errors: bool = True, sets: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    """An upload as the API answers it: what was read, accepted and refused, the report, and each set's figures."""
    report = upload.report or {}
    out = {"id": upload.pk, "task": upload.task.slug, "name": upload.name, "description": upload.description,
           "filename": upload.filename, "status": upload.status, "error": upload.error,
           "uploaded_by": upload.uploaded_by.username, "created_at": upload.created_at,
           "rows": upload.rows, "accepted": upload.accepted, "error_count": report.get("error_count", 0),
           "errors_by_code": report.get("by_code", {}), "test_sets": summary(upload, sets)}
    if errors:
        out["errors"] = report.get("errors", [])
        out["errors_truncated"] = bool(report.get("truncated"))
    return out


def leaderboard_rows(task: Task, columns: list[dict[str, Any]], counted: list[str], metric: str) -> list[dict[str, Any]]:
    """One leaderboard row per scored upload, shaped as `rounds.leaderboard._row`'s, with no throughput or memory
    (predictions have neither) and `predictions_only` set. Only a set the file covers fully has a figure here, and
    an upload that covers no set fully has no row."""
    rows = []
    uploads_ = (PredictionUpload.objects.filter(task=task, status=PredictionUpload.Status.SCORED)
                .select_related("uploaded_by").prefetch_related("scores"))
    for upload in uploads_:
        by_set = {s.dataset: s for s in upload.scores.all() if s.status == PredictionScore.Status.SCORED}
        if not by_set:  # no set covered fully: nothing to rank (its page shows what it has)
            continue
        cells, scores = [], {}
        for column in columns:
            score = by_set.get(column["name"])
            value = score.metrics.get(metric) if score else None
            interval = (interval_of(score.metrics, metric, score.size) if score else None) or [None, None]
            cells.append(None if value is None else {"value": value, "low": interval[0], "high": interval[1],
                                                      "size": score.size, "stale": score.size != column["size"]})
            scores[column["name"]] = value
        known = [scores[name] for name in counted if scores.get(name) is not None]
        rows.append({
            "id": f"p{upload.pk}", "version": None, "name": upload.name, "status": upload.status,
            "source": f"predictions by {upload.uploaded_by.username}", "predictions_only": True,
            "opponent": None, "upload_id": None, "prediction_upload_id": upload.pk, "in_next_ensemble": False,
            "rounds": [], "scores": scores, "cells": cells,
            "performance": round(sum(known) / len(known), 4) if known else None,
            "throughput": None, "memory_mb": None, "dynascore": None,
        })
    return rows
