"""Build self-contained TorchServe archives with torch-model-archiver.

An archive carries the model library whole (this `zoo` package, without compiled files), so the handler
(torchserve/handler.py) imports `zoo.runtime` exactly as the in-process backend does, and TorchServe needs
nothing from the project: the library imports no Django and no app (tests/site/test_import_layers.py). No list
of modules to keep up to date: a module added to the library is in the next archive.

`build_ensemble_archive` packs every member of an ensemble into ONE archive (`members/<i>/` each, and an
`ensemble.json` naming them in order): TorchServe then runs the whole ensemble in one worker process (one
Python runtime, one tokenizer) and answers all members in one request. It is written in TorchServe's
`no-archive` format (a folder in the model store: nothing is zipped at build time nor unzipped at every
TorchServe start), built beside its final place and renamed into it, so a half-built archive is never
visible and two builders racing for the same name both end with one complete archive.
`build_mar` (one artifact, one zipped `.mar`) is kept for single models.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from zoo.dynamics import DYNAMICS_FILE
from zoo.types import BackendError

PACKAGE = Path(__file__).resolve().parent  # the library, packed whole
HANDLER = PACKAGE.parent / "torchserve" / "handler.py"
LEFT_OUT = ("__pycache__", "*.pyc", "*.pyo")
WEIGHTS = "model.safetensors"
ENSEMBLE_FILE = "ensemble.json"
MANIFEST = Path("MAR-INF") / "MANIFEST.json"


def archiver() -> str:
    local = Path(sys.executable).parent / "torch-model-archiver"
    found = str(local) if local.exists() else shutil.which("torch-model-archiver")
    if not found:
        raise BackendError("torch-model-archiver is not installed", retryable=False)
    return found


def stage_runtime(folder: Path) -> Path:
    """Write `folder/zoo/`, the whole library (no compiled files), and return `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PACKAGE, folder / PACKAGE.name, ignore=shutil.ignore_patterns(*LEFT_OUT))
    return folder


def _run_archiver(command: list[str], name: str, near: Path | None = None) -> None:
    # The archiver copies everything into $TMPDIR/<name> first: a private TMPDIR keeps two builds of the
    # same name apart (and, `near` the export, on the same file system).
    with tempfile.TemporaryDirectory(prefix=".zoo-archiver-", dir=near) as private:
        env = {**os.environ, "TMPDIR": private}
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if result.returncode != 0:
        raise BackendError(f"torch-model-archiver failed for {name}: {result.stderr[-500:]}", retryable=False)


def served(path: Path) -> bool:
    """Whether an artifact's file goes into a serving archive: every file but the training-only ones (the training
    dynamics, `zoo.dynamics`: about 100 bytes per training row, read by the round's data map, never by serving)."""
    return path.is_file() and path.name != DYNAMICS_FILE


def build_mar(artifact: Path | str, name: str, export_dir: Path | str, version: str = "1.0") -> Path:
    """Weights, config, tokenizer, zoo.json and the serving code in one archive: `<export_dir>/<name>.mar`."""
    artifact, export_dir = Path(artifact), Path(export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zoo-mar-") as tmp:
        # A folder among the extra files is copied by its contents: the staging folder adds `zoo/`.
        extra = [p for p in sorted(artifact.iterdir()) if served(p) and p.name != WEIGHTS] + [stage_runtime(Path(tmp))]
        _run_archiver([
            archiver(), "--model-name", name, "--version", version, "--serialized-file", str(artifact / WEIGHTS),
            "--handler", str(HANDLER), "--extra-files", ",".join(str(p) for p in extra),
            "--export-path", str(export_dir), "--force",
        ], name)
    return export_dir / f"{name}.mar"


def archive_is_complete(path: Path | str) -> bool:
    path = Path(path)
    return (path / MANIFEST).is_file() and (path / ENSEMBLE_FILE).is_file()


def build_ensemble_archive(members: Sequence[tuple[int, str, Path | str]], name: str, export_dir: Path | str,
                           version: str = "1.0", share_trunk: bool = True) -> Path:
    """One archive for an ensemble: `<export_dir>/<name>/` (a TorchServe no-archive folder).

    `members`: (model version id, name, artifact folder) in ensemble order. Idempotent: an archive that is
    already complete is returned as it is (an ensemble's members and their artifacts never change).
    `share_trunk=False` (benchmarks) writes `"share_trunk": false` into ensemble.json: the worker then runs every
    member's full forward even when members share a frozen trunk (`zoo.trunk`)."""
    export_dir = Path(export_dir)
    final = export_dir / name
    if archive_is_complete(final):
        return final
    if not members:
        raise BackendError(f"ensemble {name} has no members", retryable=False)
    for _id, member_name, artifact in members:
        if not (Path(artifact) / "zoo.json").is_file():
            raise BackendError(f"model {member_name}: no artifact at {artifact}", retryable=False)
    export_dir.mkdir(parents=True, exist_ok=True)
    # Staged and exported beside the final folder (same file system): the weights are hard-linked into the
    # staging folder, copied once by the archiver, and the finished folder is renamed into place.
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=export_dir) as tmp:
        stage = stage_runtime(Path(tmp) / "stage")
        listing = []
        for i, (version_id, member_name, artifact) in enumerate(members):
            target = stage / "members" / str(i)
            target.mkdir(parents=True)
            for f in sorted(Path(artifact).iterdir()):
                if served(f):
                    _link_or_copy(f, target / f.name)
            listing.append({"id": int(version_id), "name": member_name, "dir": f"members/{i}"})
        listing_file = {"format": 1, "name": name, "members": listing, **({} if share_trunk else {"share_trunk": False})}
        (stage / ENSEMBLE_FILE).write_text(json.dumps(listing_file, indent=1))
        out = Path(tmp) / "out"
        out.mkdir()
        _run_archiver([
            archiver(), "--model-name", name, "--version", version, "--handler", str(HANDLER),
            "--extra-files", str(stage), "--export-path", str(out), "--archive-format", "no-archive", "--force",
        ], name, Path(tmp))
        try:
            os.rename(out / name, final)
        except OSError:  # another builder finished first: keep its (identical) archive
            if not archive_is_complete(final):
                raise
    return final


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
