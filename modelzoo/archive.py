"""Build a self-contained TorchServe archive (.mar) for one model artifact with torch-model-archiver."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from modelzoo.serving.base import BackendError

PACKAGE = Path(__file__).resolve().parent
HANDLER = PACKAGE.parent / "torchserve" / "handler.py"
RUNTIME_FILES = [PACKAGE / "runtime.py", PACKAGE / "explain.py"]
WEIGHTS = "model.safetensors"


def archiver() -> str:
    local = Path(sys.executable).parent / "torch-model-archiver"
    found = str(local) if local.exists() else shutil.which("torch-model-archiver")
    if not found:
        raise BackendError("torch-model-archiver is not installed", retryable=False)
    return found


def build_mar(artifact: Path | str, name: str, export_dir: Path | str, version: str = "1.0") -> Path:
    """Weights, config, tokenizer, zoo.json and the runtime code in one archive: `<export_dir>/<name>.mar`."""
    artifact, export_dir = Path(artifact), Path(export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    extra = [p for p in sorted(artifact.iterdir()) if p.is_file() and p.name != WEIGHTS] + RUNTIME_FILES
    command = [
        archiver(), "--model-name", name, "--version", version, "--serialized-file", str(artifact / WEIGHTS),
        "--handler", str(HANDLER), "--extra-files", ",".join(str(p) for p in extra),
        "--export-path", str(export_dir), "--force",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise BackendError(f"torch-model-archiver failed for {name}: {result.stderr[-500:]}", retryable=False)
    return export_dir / f"{name}.mar"
