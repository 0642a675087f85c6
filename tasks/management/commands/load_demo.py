"""Load the demo: five tasks (one per kind), their contexts and labelled data, guidelines with worked
examples, a short quiz per role (made by the crowd app on `demo_task_loaded`), the chat task's recorded
conversations (made by the chat app on the same signal), and one account per persona
(three validators, so that verification, disputes and the expert queue can be tried at once with a demo
quorum of two). The demo accounts hold their roles on every demo task already: no quiz needed.

The QA and hate-speech demos also get the vendored samples of `tasks/demo/samples/` (SQuAD v1.1 train
articles, a training slice of Davidson et al.; sources and licences in its NOTICE.md) as labelled training
items of their own collection, so that `demo_models` trains round-1 models worth fooling.

With `--base-data` (what `make run` should load), the demo also imports base training data from DATA_DIR
(the shared datasets, not redistributable or too large to vendor), when the files are there, as train items
of their own collection through `tasks.importing` (which holds back a stable 5 % slice of a large import as
split "heldout"): SNLI **dev** into the NLI demo (collection "snli-dev"; SNLI test stays held out for
`evaluate_demo`) and a stable sample of SST-2 **train** into the sentiment demo (collection
"sst2-train-sample": 4,000 sentences of at least 4 words). So round 1's models (`demo_models`) and every
round's retraining (which reads the task's imported train items) learn from the same base. Off by default:
the test suite loads the demo many times and stays on the small vendored data.

Idempotent: running it again changes nothing that is already there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.db import transaction

from tasks import guidelines, roles
from tasks.importing import ImportSpec, import_lines
from tasks.kinds import get_kind
from tasks.models import Task, TaskMembership
from tasks.services import open_next_round
from tasks.signals import demo_task_loaded

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
SAMPLES_DIR = DEMO_DIR / "samples"
# task slug -> (sample file, import preset, collection); the rows are training items (pool, split "train")
SAMPLES = {
    "qa": ("squad_train.json", "squad", "squad-train"),
    "hate-speech": ("davidson_train.jsonl", "davidson", "davidson-train"),
}
# task slug -> (collection, file under DATA_DIR, import preset): base training data read from DATA_DIR with
# `--base-data` (train items; never a split that is evaluated on: SNLI test and SST-2 dev stay held out)
BASE_DATA = {
    "nli": ("snli-dev", "snli/dev.jsonl", "snli"),
    "sentiment": ("sst2-train-sample", "sst2/train.jsonl", "sst2"),
}
SST2_TRAIN_SAMPLE = 4000  # sentences of SST-2 train (of at least SST2_MIN_WORDS words: train holds many phrases)
SST2_MIN_WORDS = 4
DEMO_PASSWORD = "dynabench-demo"
PERSONAS = {
    "owner": (),
    "annotator": (roles.ANNOTATOR,),
    "validator": (roles.VALIDATOR,),
    "validator2": (roles.VALIDATOR,),
    "validator3": (roles.VALIDATOR,),
    "expert": (roles.EXPERT, roles.VALIDATOR),
    "researcher": (roles.RESEARCHER,),
    "admin": (),
}


def demo_files() -> list[Path]:
    return sorted(DEMO_DIR.glob("*.json"))


def _row(kind: str, item: dict) -> dict:
    row = {**item.get("context", {}), **item["input"]}
    if get_kind(kind).answer_is_span:  # the answer's character offset into its passage
        passage, answer = item["context"]["passage"], item["target"]["text"]
        return {**row, "answer": answer, "answer_start": passage.find(answer)}
    return {**row, "label": item["target"]}


def _lines(rows: list[dict]):
    return ((n, json.dumps(r)) for n, r in enumerate(rows, start=1))


def squad_rows(path: Path) -> list[dict]:
    """squad_train.json (articles > paragraphs > [id, question, answer, answer_start]) as rows in the
    shared data's SQuAD schema (the `squad` import preset reads them)."""
    rows = []
    for article in json.loads(path.read_text(encoding="utf-8")):
        for paragraph in article["paragraphs"]:
            for qid, question, answer, start in paragraph["qas"]:
                rows.append({"id": qid, "title": article["title"], "context": paragraph["context"],
                             "question": question, "answers": {"text": [answer], "answer_start": [start]}})
    return rows


