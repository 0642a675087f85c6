"""Load the demo: four tasks (one per kind), their contexts and labelled data, guidelines with worked
examples, a short quiz per role (made by the crowd app on `demo_task_loaded`), and one account per persona
(three validators, so that verification, disputes and the expert queue can be tried at once with a demo
quorum of two). The demo accounts hold their roles on every demo task already: no quiz needed.

The QA and hate-speech demos also get the vendored samples of `tasks/demo/samples/` (SQuAD v1.1 train
articles, a training slice of Davidson et al.; sources and licences in its NOTICE.md) as labelled training
items of their own collection, so that `demo_models` trains round-1 models worth fooling.

Idempotent: running it again changes nothing that is already there.
"""

from __future__ import annotations

import json
from pathlib import Path

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


class Command(BaseCommand):
    help = "Load the demo tasks, contexts, labelled data and persona accounts (idempotent)."

    def handle(self, *args, **opts):
        with transaction.atomic():
            people = self._personas()
            for path in demo_files():
                self._load_task(json.loads(path.read_text(encoding="utf-8")), people)
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

    def _load_task(self, data: dict, people: dict[str, User]) -> None:
        task, created = Task.objects.get_or_create(
            slug=data["slug"], defaults={"name": data["name"], "kind": data["kind"], "config": data.get("config", {})}
        )
        task.owners.add(people["owner"])
        if data.get("guidelines") and guidelines.current(task) is None:
            guidelines.publish(task, data["guidelines"], by=people["owner"])
        self._qualify(task, people)
        demo_task_loaded.send(sender=self.__class__, task=task, data=data)
        if not task.rounds.exists():
            open_next_round(task, description="Demo round 1")
        kind = data["kind"]
        reports = [
            import_lines(task, _lines(data["contexts"]), ImportSpec(target="contexts", source="demo")),
            import_lines(task, _lines([_row(kind, i) for i in data["train"]]),
                         ImportSpec(target="pool", collection="demo", split="train", source="demo")),
            import_lines(task, _lines([_row(kind, i) for i in data["test"]]),
                         ImportSpec(target="eval", collection="demo", split="test", source="demo")),
        ]
        if data["slug"] in SAMPLES:
            name, preset, collection = SAMPLES[data["slug"]]
            reports.append(import_lines(task, sample_lines(name), ImportSpec.from_preset(
                preset, target="pool", collection=collection, split="train", source="demo-sample",
                skip_errors=True)))  # rows the task refuses (e.g. an answer over max_answer_chars) are left out
        new = sum(r.created for r in reports)
        state = "created" if created else "already present"
        self.stdout.write(f"{task.slug}: task {state}; {new} new contexts and labelled items")

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
