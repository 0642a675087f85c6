"""Builds the worked example's study (see research/arms_study/__main__.py) on the database Django is set up with,
and returns `rounds.arms.comparison` of it. Writes real rows: run it on a scratch database only."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.fingerprints import fingerprint
from annotation.models import Example
from modelzoo import services
from modelzoo.data import LabelledSet
from rounds import arms
from study.models import Arm, Consent, ConsentRecord, Participant, Study
from tasks.kinds import decide
from tasks.models import Round, Task, payload_hash

LABELS = ["negative", "positive"]
SLUG = "arms-study"


def sst_label(value: str) -> str | None:
    """SST's five-way phrase label (0–4) as the writer's binary label; 2 (neutral) left out."""
    return {"0": "negative", "1": "negative", "3": "positive", "4": "positive"}.get(str(value))


def star_label(rating: int) -> str | None:
    """A Yelp review's star rating as the writer's binary label; 3 stars left out."""
    return "negative" if rating <= 2 else "positive" if rating >= 4 else None


def majority(distribution: dict[str, list[str]]) -> str | None:
    """DynaSent's gold rule: the label at least 3 of the 5 annotators chose, else none."""
    for label, people in distribution.items():
        if len(people) >= 3:
            return label
    return None


def read(path: Path, writer_label: Callable[[dict], str | None]) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            raw = json.loads(line)
            label = writer_label(raw)
            if label is not None:
                rows.append({"text": raw["sentence"], "label": label, "gold": majority(raw["label_distribution"])})
    return rows


def corpora(data_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        "loop": read(data_dir / "dynasent" / "r1_dev.jsonl", lambda r: star_label(int(r["review_rating"]))),
        "standard": read(data_dir / "dynasent" / "sst_dev_validated.jsonl", lambda r: sst_label(r["sst_label"])),
    }


def sst2_train_sample(data_dir: Path, n: int, seed: int) -> LabelledSet:
    lines = (data_dir / "sst2" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    chosen = random.Random(seed).sample(lines, n)
    out = LabelledSet("sst2-train-sample")
    for line in chosen:
        row = json.loads(line)
        out.add({"text": row["sentence"]}, LABELS[int(row["label"])], payload_hash(row["sentence"]))
    return out


def simulated(name: str):
    user, _ = get_user_model().objects.get_or_create(username=name, defaults={"email": f"{name}@sim.invalid"})
    return user


def build(*, per_arm: int, participants: int, withdraw: int, train: int, seed: int,
          log: Callable[[str], None] = print) -> tuple[dict[str, Any], dict[str, float]]:
    seconds = {"start": time.perf_counter()}
    data_dir = Path(settings.DATA_DIR)
    task = Task.objects.create(slug=SLUG, name="Arms study (worked example)", kind="sentiment",
                               config={"labels": LABELS})
    round_ = Round.objects.create(task=task, number=1, status=Round.Status.OPEN, opened_at=timezone.now())

    clock = time.perf_counter()
    spec = services.default_spec(task, epochs=1, max_length=64, batch_size=32, seed=seed)
    model = services.train_model(task, spec, sst2_train_sample(data_dir, train, seed), name="sst2-minilm")
    services.deploy_ensemble(round_, [model])
    seconds["train"] = round(time.perf_counter() - clock, 1)
    log(f"trained {model.name} on {train} SST-2 train sentences in {seconds['train']} s")

    Study.objects.create(task=task, enabled=True, seed=seed)
    consent = Consent.objects.create(task=task, version=1, text="Simulated participants (worked example).")
    arm_of = {"loop": Arm.objects.create(task=task, key="loop", name="Model in the loop", position=0),
              "standard": Arm.objects.create(task=task, key="standard", name="Standard collection",
                                             model_in_loop=False, position=1)}
    rng = random.Random(seed)
    people: dict[str, list] = {}
    # balanced and seeded: a shuffled schedule with `participants` places per arm
    schedule = [key for key in arm_of for _ in range(participants)]
    rng.shuffle(schedule)
    for sequence, key in enumerate(schedule):
        user = simulated(f"sim-{sequence:03d}")
        Participant.objects.create(task=task, user=user, arm=arm_of[key], sequence=sequence, language="en",
                                   assigned_at=timezone.now())
        ConsentRecord.objects.create(consent=consent, task=task, user=user, version=1, language="en")
        people.setdefault(key, []).append(user)

    clock = time.perf_counter()
    kind, config = task.kind_impl, task.typed_config
    for key, rows in corpora(data_dir).items():
        rows = list({r["text"]: r for r in rows}.values())  # one example per sentence
        rows = rng.sample(rows, min(per_arm, len(rows)))
        inputs = [kind.model_input(config, {}, {"text": r["text"]}) for r in rows]
        predictions = services.predict_with([model], inputs)
        made = []
        for row, prediction in zip(rows, predictions, strict=True):
            verdict = decide(task, row["label"], prediction)
            verified = row["gold"] == row["label"]
            made.append(Example(
                round=round_, author=rng.choice(people[key]), arm=arm_of[key], language="en",
                input={"text": row["text"]}, target=row["label"], scoring_state=Example.Scoring.SCORED,
                fooled=bool(verdict.fooled), ensemble_prediction=prediction, model_versions=[model.version],
                scored_at=timezone.now(),
                consensus=Example.Consensus.VERIFIED if verified else Example.Consensus.REJECTED,
                validated_label=row["label"] if verified else row["gold"],
                model_key=fingerprint(task, None, {"text": row["text"]})))
        Example.objects.bulk_create(made)
        log(f"arm {key}: {len(made)} sentences scored and validated")
    seconds["score"] = round(time.perf_counter() - clock, 1)

    now = timezone.now()
    for user in people["loop"][:withdraw]:
        Participant.objects.filter(task=task, user=user).update(withdrawn_at=now)
        ConsentRecord.objects.filter(task=task, user=user).update(withdrawn_at=now)
    return arms.comparison(task, 1), seconds
