"""The one contract every trainer keeps, as serving has one (`zoo.serving.base.Backend`): a labelled set and a
spec in, artifacts out. Callers (the round pipeline, through the site's `modelzoo.trainers`) never name a
trainer; where training runs follows from a setting.

    train(job, root, progress, notice)   -> [Artifact]   one artifact folder per member, under `root`

A `TrainJob` is plain data, so it travels as JSON (rows, never pickles) to a process on another host:

    recipe      a training recipe (`zoo.recipes.RECIPES`: "cached-top", "full")
    spec        its settings: `zoo.recipes.RecipeSpec`'s fields (cached-top) or `zoo.training.TrainSpec`'s without
                the seed (full); the encoder is `spec["encoder"]` (a name `zoo.encoders` resolves, or a folder:
                "store:<path>" is a folder under the trainer's `root`, e.g. a model uploaded to the leaderboard)
    seeds       one member per seed
    names       the members' names (for messages)
    outputs     each member's artifact folder, relative to `root` (the shared model store)
    train, dev  `zoo.data.LabelledSet`s (dev: early stopping of cached-top; None: carved from train by key)
    meta        each member's lines for its `training.json` (lineage: task, fingerprint, model version)
    id          the job's name: the same job sent twice is trained once (a member whose artifact says it was
                written by this job is returned as it is)

Trainers are registered by name in `TRAINERS`; `TRAINER_NAMES` are the names a deployment's setting accepts
(the site's TRAINING_BACKEND). "inprocess" trains here, in the calling process (the embedded default; also what
a training worker runs); "celery" is registered by the site (`modelzoo.trainers`): it sends the job to the
Celery queue of the GPU workers and waits for their artifacts. Importing this module loads neither torch nor a
model (the site's settings read the names).
"""

from __future__ import annotations

import hashlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zoo.data import LabelledSet
from zoo.registry import Registry

__all__ = ["INPROCESS", "CELERY", "TRAINER_NAMES", "TRAINERS", "Artifact", "InProcessTrainer", "Notice", "Progress",
           "TrainJob", "Trainer", "TrainerError", "make_trainer"]

INPROCESS, CELERY = "inprocess", "celery"
TRAINER_NAMES = (INPROCESS, CELERY)  # what TRAINING_BACKEND accepts; the site registers "celery"
STORE_PREFIX = "store:"  # an encoder folder named relative to the trainer's root (the shared model store)
JOB_FILE = "training.json"  # the artifact's record of how it was trained (zoo.training.save_artifact)

Progress = Callable[[int, int, dict[str, float]], None]  # (done, total, stats): zoo.recipes' progress
Notice = Callable[[str], None]  # a state worth saying in words: "queued, waiting for a training worker", ...
Config = Callable[[str, Any], Any]  # (setting name, default) -> its value, as for serving backends


def environ(name: str, default: Any = None) -> Any:
    """A trainer's settings read from the process environment (the library used without the site)."""
    return os.environ.get(name, default)


class TrainerError(RuntimeError):
    """Training could not be done or could not be waited for; the message says why. `retryable`: the same job may
    succeed later (a worker that is down, a broker that is back), so the caller should keep what it prepared."""

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable


def _set_json(labelled: LabelledSet) -> dict[str, Any]:
    return {"name": labelled.name, "inputs": labelled.inputs, "targets": labelled.targets, "keys": labelled.keys}


def _set_of(data: dict[str, Any]) -> LabelledSet:
    return LabelledSet(data["name"], list(data["inputs"]), list(data["targets"]), list(data["keys"]))


