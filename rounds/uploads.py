"""Researchers' models: weights only, checked before anything is stored, then evaluated by a worker.

Accepted: `config.json` (a supported architecture with the task's head and labels, sizes within bounds),
one `model.safetensors` (checked to be a safetensors file, not a renamed pickle, whose tensors match the
config: word embeddings, encoder layers and output layer, read from its JSON header without loading any
weight), and tokenizer files. Refused with one message per problem: pickles (.bin .pt .pth .pkl .ckpt ...),
sharded checkpoints and their index files, archives, Python or other code, configs that ask for remote
code (`auto_map`, `trust_remote_code`, ...), unknown files, and uploads over the size limit (the body is
stopped at the limit before it is written: dynabench_site.bodylimit).
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dynabench_site.errors import Conflict, InvalidInput, NotPermitted
from dynabench_site.jobs import dispatch
from modelzoo.services import register_artifact
from rounds import jobs
from rounds.models import ResearcherModel
from tasks import roles
from tasks.models import Task
from zoo.artifacts import (  # the pure checks of an artifact's config.json and safetensors header
    ARCHITECTURES,
    WEIGHTS,
    code_keys,
    dimension_problems,
    size_problems,
)
from zoo.artifacts import parse_header as _parse_header
from zoo.heads import get_head

MB = 1024 * 1024
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib", ".npy", ".npz", ".h5", ".msgpack")
ARCHIVE_SUFFIXES = (".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".mar", ".whl", ".egg", ".jar")
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".dll", ".dylib", ".sh", ".js", ".ipynb", ".exe")
TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
                   "vocab.json", "merges.txt", "added_tokens.json", "spiece.model", "sentencepiece.bpe.model"}


class UploadRefused(InvalidInput):
    """The upload is not acceptable; `errors` are messages for the researcher, one per problem."""

    def __init__(self, errors: list[str], field: str = "files"):
        super().__init__("; ".join(errors), field=field)
        self.errors = errors

    def as_dict(self) -> dict[str, list[str]]:
        return {self.field or "files": self.errors}


class UploadedFileLike(Protocol):
    name: str
    size: int

    def chunks(self): ...

    def read(self, size: int = -1) -> bytes: ...

    def seek(self, offset: int) -> int: ...


@dataclass
class Checked:
    config: dict[str, Any]
    labels: list[str]
    architecture: str


def max_total_bytes() -> int:
    return int(settings.ROUNDS_UPLOAD_MAX_MB * MB)


def can_upload(user, task: Task) -> bool:
    return roles.has_role(user, roles.RESEARCHER, task)


# -- checks -----------------------------------------------------------------------------------------


def name_problem(name: str) -> str | None:
    lower = name.lower()
    if "/" in name or "\\" in name or name.startswith(".") or not name:
        return f"{name!r}: file names must be plain (no folders, not hidden)"
    if lower.endswith(".index.json"):
        return (f"{name}: sharded checkpoints and their index files are refused; save the model as one {WEIGHTS} "
                "(save_pretrained(..., safe_serialization=True, max_shard_size=\"10GB\"))")
    if lower.endswith(PICKLE_SUFFIXES):
        return f"{name}: pickled weights can run code when loaded and are refused; upload model.safetensors instead"
    if lower.endswith(ARCHIVE_SUFFIXES):
        return f"{name}: archives are refused (they can carry code); upload the files themselves"
    if lower.endswith(CODE_SUFFIXES):
        return f"{name}: code files are refused; only weights, config.json and tokenizer files are accepted"
    if lower.endswith(".safetensors") and name != WEIGHTS:
        return f"{name}: only one weights file, {WEIGHTS}, is accepted (a shard of a split checkpoint?)"
    if lower == "config.json" or name == WEIGHTS or lower in TOKENIZER_FILES:
        return None
    return f"{name}: not a weights, config or tokenizer file (accepted: config.json, *.safetensors, {', '.join(sorted(TOKENIZER_FILES))})"


def check_files(files: Sequence[UploadedFileLike]) -> None:
    errors = [p for f in files if (p := name_problem(f.name))]
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        errors.append("the same file name appears twice")
    total = sum(f.size for f in files)
    if total > max_total_bytes():
        errors.append(f"the upload is {total / MB:.1f} MB; the limit is {max_total_bytes() / MB:.0f} MB")
    if "config.json" not in names:
        errors.append("config.json is missing")
    if not any(n.endswith(".safetensors") for n in names):
        errors.append(f"no weights: upload {WEIGHTS}")
    if not {"tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model"} & set(names):
        errors.append("no tokenizer: upload tokenizer.json or vocab.txt (with tokenizer_config.json)")
    if errors:
        raise UploadRefused(errors)


def read_json(file: UploadedFileLike, limit: int = 2 * MB) -> dict[str, Any]:
    if file.size > limit:
        raise UploadRefused([f"{file.name}: {file.size / MB:.1f} MB is too large for a configuration file"])
    raw = b"".join(file.chunks())
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UploadRefused([f"{file.name}: not valid JSON ({exc})"]) from None
    if not isinstance(value, dict):
        raise UploadRefused([f"{file.name}: must be a JSON object"])
    return value


def check_config(config: dict[str, Any], task: Task) -> Checked:
    errors = [f"config.json asks for custom code ({k}); only built-in architectures are accepted" for k in code_keys(config)]
    errors += size_problems(config)
    model_type = config.get("model_type")
    if model_type not in ARCHITECTURES:
        errors.append(f"config.json: model_type {model_type!r} is not supported; use one of {', '.join(sorted(ARCHITECTURES))}")
    suffix = get_head(task.kind_impl.head).architecture_suffix
    archs = config.get("architectures") or []
    if not (isinstance(archs, list) and len(archs) == 1 and str(archs[0]).endswith(suffix)):
        errors.append(f"config.json: architectures must be one *{suffix} model for a {task.kind} task")
    labels = _labels(config, task, errors)
    if errors:
        raise UploadRefused(errors)
    return Checked(config, labels, str(archs[0]))


def _labels(config: dict[str, Any], task: Task, errors: list[str]) -> list[str]:
    if not get_head(task.kind_impl.head).labelled:
        return []
    id2label = config.get("id2label") or {}
    try:
        labels = [id2label[k] for k in sorted(id2label, key=int)]
    except (ValueError, TypeError):
        labels = []
    wanted = list(task.typed_config.labels)
    if sorted(labels) != sorted(wanted):
        errors.append(f"config.json: id2label must name exactly the task's labels {wanted}; found {labels or 'none'}")
    return labels


def read_header(file: UploadedFileLike) -> dict[str, dict[str, Any]]:
    """The tensors a safetensors file declares (name → dtype, shape, offsets), read from its JSON header
    alone: no weight is loaded. Refuses a file that is not safetensors (a renamed pickle)."""
    file.seek(0)
    first = file.read(8)
    length = struct.unpack("<Q", first)[0] if len(first) == 8 else 0
    head = first + file.read(min(length, 100 * MB))
    file.seek(0)
    tensors, problem = _parse_header(head, file.size)
    if problem:
        raise UploadRefused([f"{file.name}: {problem}"])
    return tensors


def check_tokenizer(files: Sequence[UploadedFileLike]) -> None:
    for file in files:
        if file.name in {"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"}:
            keys = code_keys(read_json(file))
            if keys:
                raise UploadRefused([f"{file.name} asks for custom code ({', '.join(keys)})"])


def validate(task: Task, files: Sequence[UploadedFileLike]) -> Checked:
    check_files(files)
    by_name = {f.name: f for f in files}
    checked = check_config(read_json(by_name["config.json"]), task)
    check_tokenizer(files)
    tensors = read_header(by_name[WEIGHTS])
    head = get_head(task.kind_impl.head)
    problems = dimension_problems(checked.config, tensors, len(checked.labels) if head.labelled else 2)
    if problems:
        raise UploadRefused(problems)
    return checked


# -- storing and registering ------------------------------------------------------------------------


def upload_root(task: Task) -> Path:
    return Path(settings.MODEL_STORE) / "uploads" / task.slug


def store(folder: Path, files: Sequence[UploadedFileLike], checked: Checked, task: Task) -> None:
    folder.mkdir(parents=True, exist_ok=False)
    for file in files:
        with open(folder / file.name, "wb") as out:
            for chunk in file.chunks():
                out.write(chunk)
    meta = {"format": 1, "head": task.kind_impl.head, "labels": checked.labels,
            "max_length": get_head(task.kind_impl.head).default_max_length, "encoder": "upload"}
    (folder / "zoo.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")


def submit(task: Task, user, name: str, files: Sequence[UploadedFileLike], description: str = "") -> ResearcherModel:
    """Check, store and register an upload, then start its evaluation. Raises UploadRefused or NotPermitted."""
    if not can_upload(user, task):
        raise NotPermitted("Only researchers, task owners and admins may upload models.")
    name, description = text_field(name, "name"), text_field(description, "description")
    name = name.strip()[:100]
    if not name:
        raise UploadRefused(["give the model a name"], field="name")
    checked = validate(task, files)
    with transaction.atomic():
        upload = ResearcherModel.objects.create(
            task=task, uploaded_by=user, name=name, description=description, architecture=checked.architecture,
            files=[[f.name, f.size] for f in files], size_bytes=sum(f.size for f in files),
        )
        folder = upload_root(task) / str(upload.pk)
        shutil.rmtree(folder, ignore_errors=True)
        store(folder, files, checked, task)
        version = register_artifact(task, folder, name=f"{name} (upload {upload.pk})",
                                    lineage={"data": "uploaded", "upload": upload.pk, "by": user.username})
        ResearcherModel.objects.filter(pk=upload.pk).update(model_version=version)
        upload.model_version = version
        enqueue_evaluation(upload)
    return upload


def text_field(value: object, field: str) -> str:
    """A text field of the upload form (a JSON body can carry a number or a list there): the text, or a
    refusal naming the field."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UploadRefused([f"must be text, not {type(value).__name__}"], field=field)
    return value


