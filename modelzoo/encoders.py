"""The site's choice of base encoder: what a task's setting, a run's option or a command's `--encoder` may name,
and the string `zoo.encoders.resolve` is given for it.

Accepted values (docs/modelzoo.md, "Putting your own model in the loop"):

- a registered name (`zoo.encoders.ENCODERS`: all-MiniLM-L6-v2, the default; all-mpnet-base-v2 once installed;
  tiny and tiny-<family> for tests);
- a local Hugging Face folder, only inside a folder the operator allows (setting or environment variable
  ``ZOO_ENCODER_DIRS``, folders separated by the path separator): a task owner can never point the server at an
  arbitrary path;
- ``upload:<id or name>``: a model uploaded to this task's leaderboard (`rounds.uploads`), "put this model in the
  loop": its stored folder becomes the encoder (the head is re-initialised for the task's labels by the recipe).

Precedence: the run's option (`rounds.options`, settings.ROUNDS_PIPELINE being every run's default options),
then the task's `retraining.encoder`, then the site's (settings.MODELZOO_RECIPE["encoder"]), then the library's
default. Anything else raises `EncoderError` with the reason, which forms, the API and commands show as it is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings

from modelzoo.models import ModelVersion
from zoo import encoders as zoo_encoders
from zoo.encoders import EncoderError

UPLOAD = "upload:"
START_FROM = ("pretrained", "live")
DEFAULT_START = "pretrained"

__all__ = ["EncoderError", "allowed_dirs", "encoder_for", "label_of", "resolved", "start_from_for",
           "upload_version", "validate_encoder"]


def allowed_dirs() -> list[Path]:
    """The folders under which a task or a run may name a checkpoint folder (settings.ZOO_ENCODER_DIRS, from the
    environment variable of that name: a list, or a path-separated string); none by default."""
    value: Any = settings.ZOO_ENCODER_DIRS
    if isinstance(value, str):
        value = [p for p in value.split(os.pathsep) if p.strip()]
    return [Path(p).expanduser().resolve() for p in value]


def is_folder(text: str) -> bool:
    """Whether a value names a folder (not a registered name, not an upload)."""
    return not text.startswith(UPLOAD) and text not in zoo_encoders.ENCODERS and \
        (os.sep in text or "/" in text or text.startswith(("~", ".")))


_is_path = is_folder


def _allowed_folder(text: str) -> Path:
    folder = Path(text).expanduser()
    if not folder.is_absolute():
        raise EncoderError(f"encoder folder {text!r} must be an absolute path")
    real = folder.resolve()
    dirs = allowed_dirs()
    if not dirs:
        raise EncoderError(f"encoder folder {text!r} is refused: this site allows no encoder folders (the operator "
                           f"lists the allowed parent folders in ZOO_ENCODER_DIRS); name a registered encoder "
                           f"({', '.join(zoo_encoders.ENCODERS.names())}) or upload:<id>")
    if not any(real == d or real.is_relative_to(d) for d in dirs):
        raise EncoderError(f"encoder folder {text!r} is not inside a folder this site allows (ZOO_ENCODER_DIRS: "
                           f"{', '.join(str(d) for d in dirs)})")
    return real


def upload_version(ref: str, task=None) -> ModelVersion:
    """The model version of an uploaded leaderboard model, by the upload's id or name (of `task` when given)."""
    ref = ref.strip()
    if not ref:
        raise EncoderError("upload: names no upload; give upload:<id> or upload:<name>")
    found = ModelVersion.objects.filter(upload__isnull=False).select_related("upload")
    if task is not None:
        found = found.filter(task=task)
    matches = list(found.filter(upload__pk=int(ref))) if ref.isdigit() else []
    if not matches:
        matches = list(found.filter(upload__name=ref).order_by("-upload__created_at")[:1])
    if not matches:
        where = f" for task {task.slug!r}" if task is not None else ""
        raise EncoderError(f"no uploaded model {ref!r}{where} (upload:<id or name> of a model on this task's "
                           f"leaderboard)")
    version = matches[0]
    if version.status in (ModelVersion.Status.FAILED, ModelVersion.Status.TRAINING):
        raise EncoderError(f"uploaded model {ref!r} is {version.status}: it cannot be put in the loop")
    return version


def resolved(value: str | None, task=None, *, check_dirs: bool = False) -> str:
    """What `zoo.encoders.resolve` is given for a value: the name, the folder, or an upload's folder. With
    `check_dirs` (a value someone gives: forms, run options) a folder must be inside ZOO_ENCODER_DIRS; at training
    time values were checked where they came in (or are the operator's: commands, settings)."""
    text = (value or "").strip()
    if not text:
        return zoo_encoders.DEFAULT
    if text.startswith(UPLOAD):
        version = upload_version(text[len(UPLOAD):], task)
        zoo_encoders.check_folder(version.artifact_path)
        return str(version.artifact_path.resolve())
    if text in zoo_encoders.ENCODERS:
        return text
    if _is_path(text):
        return str(_allowed_folder(text)) if check_dirs else str(Path(text).expanduser().resolve())
    zoo_encoders.resolve(text)  # raises the library's "unknown encoder" message
    return text


def validate_encoder(value: str | None, task=None, user=None, *, operator: bool = False) -> str | None:
    """The value to store (stripped; None for "the default"), or EncoderError saying why it cannot be used:
    an unknown name, a folder outside ZOO_ENCODER_DIRS or not a checkpoint of a family the platform runs, an upload
    that does not exist (on `task`) or failed. `user` is accepted for the callers' symmetry: who may change a task's
    settings is decided by the task's roles, and no user may name a folder outside ZOO_ENCODER_DIRS. `operator`:
    the site's operator on the command line (train_model, demo_models), who may name any folder."""
    del user
    text = (value or "").strip() if value is not None else ""
    if not text:
        return None
    zoo_encoders.resolve(resolved(text, task, check_dirs=not operator))  # the folder or name is a usable checkpoint
    return text


def encoder_for(task, options: Any = None) -> str:
    """The encoder a task trains with, as `zoo.encoders.resolve` understands it: the run's option (`options` is
    a PipelineOptions, a dict, or the value itself), else the task's setting, else the site's, else the default."""
    value = options.get("encoder") if isinstance(options, dict) else getattr(options, "encoder", options)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = (task.typed_config.retraining.encoder or None) if task is not None else None
        if value is not None:  # an owner's setting, however it was stored (a form, an import): folders checked again
            return resolved(str(value), task, check_dirs=True)
    if value is None:
        value = settings.MODELZOO_RECIPE.get("encoder") or zoo_encoders.DEFAULT
    return resolved(str(value), task)


def label_of(task, options: Any = None) -> str:
    """The encoder's name as people read it (the value chosen, e.g. upload:3, a name or a folder)."""
    value = options.get("encoder") if isinstance(options, dict) else getattr(options, "encoder", options)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = (task.typed_config.retraining.encoder or None) if task is not None else None
    return str(value or settings.MODELZOO_RECIPE.get("encoder") or zoo_encoders.DEFAULT)


def start_from_for(task, value: str | None = None) -> str:
    """"pretrained" or "live": the run's option, else the task's retraining.start_from."""
    chosen = value or (task.typed_config.retraining.start_from if task is not None else None) or DEFAULT_START
    if chosen not in START_FROM:
        raise ValueError(f"start_from must be one of {', '.join(START_FROM)}; got {chosen!r}")
    return chosen
