from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from tasks.importing import PRESETS, ImportFailed, ImportSpec, import_jsonl
from tasks.models import LabeledItem, Task


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        if "=" not in value:
            raise CommandError(f"{option} {value!r} must look like name=value")
        key, _, val = value.partition("=")
        pairs[key.strip()] = val.strip()
    return pairs


class Command(BaseCommand):
    help = "Import a JSONL file into a task as contexts, a labelled seed pool, or labelled evaluation data."

    def add_arguments(self, parser):
        parser.add_argument("task", help="task slug")
        parser.add_argument("file", help="path to a .jsonl file")
        parser.add_argument("--as", dest="target", choices=["contexts", "pool", "eval"], required=True)
        parser.add_argument("--preset", choices=sorted(PRESETS), help="field mapping of a shared dataset")
        parser.add_argument("--map", action="append", default=[], metavar="FIELD=SOURCE",
                            help="project field <- source field, e.g. --map text=sentence")
        parser.add_argument("--label", action="append", default=[], metavar="SOURCE=LABEL",
                            help="rename a source label, e.g. --label 0=negative")
        parser.add_argument("--id-field", help="source field with a stable row id")
        parser.add_argument("--collection", default=None, help="name of the imported set (default: the file name)")
        parser.add_argument("--split", choices=[s.value for s in LabeledItem.Split], default=None,
                            help="train (seed pool, the default for --as pool) or dev/test (default for --as eval)")
        parser.add_argument("--skip-errors", action="store_true", help="import the good rows and report the bad ones")
        parser.add_argument("--limit", type=int, help="read at most this many rows")

    def handle(self, *args, **opts):
        try:
            task = Task.objects.get(slug=opts["task"])
        except Task.DoesNotExist:
            raise CommandError(f"no task with slug {opts['task']!r}") from None
        spec = self._spec(opts)
        try:
            report = import_jsonl(task, opts["file"], spec)
        except FileNotFoundError:
            raise CommandError(f"file not found: {opts['file']}") from None
        except ImportFailed as exc:
            raise CommandError(str(exc)) from None
        for error in report.errors[:20]:
            self.stderr.write(f"skipped {error}")
        self.stdout.write(self.style.SUCCESS(report.summary()))

    def _spec(self, opts) -> ImportSpec:
        from pathlib import Path

        split = opts["split"] or ("test" if opts["target"] == "eval" else "train")
        if opts["target"] == "eval" and split == "train":
            raise CommandError("evaluation data goes to --split dev or test")
        common = {
            "target": opts["target"], "split": split, "skip_errors": opts["skip_errors"], "limit": opts["limit"],
            "collection": opts["collection"] or Path(opts["file"]).stem, "source": Path(opts["file"]).name,
        }
        spec = ImportSpec.from_preset(opts["preset"], **common) if opts["preset"] else ImportSpec(**common)
        spec.mapping.update(_pairs(opts["map"], "--map"))
        spec.labels.update(_pairs(opts["label"], "--label"))
        if opts["id_field"]:
            spec.id_field = opts["id_field"]
        return spec