def enqueue_evaluation(upload: ResearcherModel) -> None:
    ResearcherModel.objects.filter(pk=upload.pk).update(queued_at=timezone.now())
    dispatch(jobs.evaluate_upload, upload.pk, on_failure=lambda exc: _unqueued(upload.pk, exc))


def stale_after_s() -> int:
    return int(settings.ROUNDS_UPLOAD_STALE_S)


def is_stuck(upload: ResearcherModel) -> bool:
    """Evaluating for longer than ROUNDS_UPLOAD_STALE_S (default 30 minutes) since its evaluation was queued:
    the job was lost (worker killed, broker restarted). Evaluating one model on the test sets takes seconds."""
    if upload.status != ResearcherModel.Status.EVALUATING:
        return False
    since = upload.queued_at or upload.created_at
    return (timezone.now() - since).total_seconds() > stale_after_s()


class UploadBusy(Conflict):
    def __init__(self, message: str):
        super().__init__(message, field="status")


def check_can_manage(upload: ResearcherModel, user) -> None:
    if not roles.can_manage(user, upload.task):
        raise NotPermitted("Only the task's owners and admins may retry or abandon a model's evaluation.")


def retry_evaluation(upload: ResearcherModel, user) -> ResearcherModel:
    """Evaluate a failed or stuck upload again."""
    check_can_manage(upload, user)
    allowed = upload.status == ResearcherModel.Status.FAILED or is_stuck(upload)
    if not allowed or upload.model_version_id is None:
        raise UploadBusy(f"{upload.name} is {upload.get_status_display().lower()}; only a failed evaluation, or one "
                         f"stuck for over {stale_after_s()} s, can be retried.")
    ResearcherModel.objects.filter(pk=upload.pk).update(status=ResearcherModel.Status.EVALUATING, error="")
    enqueue_evaluation(upload)
    upload.refresh_from_db()
    return upload