@dataclass
class TrainJob:
    recipe: str
    spec: dict[str, Any]
    seeds: list[int]
    names: list[str]
    outputs: list[str]
    train: LabelledSet
    dev: LabelledSet | None = None
    meta: list[dict[str, Any]] = field(default_factory=list)
    id: str = ""

    def __post_init__(self) -> None:
        self.seeds, self.names, self.outputs = [int(s) for s in self.seeds], list(self.names), list(self.outputs)
        if not (len(self.seeds) == len(self.names) == len(self.outputs)) or not self.seeds:
            raise ValueError("a training job needs one name and one output folder per seed, and at least one seed")
        if not self.train.inputs:
            raise ValueError(f"no training examples in {self.train.name}")
        for out in self.outputs:
            if Path(out).is_absolute() or ".." in Path(out).parts:
                raise ValueError(f"a training job names folders relative to the model store, not {out!r}")
        self.meta = list(self.meta) or [{} for _ in self.seeds]
        if not self.id:
            self.id = self.fingerprint()

    @property
    def encoder(self) -> str:
        return str(self.spec.get("encoder", ""))

    def fingerprint(self) -> str:
        """A stable name for what this job trains (same data, settings, seeds and folders: the same name)."""
        body = json.dumps({**self.to_json(), "id": ""}, sort_keys=True, ensure_ascii=False, default=str)
        return "train-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:24]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values: what travels through a broker."""
        return {"recipe": self.recipe, "spec": dict(self.spec), "seeds": self.seeds, "names": self.names,
                "outputs": self.outputs, "train": _set_json(self.train),
                "dev": _set_json(self.dev) if self.dev is not None else None, "meta": self.meta,
                "id": self.id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainJob:
        return cls(recipe=data["recipe"], spec=dict(data["spec"]), seeds=data["seeds"], names=data["names"],
                   outputs=data["outputs"], train=_set_of(data["train"]),
                   dev=_set_of(data["dev"]) if data.get("dev") is not None else None, meta=data.get("meta") or [],
                   id=data.get("id", ""))


@dataclass
class Artifact:
    """One trained member: its folder relative to the trainer's root, and its metrics (`metrics.json`)."""

    name: str
    seed: int
    path: str
    metrics: dict[str, Any]
    reused: bool = False  # already written by this job (a job delivered twice), not trained again

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Artifact:
        return cls(**data)


class Trainer(ABC):
    name: str

    @classmethod
    def from_config(cls, config: Config = environ) -> Trainer:
        """A trainer configured by `config`; one that reads no setting needs none."""
        return cls()

    @abstractmethod
    def train(self, job: TrainJob, root: Path, progress: Progress | None = None,
              notice: Notice | None = None) -> list[Artifact]:
        """Train every member of `job` and write each to `root / job.outputs[i]` (atomically: a half-written
        folder is never visible). Returns one `Artifact` per member, in the job's order. Raises TrainerError
        (retryable where waiting longer may help), or the recipe's own error (bad data or settings)."""


class InProcessTrainer(Trainer):
    """Trains in the calling process, on the device `zoo.device` chooses (ZOO_DEVICE): the recipe the model zoo
    has always run (`zoo.recipes.train_ensemble` for cached-top, `zoo.training.train` per seed for full)."""

    name = INPROCESS

    def train(self, job: TrainJob, root: Path, progress: Progress | None = None,
              notice: Notice | None = None) -> list[Artifact]:
        from zoo import recipes  # torch: only when something trains

        recipes.RECIPES.lookup(job.recipe)  # an unknown recipe: the registry's message naming the known ones
        root = Path(root)
        done = [_written_by(job, root / out) for out in job.outputs]
        todo = [i for i, metrics in enumerate(done) if metrics is None]
        if not todo:
            if notice:
                notice(f"every member of {job.id} was already written by this job: nothing to train")
        else:
            spec = dict(job.spec, encoder=self.encoder_for(job, root))
            metas = [{**job.meta[i], "job": job.id} for i in todo]
            trained = (self._cached_top if job.recipe == recipes.CACHED_TOP else self._full)(
                job, spec, root, todo, metas, progress)
            for i, metrics in zip(todo, trained, strict=True):
                done[i] = metrics
        return [Artifact(job.names[i], job.seeds[i], job.outputs[i], done[i] or {}, reused=i not in todo)
                for i in range(len(job.seeds))]

    @staticmethod
    def encoder_for(job: TrainJob, root: Path) -> str:
        """The job's encoder as `zoo.encoders` resolves it on this host: "store:<path>" becomes the folder under
        this trainer's root (the model store is mounted at different places on the web and GPU hosts)."""
        name = job.encoder
        if name.startswith(STORE_PREFIX):
            return str(Path(root) / name[len(STORE_PREFIX):])
        return name

    @staticmethod
    def _cached_top(job: TrainJob, spec: dict[str, Any], root: Path, todo: Sequence[int],
                    metas: list[dict[str, Any]], progress: Progress | None) -> list[dict[str, Any]]:
        from zoo import recipes
        from zoo.training import TrainExample

        examples = [TrainExample(m, t) for m, t in zip(job.train.inputs, job.train.targets, strict=True)]
        dev = ([TrainExample(m, t) for m, t in zip(job.dev.inputs, job.dev.targets, strict=True)]
               if job.dev is not None else None)
        return recipes.train_ensemble(examples, recipes.RecipeSpec(**spec), [Path(root) / job.outputs[i] for i in todo],
                                      [job.seeds[i] for i in todo], dev=dev, keys=job.train.keys,
                                      progress=progress, extra_meta=metas)

    @staticmethod
    def _full(job: TrainJob, spec: dict[str, Any], root: Path, todo: Sequence[int], metas: list[dict[str, Any]],
              progress: Progress | None) -> list[dict[str, Any]]:
        from zoo import training

        examples = [training.TrainExample(m, t, k) for m, t, k in
                    zip(job.train.inputs, job.train.targets, job.train.keys, strict=True)]
        results = []
        for n, (i, meta) in enumerate(zip(todo, metas, strict=True)):
            member = training.TrainSpec(**{**spec, "seed": job.seeds[i]})

            def member_progress(step: int, total: int, stats: dict[str, float], n: int = n) -> None:
                if progress:
                    progress(n * total + step, total * len(todo), {**stats, "member": float(n)})

            results.append(training.train(examples, member, Path(root) / job.outputs[i], member_progress, meta))
        return results


def _written_by(job: TrainJob, folder: Path) -> dict[str, Any] | None:
    """The metrics of a member this very job already wrote (the job was delivered twice), else None."""
    try:
        record = json.loads((folder / JOB_FILE).read_text(encoding="utf-8"))
        if record.get("job") == job.id and (folder / "zoo.json").is_file():
            return json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    return None


TRAINERS: Registry[type[Trainer]] = Registry("trainer")
TRAINERS.register(InProcessTrainer.name, InProcessTrainer)  # here, in this process (the default)
DEFAULT_TRAINER = INPROCESS


def make_trainer(name: str = DEFAULT_TRAINER, config: Config = environ) -> Trainer:
    """A new trainer `name`, configured by `config` (the process environment by default)."""
    return TRAINERS.lookup(name).from_config(config)
