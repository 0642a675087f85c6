"""python manage.py export_round <task> <round> --format <a registered format>|bundle --out PATH"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exports import services, splits
from exports.bundle import write_bundle
from exports.formats import DEFAULT_FORMAT, FORMATS, get_format
from exports.streaming import stream_records
from tasks.models import Task
from validation import reliability


class Command(BaseCommand):
    help = "Export a round's current data: one file per split, or a bundle (zip with card and manifest)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("task", help="task slug")
        parser.add_argument("round", help="round number")
        parser.add_argument("--format", default=DEFAULT_FORMAT, choices=[*FORMATS, "bundle"])
        parser.add_argument("--split", action="append", choices=splits.SPLITS, help="repeat for several; default all")
        parser.add_argument(
            "--out", required=True, help="a folder for split files; a .zip path (or folder) for a bundle"
        )
        parser.add_argument(
            "--include-excluded", action="store_true", help="bundle: add rejected/flagged as excluded.*"
        )
        parser.add_argument("--publish", action="store_true", help="publish the round as a new snapshot version")

    def handle(self, *args, **options) -> None:
        task = Task.objects.filter(slug=options["task"]).first()
        if task is None:
            raise CommandError(f"no task with slug {options['task']!r}")
        try:
            round = services.find_round(task, options["round"])
        except services.ExportError as exc:
            raise CommandError(str(exc)) from None
        if options["publish"]:
            return self._publish(round, options)
        assigned = splits.assign_splits(round)
        reliability.refresh(round.task)
        self.stdout.write(f"splits assigned now: {assigned}")
        if options["format"] == "bundle":
            return self._bundle(round, Path(options["out"]), options["include_excluded"])
        self._files(round, Path(options["out"]), options["format"], options["split"] or list(splits.SPLITS))

    def _files(self, round, folder: Path, fmt_name: str, names: list[str]) -> None:
        fmt = get_format(fmt_name)
        folder.mkdir(parents=True, exist_ok=True)
        for split in names:
            path = folder / f"{round.task.slug}-round{round.number}-{split}.{fmt.extension}"
            with path.open("wb") as handle:
                for chunk in stream_records(round.task, splits.in_split(round, split), fmt):
                    handle.write(chunk)
            self.stdout.write(f"wrote {path} ({path.stat().st_size} bytes)")

    def _bundle(self, round, out: Path, include_excluded: bool) -> None:
        if out.suffix != ".zip":
            out.mkdir(parents=True, exist_ok=True)
            out = out / f"{round.task.slug}-round{round.number}-live.zip"
        with out.open("wb") as handle:
            result = write_bundle(
                round, handle, list(services.DEFAULT_FORMATS), version="live", include_excluded=include_excluded
            )
        self.stdout.write(f"wrote {out}: {result.counts}")

    def _publish(self, round, options) -> None:
        try:
            snapshot, created = services.publish_snapshot(round, include_excluded=options["include_excluded"])
        except services.ExportError as exc:
            raise CommandError(str(exc)) from None
        verb = "published" if created else "unchanged, still"
        self.stdout.write(f"{verb} v{snapshot.version} sha256 {snapshot.sha256} at {services.snapshot_path(snapshot)}")