def abandon_evaluation(upload: ResearcherModel, user) -> ResearcherModel:
    """Give up a failed or evaluating upload: it leaves the leaderboard and the next ensemble; a late result of
    its evaluation is ignored."""
    check_can_manage(upload, user)
    updated = ResearcherModel.objects.filter(
        pk=upload.pk, status__in=[ResearcherModel.Status.FAILED, ResearcherModel.Status.EVALUATING]
    ).update(status=ResearcherModel.Status.ABANDONED, in_next_ensemble=False,
             error=f"abandoned by {user.username}")
    if not updated:
        raise UploadBusy(f"{upload.name} is {upload.get_status_display().lower()}; only a failed or evaluating "
                         f"model can be abandoned.")
    upload.refresh_from_db()
    return upload


def _unqueued(upload_id: int, error: Exception) -> None:
    """An evaluation that could not be queued: say so on the upload instead of "evaluating" for ever."""
    ResearcherModel.objects.filter(pk=upload_id, status=ResearcherModel.Status.EVALUATING).update(
        status=ResearcherModel.Status.FAILED, error=f"could not enqueue the evaluation: {type(error).__name__}: {error}"[:3000]
    )


def set_in_next_ensemble(upload: ResearcherModel, user, include: bool) -> ResearcherModel:
    if not roles.can_manage(user, upload.task):
        raise NotPermitted("Only the task's owners and admins may choose the next round's ensemble.")
    if include and upload.status != ResearcherModel.Status.EVALUATED:
        raise UploadRefused(["only an evaluated model can join the next round's ensemble"], field="include")
    ResearcherModel.objects.filter(pk=upload.pk).update(in_next_ensemble=include)
    upload.in_next_ensemble = include
    return upload


