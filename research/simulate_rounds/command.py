"""`python -m research.simulate_rounds <task> --writers R1.jsonl [R2.jsonl …] --held-out H.jsonl [H2.jsonl …]`:
simulated rounds through the real services (research.simulate_rounds.replay), one per writers' file, closed in
order; the report is each round's ensemble on every held-out file (error, 95 % Wilson interval) and the exact
McNemar test between consecutive rounds. The old form, `<task> <adversarial.jsonl> --heldout FILE`, is one
writers' file.

A Django management command's class (its parser, its CommandError), run by research/simulate_rounds/__main__.py
rather than registered under `manage.py`: the simulation is research beside the product, not part of it."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from modelzoo import encoders
from modelzoo.encoders import START_FROM
from research.simulate_rounds.replay import ON_WORSE, DataFile, SimulationError, simulate
from tasks.importing import PRESETS
from tasks.models import Task


def find(path: Path) -> Path:
    """A file as given, or relative to DATA_DIR (e.g. anli/r1_dev.jsonl)."""
    if path.is_file():
        return path
    if not path.is_absolute() and (Path(settings.DATA_DIR) / path).is_file():
        return Path(settings.DATA_DIR) / path
    raise CommandError(f"{path}: no such file (here or under DATA_DIR {settings.DATA_DIR})")


def data_file(text: str) -> DataFile:
    """`FILE`, `FILE:N` (this file's own limit: the first N writers' lines, or a stable sample of N held-out
    lines) and either with `@PRESET` (an import preset, tasks.importing.PRESETS, for a file in its dataset's own
    shape: `dynasent/r1_dev.jsonl@dynasent`, `sst2/dev.jsonl:500@sst2`); a file whose name itself ends in
    `:digits` or `@name` is taken as it is."""
    preset = None
    head, at, name = str(text).rpartition("@")
    if at and head and name and not Path(text).is_file():
        if name not in PRESETS:
            raise CommandError(f"{text}: unknown import preset {name!r}; known: {', '.join(PRESETS)}")
        text, preset = head, name
    path, sep, tail = str(text).rpartition(":")
    if sep and path and tail.isdigit() and not Path(text).is_file():
        return DataFile(find(Path(path)), int(tail), path, preset)
    return DataFile(find(Path(text)), None, str(text), preset)


def is_count(values: list[str] | None) -> bool:
    """`--writers 6`, the old spelling of `--writer-count 6` (a lone whole number that is no file)."""
    return bool(values) and len(values) == 1 and values[0].isdigit() and not Path(values[0]).is_file() and \
        not (Path(settings.DATA_DIR) / values[0]).is_file()


class Command(BaseCommand):
    help = ("Replay labelled examples as simulated writers and validators through the real submission, validation "
            "and round services, one round per writers' file, closing each round through the pipeline, and report "
            "each round's ensemble on every held-out file (error with a 95 % Wilson interval, exact McNemar test "
            "between consecutive rounds). It writes real rows: use a scratch database.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("task", help="the task's slug")
        parser.add_argument("source", nargs="?", default=None,
                            help="the old form: one writers' file (same as --writers FILE)")
        parser.add_argument("--writers", nargs="+", default=None, metavar="FILE[:N]",
                            help="JSONL writers' files, one per round in order (the task's context and input fields "
                                 "and a label per line); FILE:N replays its first N lines")
        parser.add_argument("--held-out", "--heldout", dest="held_out", nargs="+", action="extend", default=None,
                            metavar="FILE[:N]", help="JSONL files in the same shape, never trained on; FILE:N: a "
                                                     "stable random sample of N lines; FILE@PRESET as above")
        parser.add_argument("--writer-count", type=int, default=None, help="simulated writers (default 4)")
        parser.add_argument("--validators", type=int, default=3, help="simulated validators")
        parser.add_argument("--limit", type=int, default=None,
                            help="replay only the first K examples of each writers' file without its own :N")
        parser.add_argument("--heldout-limit", "--held-out-limit", dest="heldout_limit", type=int, default=None,
                            help="a stable random sample of this many examples of each held-out file without its own :N")
        parser.add_argument("--epochs", type=int, default=None, help="retraining epochs (pipeline option)")
        parser.add_argument("--seeds", default=None, help="comma-separated seeds: one model each (pipeline option)")
        parser.add_argument("--options", default="{}", help="more pipeline options, as JSON (rounds.options)")
        parser.add_argument("--encoder", default=None, metavar="NAME_OR_PATH",
                            help="the base encoder of the retrained ensembles (pipeline option): a registered name, "
                                 "upload:<id or name>, or a checkpoint folder")
        parser.add_argument("--start-from", dest="start_from", choices=START_FROM, default=None,
                            help="where each round's retraining starts (pipeline option): the pretrained encoder on "
                                 "all the data, or the live ensemble's members; default: the task's "
                                 "retraining.start_from")
        parser.add_argument("--on-worse", choices=ON_WORSE, default="approve",
                            help="what the simulated owner does when a retrained ensemble awaits approval (stop: "
                                 "leave it awaiting and replay no further file)")
        parser.add_argument("--bootstrap", action="store_true",
                            help="open a first round through the pipeline when the task has none with a live ensemble")
        parser.add_argument("--out", "--report", dest="out", type=Path, default=None,
                            help="also write the Markdown report here")
        parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")

    def handle(self, *args, task: str, source: str | None, **o) -> None:
        found = Task.objects.filter(slug=task).first()
        if found is None:
            raise CommandError(f"no task {task!r}")
        writers, count = o["writers"], o["writer_count"]
        if is_count(writers):  # the old `--writers N`
            if count is not None:
                raise CommandError("--writers N is the old spelling of --writer-count N; give one of them")
            writers, count = None, int(writers[0])
        if source and writers:
            raise CommandError("give the writers' files either as the positional argument or with --writers")
        names = [source] if source else (writers or [])
        if not names:
            raise CommandError("no writers' file: --writers FILE [FILE ...]")
        if not o["held_out"]:
            raise CommandError("no held-out file: --held-out FILE [FILE ...]")
        files, held = [data_file(n) for n in names], [data_file(n) for n in o["held_out"]]
        try:
            options = json.loads(o["options"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--options is not JSON: {exc}") from None
        if o["epochs"] is not None:
            options["epochs"] = o["epochs"]
        if o["seeds"]:
            options["seeds"] = [int(s) for s in o["seeds"].split(",")]
        if o["start_from"]:
            options["start_from"] = o["start_from"]
        if o["encoder"]:
            options["encoder"] = self._encoder(found, o["encoder"])
        try:
            report = simulate(found, files, held, writers=4 if count is None else count, validators=o["validators"],
                              limit=o["limit"], heldout_limit=o["heldout_limit"], options=options,
                              on_worse=o["on_worse"], bootstrap=o["bootstrap"],
                              log=lambda m: self.stderr.write(m))
        except SimulationError as exc:
            raise CommandError(str(exc)) from None
        text = report.markdown()
        self.stdout.write(text)
        if o["out"]:
            o["out"].write_text(text, encoding="utf-8")
        if o["json"]:
            o["json"].write_text(json.dumps(report.as_dict(), indent=2, default=str), encoding="utf-8")

    @staticmethod
    def _encoder(task: Task, value: str) -> str:
        """The operator's encoder, refused with the reason before anything is written. A folder named here is the
        operator's choice: it is added to the folders this process allows (ZOO_ENCODER_DIRS), since the runs go
        through the pipeline's options as a task owner's would."""
        try:
            encoders.validate_encoder(value, task, operator=True)
        except encoders.EncoderError as exc:
            raise CommandError(str(exc)) from None
        text = value.strip()
        if not encoders.is_folder(text):
            return text
        folder = str(Path(text).expanduser().resolve())
        allowed = [str(p) for p in encoders.allowed_dirs()]
        settings.ZOO_ENCODER_DIRS = [*allowed, folder]
        return folder