def sample_lines(name: str):
    """The vendored sample file's rows as numbered JSON lines."""
    path = SAMPLES_DIR / name
    if path.suffix == ".json":
        return _lines(squad_rows(path))
    return ((n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if line.strip())


def fraction(key: str) -> float:
    """A number in [0, 1) fixed by the key (the stable samples; the same rule as modelzoo.demo.fraction)."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16 ** 12


def _jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def sst2_train_sample(path: Path, limit: int = SST2_TRAIN_SAMPLE) -> list[dict]:
    """A stable sample of `limit` SST-2 train sentences of at least SST2_MIN_WORDS words (the rows whose hash of
    "sst2-train:<idx>" is lowest; the sample the sentiment demo trained on before it was imported)."""
    rows = [r for r in _jsonl(path) if len(r["sentence"].split()) >= SST2_MIN_WORDS]
    if len(rows) <= limit:
        return rows
    return sorted(rows, key=lambda r: fraction(f"sst2-train:{r['idx']}"))[:limit]


def base_data_lines(slug: str, data_dir: Path) -> Iterator[tuple[int, str]] | None:
    """The task's base training data under `data_dir` as numbered JSON lines, or None when it has none there."""
    if slug not in BASE_DATA or not (data_dir / BASE_DATA[slug][1]).is_file():
        return None
    path = data_dir / BASE_DATA[slug][1]
    if slug == "sentiment":
        return _lines(sst2_train_sample(path))
    return ((n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if line.strip())


class Command(BaseCommand):
    help = "Load the demo tasks, contexts, labelled data and persona accounts (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--base-data", action=argparse.BooleanOptionalAction, default=False,
                            help="also import the base training data from DATA_DIR when it is there: SNLI dev into "
                                 "the NLI demo, a 4,000-sentence SST-2 train sample into the sentiment demo "
                                 "(default: off; the vendored samples only)")

    def handle(self, *args, **opts):
        with transaction.atomic():
            people = self._personas()
            for path in demo_files():
                self._load_task(json.loads(path.read_text(encoding="utf-8")), people, opts["base_data"])
        self._print_credentials()

    def _personas(self) -> dict[str, User]:
        people = {}
        for name, granted in PERSONAS.items():
            user, created = User.objects.get_or_create(username=name, defaults={"email": f"{name}@demo.local"})
            if created:
                user.set_password(DEMO_PASSWORD)
                user.is_staff = user.is_superuser = name == "admin"
                user.save()
            roles.grant(user, *granted)
            people[name] = user
        return people

    def _load_task(self, data: dict, people: dict[str, User], base_data: bool = False) -> None:
        task, created = Task.objects.get_or_create(
            slug=data["slug"], defaults={"name": data["name"], "kind": data["kind"], "config": data.get("config", {})}
        )
        task.owners.add(people["owner"])
        if data.get("guidelines") and guidelines.current(task) is None:
            guidelines.publish(task, data["guidelines"], by=people["owner"])
        self._qualify(task, people)
        if not task.rounds.exists():
            open_next_round(task, description="Demo round 1")
        demo_task_loaded.send(sender=self.__class__, task=task, data=data)  # after round 1 opens: the chat demo
        kind = data["kind"]
        reports = [  # a chat task has no contexts nor labelled items: its recorded conversations come on the signal
            import_lines(task, _lines(data["contexts"]), ImportSpec(target="contexts", source="demo"))
            if data.get("contexts") else None,
            import_lines(task, _lines([_row(kind, i) for i in data["train"]]),
                         ImportSpec(target="pool", collection="demo", split="train", source="demo"))
            if data.get("train") else None,
            import_lines(task, _lines([_row(kind, i) for i in data["test"]]),
                         ImportSpec(target="eval", collection="demo", split="test", source="demo"))
            if data.get("test") else None,
        ]
        reports = [report for report in reports if report is not None]
        if data["slug"] in SAMPLES:
            name, preset, collection = SAMPLES[data["slug"]]
            reports.append(import_lines(task, sample_lines(name), ImportSpec.from_preset(
                preset, target="pool", collection=collection, split="train", source="demo-sample",
                skip_errors=True)))  # rows the task refuses (e.g. an answer over max_answer_chars) are left out
        new = sum(r.created for r in reports)
        state = "created" if created else "already present"
        self.stdout.write(f"{task.slug}: task {state}; {new} new contexts and labelled items")
        if base_data:
            self._base_data(task)

    def _base_data(self, task: Task) -> None:
        lines = base_data_lines(task.slug, Path(settings.DATA_DIR))
        if lines is None:
            if task.slug in BASE_DATA:
                self.stdout.write(f"{task.slug}: no {BASE_DATA[task.slug][1]} under DATA_DIR; base data skipped")
            return
        collection, _, preset = BASE_DATA[task.slug]
        report = import_lines(task, lines, ImportSpec.from_preset(
            preset, target="pool", collection=collection, split="train", source="demo-base", skip_errors=True))
        self.stdout.write(f"{task.slug}: base data {collection}: {report.summary()}")

    @staticmethod
    def _qualify(task: Task, people: dict[str, User]) -> None:
        """The demo's writers and validators hold their role on each demo task, as if they passed its quiz,
        and have read its guidelines: `make run` lets them work at once (new sign-ups go through both)."""
        current = guidelines.current(task)
        for name, granted in PERSONAS.items():
            for role in set(granted) & {roles.ANNOTATOR, roles.VALIDATOR}:
                roles.grant_on_task(people[name], task, role, TaskMembership.Source.DEMO)
            if current is not None and name != "owner":
                guidelines.acknowledge(people[name], task, current.version)

    def _print_credentials(self) -> None:
        self.stdout.write(self.style.SUCCESS(f"\nDemo accounts (password for all: {DEMO_PASSWORD})"))
        for name in PERSONAS:
            self.stdout.write(f"  {name:<11} {self._what(name)}")

    @staticmethod
    def _what(name: str) -> str:
        return {
            "owner": "owns the demo tasks: console, rounds, publishing datasets",
            "annotator": "writes examples that try to fool the model",
            "validator": "confirms or rejects other people's examples (demo quorum: 2 matching votes)",
            "validator2": "a second validator, to verify examples or disagree",
            "validator3": "a third validator: three disagreeing votes make a dispute for the expert",
            "expert": "validates, and resolves disputed, flagged and appealed examples (expert queue)",
            "researcher": "downloads round datasets and uploads models",
            "admin": "everything, plus Django admin at /admin/",
        }[name]
