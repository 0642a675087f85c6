"""Use cases: stream a round's data, publish an immutable snapshot, read a published one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.translation import gettext as _

from dynabench_site.errors import InvalidInput, Unavailable
from dynabench_site.text import quote
from exports import splits
from exports.bundle import BundleResult, sha256_file, write_bundle
from exports.formats import FORMATS, get_format
from exports.models import DatasetSnapshot
from exports.streaming import stream_file, stream_records, stream_zip_member
from notify import events as notify_events
from tasks.models import Round, Task
from validation import reliability

DEFAULT_FORMATS = tuple(FORMATS)  # a bundle holds every registered format unless asked otherwise


class ExportError(InvalidInput, ValueError):
    """A bad request for data (unknown round, format, split or version); the message says what is wrong."""


class SnapshotFileMissing(Unavailable):
    """A published bundle is gone from the disk: an operator must restore it (never rebuilt silently)."""


@dataclass(frozen=True)
class Download:
    chunks: Iterator[bytes]
    filename: str
    media_type: str
    sha256: str | None = None
    size: int | None = None


def export_root() -> Path:
    root = Path(settings.EXPORTS_DIR)
    root.mkdir(parents=True, exist_ok=True)
    return root


def find_round(task: Task, number: str | int) -> Round:
    rounds = list(task.rounds.values_list("number", flat=True))
    try:
        found = task.rounds.get(number=int(number))
    except (ValueError, Round.DoesNotExist):
        have = ", ".join(map(str, rounds)) or "none yet"
        raise ExportError(f"task {task.slug!r} has no round {quote(number)}; its rounds: {have}") from None
    check_not_generative(found)
    return found


def check_not_generative(round: Round) -> None:
    """A chat task's rounds are conversations, not examples: they have their own downloads (chat.exports_api), and
    no splits or snapshots here."""
    task = round.task
    if task.kind_impl.generative:
        raise ExportError(f"task {task.slug!r} is a {task.kind} task: its round {round.number} is downloaded from "
                          f"/api/tasks/{task.slug}/rounds/{round.number}/chat/<dataset>/ (conversations, preferences, "
                          "red-team, card or bundle; docs/chat/exports.md), and has no snapshots to publish")


def check_formats(names: list[str] | tuple[str, ...]) -> list[str]:
    try:
        return list(dict.fromkeys(get_format(name).name for name in names)) or list(DEFAULT_FORMATS)
    except ValueError as exc:
        raise ExportError(str(exc)) from None


def live_file(round: Round, split: str, fmt_name: str) -> Download:
    """The current data of one split (owners): splits are assigned first, then rows stream."""
    try:
        fmt, split = get_format(fmt_name), splits.check_split(split)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    splits.assign_splits(round)
    reliability.refresh(round.task)
    chunks = stream_records(round.task, splits.in_split(round, split), fmt)
    return Download(chunks, f"{round.task.slug}-round{round.number}-live-{split}.{fmt.extension}", fmt.media_type)


def live_bundle(round: Round, formats: list[str], include_excluded: bool = False) -> Download:
    """A zip of the current data, written to a temporary file and streamed (then deleted)."""
    formats = check_formats(formats)
    handle, name = tempfile.mkstemp(prefix="live-", suffix=".zip", dir=_tmp_dir())
    with os.fdopen(handle, "wb") as sink:
        write_bundle(round, sink, formats, version="live", include_excluded=include_excluded, work_dir=_tmp_dir())
    path = Path(name)
    return Download(
        stream_file(path, delete=True), f"{round.task.slug}-round{round.number}-live.zip", "application/zip"
    )


def _tmp_dir() -> Path:
    path = export_root() / "tmp"
    path.mkdir(exist_ok=True)
    return path


def latest_snapshot(round: Round) -> DatasetSnapshot | None:
    return round.snapshots.order_by("-version").first()


def find_snapshot(round: Round, version: str) -> DatasetSnapshot:
    if version == "latest":
        snapshot = latest_snapshot(round)
        if snapshot is None:
            raise ExportError(f"round {round.number} has no published snapshot yet")
        return snapshot
    try:
        return round.snapshots.get(version=int(version.removeprefix("v")))
    except (ValueError, DatasetSnapshot.DoesNotExist):
        raise ExportError(f"round {round.number} has no snapshot version {quote(version)}") from None


def snapshot_path(snapshot: DatasetSnapshot) -> Path:
    return export_root() / snapshot.path


def snapshot_file(snapshot: DatasetSnapshot, split: str, fmt_name: str) -> Download:
    try:
        fmt, split = get_format(fmt_name), splits.check_split(split)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if fmt.name not in snapshot.formats:
        raise ExportError(
            f"snapshot v{snapshot.version} holds the formats {', '.join(snapshot.formats)}, not {fmt.name}"
        )
    if not snapshot_path(snapshot).is_file():
        raise SnapshotFileMissing(f"the bundle of snapshot v{snapshot.version} is missing from the server")
    member = f"data/{split}.{fmt.extension}"
    name = f"{snapshot.task.slug}-round{snapshot.round.number}-v{snapshot.version}-{split}.{fmt.extension}"
    return Download(stream_zip_member(snapshot_path(snapshot), member), name, fmt.media_type)


def snapshot_bundle(snapshot: DatasetSnapshot) -> Download:
    path = snapshot_path(snapshot)
    if not path.is_file():
        raise SnapshotFileMissing(f"the bundle of snapshot v{snapshot.version} is missing from the server")
    return Download(stream_file(path), snapshot.file_name, "application/zip", snapshot.sha256, snapshot.size_bytes)


def publish_snapshot(
    round: Round,
    user=None,
    *,
    audience: str = DatasetSnapshot.Audience.RESEARCHERS,
    formats: list[str] | tuple[str, ...] = DEFAULT_FORMATS,
    include_excluded: bool = False,
) -> tuple[DatasetSnapshot, bool]:
    """Publish the round's current data as a new immutable version.

    When the data files are identical to the latest version's, that version is returned instead
    (created = False): publishing twice without new validations makes no new version.
    """
    check_not_generative(round)
    formats = check_formats(formats)
    if audience not in DatasetSnapshot.Audience.values:
        raise ExportError(f"unknown audience {quote(audience)}; choose one of: {', '.join(DatasetSnapshot.Audience.values)}")
    handle, name = tempfile.mkstemp(prefix="publish-", suffix=".zip", dir=_tmp_dir())
    draft, version = Path(name), _next_version(round)
    try:
        with os.fdopen(handle, "wb") as sink:
            result = write_bundle(
                round, sink, formats, version=f"v{version}", include_excluded=include_excluded, work_dir=_tmp_dir()
            )
        return _record(round, user, draft, version, result, audience, formats, include_excluded)
    finally:
        draft.unlink(missing_ok=True)


@dataclass(frozen=True)
class PublishPlan:
    """What publishing `round` now would give researchers, before the owner presses the button: rows per split
    (and how many validated), the version it would become, and what a researcher should be warned of."""

    round: Round
    preview: splits.Preview
    latest: DatasetSnapshot | None
    next_version: int
    warnings: list[str]

    @property
    def can_publish(self) -> bool:
        return self.preview.total > 0


def publish_plan(round: Round) -> PublishPlan:
    preview = splits.publish_preview(round)
    return PublishPlan(round, preview, latest_snapshot(round), _next_version(round), publish_warnings(round, preview))


def publish_warnings(round: Round, preview: splits.Preview) -> list[str]:
    """Plain sentences for the owner (and the publish message): empty dev/test, mostly unvalidated rows."""
    if not preview.total:
        return [_("Nothing to publish yet: round %(round)s has no usable example (scored, not retracted, "
                  "not rejected or flagged).") % {"round": round.number}]
    warnings = []
    if preview.empty and set(preview.empty) & {"dev", "test"}:
        empty = [name for name in preview.empty if name != "train"]
        waiting = (" " + _("%(n)s fooling example(s) assigned to dev or test wait for validation: validating them "
                           "fills those files.") % {"n": preview.held_back} if preview.held_back else "")
        if len(empty) > 1:
            head = _("Dev and test would be empty: dev and test hold only examples that fooled the models and that "
                     "validators verified.")
            tail = _("Researchers could train on this version, not evaluate on it.")
        elif empty == ["dev"]:
            head = _("Dev would be empty: dev and test hold only examples that fooled the models and that validators "
                     "verified.")
            tail = _("This version would have no dev set.")
        else:
            head = _("Test would be empty: dev and test hold only examples that fooled the models and that validators "
                     "verified.")
            tail = _("This version would have no test set.")
        warnings.append(f"{head}{waiting} {tail}")
    unvalidated = preview.total - preview.total_validated
    if unvalidated * 2 > preview.total:
        scope = round.task.typed_config.validation.scope
        why = (" " + _("(this task sends only fooling examples to validators)") if scope == "fooling" else "")
        warnings.append(
            _("Most rows are unvalidated: %(unvalidated)s of %(total)s carry the writer's label, not one validators "
              "confirmed%(why)s.") % {"unvalidated": unvalidated, "total": preview.total, "why": why})
    return warnings


def _next_version(round: Round) -> int:
    return (round.snapshots.aggregate(v=Max("version"))["v"] or 0) + 1


def _record(round, user, draft: Path, version: int, result: BundleResult, audience, formats, include_excluded):
    if not any(result.counts.get(name) for name in splits.SPLITS):
        raise ExportError(f"round {round.number} has no usable example yet (scored, not retracted, not rejected or "
                          "flagged): nothing to publish")
    latest = latest_snapshot(round)
    same = (latest.content_sha256, latest.formats, latest.include_excluded) if latest else None
    if same == (result.content_sha256, formats, include_excluded):
        return latest, False
    if _next_version(round) != version:
        raise ExportError("another snapshot of this round was published meanwhile; publish again")
    relative = Path(round.task.slug) / f"round{round.number}" / f"v{version}.zip"
    final = export_root() / relative
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        raise ExportError(f"{relative} already exists; refusing to overwrite a published bundle")
    try:
        with transaction.atomic():
            snapshot = DatasetSnapshot.objects.create(
                task=round.task,
                round=round,
                version=version,
                audience=audience,
                path=relative.as_posix(),
                sha256=sha256_file(draft),
                content_sha256=result.content_sha256,
                size_bytes=draft.stat().st_size,
                formats=formats,
                counts=result.counts,
                validated=result.validated,
                include_excluded=include_excluded,
                published_by=user,
            )
            os.replace(draft, final)
            notify_events.dataset_published(snapshot)  # in this transaction: webhooks and mail once it commits
    except IntegrityError:
        raise ExportError("another snapshot of this round was published at the same moment; try again") from None
    return snapshot, True

