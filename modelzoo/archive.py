"""Build a self-contained TorchServe archive (.mar) for one model artifact with torch-model-archiver.

The archive carries the zoo's serving code as a small `modelzoo` package of its own (`runtime.py`,
`explain.py` and the `heads` package, none of which imports Django), so the handler imports
`modelzoo.runtime` exactly as the in-process backend does, and TorchServe needs nothing from this project.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from modelzoo.serving.base import BackendError

PACKAGE = Path(__file__).resolve().parent
HANDLER = PACKAGE.parent / "torchserve" / "handler.py"
RUNTIME_MODULES = ["runtime.py", "explain.py", "heads"]  # inside modelzoo/; a folder goes in whole
WEIGHTS = "model.safetensors"


def archiver() -> str:
    local = Path(sys.executable).parent / "torch-model-archiver"
    found = str(local) if local.exists() else shutil.which("torch-model-archiver")
    if not found:
        raise BackendError("torch-model-archiver is not installed", retryable=False)
    return found


def stage_runtime(folder: Path) -> Path:
    """Write `folder/modelzoo/` with the serving code (no compiled files) and return `folder`."""
    package = folder / "modelzoo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""The model zoo\'s serving code, as packed into a TorchServe archive."""\n')
    for name in RUNTIME_MODULES:
        source = PACKAGE / name
        if source.is_dir():
            shutil.copytree(source, package / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, package / name)
    return folder


def build_mar(artifact: Path | str, name: str, export_dir: Path | str, version: str = "1.0") -> Path:
    """Weights, config, tokenizer, zoo.json and the serving code in one archive: `<export_dir>/<name>.mar`."""
    artifact, export_dir = Path(artifact), Path(export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zoo-mar-") as tmp:
        # A folder among the extra files is copied by its contents: the staging folder adds `modelzoo/`.
        extra = [p for p in sorted(artifact.iterdir()) if p.is_file() and p.name != WEIGHTS] + [stage_runtime(Path(tmp))]
        command = [
            archiver(), "--model-name", name, "--version", version, "--serialized-file", str(artifact / WEIGHTS),
            "--handler", str(HANDLER), "--extra-files", ",".join(str(p) for p in extra),
            "--export-path", str(export_dir), "--force",
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise BackendError(f"torch-model-archiver failed for {name}: {result.stderr[-500:]}", retryable=False)
    return export_dir / f"{name}.mar"