def trains_from(task: Task) -> int | None:
    """The id of the upload the task's next round trains from (its `retraining.encoder` names it as upload:<id or
    name>), or None (another encoder, the default, or an upload that is gone)."""
    from modelzoo.encoders import UPLOAD, EncoderError, upload_version

    value = (task.typed_config.retraining.encoder or "").strip()
    if not value.startswith(UPLOAD):
        return None
    try:
        version = upload_version(value[len(UPLOAD):], task)
    except (EncoderError, ValueError):
        return None
    return getattr(getattr(version, "upload", None), "pk", None)


def retrain_from(upload: ResearcherModel, user, on: bool) -> ResearcherModel:
    """Put an evaluated upload in the loop: the next round's models are trained from its weights (a new head for
    the task's labels), by setting the task's `retraining.encoder` to upload:<id>; `on=False` sets it back to the
    default, only when it names this upload. Owners and admins only; an upload that is not evaluated, or whose
    folder cannot be trained from, is refused with the reason."""
    from modelzoo.encoders import UPLOAD, EncoderError, validate_encoder

    if not roles.can_manage(user, upload.task):
        raise NotPermitted("Only the task's owners and admins may choose the model the next round trains from.")
    value = f"{UPLOAD}{upload.pk}"
    if on:
        try:
            value = validate_encoder(value, upload.task, user) or value
        except EncoderError as exc:
            reason = f"{exc}" + (f" ({upload.error})" if upload.error else "")
            raise UploadRefused([reason], field="retrain_from") from None
        if upload.status != ResearcherModel.Status.EVALUATED:
            why = f": {upload.error}" if upload.error else ""
            raise UploadRefused([f"{upload.name} is {upload.get_status_display().lower()}{why}; only an evaluated "
                                 f"model can be the one the next round trains from"], field="retrain_from")
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=upload.task_id)
        if not on and trains_from(task) != upload.pk:
            upload.task = task
            return upload
        config = dict(task.config)
        config["retraining"] = {**(config.get("retraining") or {}), "encoder": value if on else ""}
        task.config = task.kind_impl.parse_config(config).model_dump()
        task.save(update_fields=["config"])
    upload.task = task
    return upload
