"""A bundle: the data files of a round in one or more formats, the dataset card and a SHA-256 manifest.

Files are written to a temporary folder in one pass over the rows per split (every format at once),
then zipped with fixed timestamps into any binary sink (a file, or a drain for streaming).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.utils import timezone

from exports import splits
from exports.card import CardInfo, Stats, render_card
from exports.formats import get_format
from exports.records import RecordBuilder, record_batches
from tasks.models import Round
from validation import reliability

ZIP_DATE = (1980, 1, 1, 0, 0, 0)
HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class BundleResult:
    content_sha256: str  # over the data files only: equal data, equal checksum
    counts: dict[str, int]
    files: list[dict]
    validated: dict[str, int]  # rows per part whose label validators confirmed


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_part(round: Round, part: str, formats: list[str], folder: Path, stats: Stats,
                builder: RecordBuilder) -> list[dict]:
    queryset = splits.excluded(round) if part == splits.EXCLUDED else splits.in_split(round, part)
    paths = {name: folder / "data" / f"{part}.{get_format(name).extension}" for name in formats}
    handles = {name: path.open("wb") for name, path in paths.items()}
    try:
        writers = {name: get_format(name).writer(handles[name], builder.schema) for name in formats}
        for batch in record_batches(round.task, queryset, mark_exclusion=part == splits.EXCLUDED, builder=builder):
            stats.add(part, batch)
            for writer in writers.values():
                writer.write(batch)
        for writer in writers.values():
            writer.close()
    finally:
        for handle in handles.values():
            handle.close()
    stats.rows[part] += 0
    return [_describe(folder, path, name, part, stats.rows[part]) for name, path in paths.items()]


def _describe(folder: Path, path: Path, fmt: str, part: str, rows: int) -> dict:
    return {
        "path": path.relative_to(folder).as_posix(),
        "format": fmt,
        "part": part,
        "rows": rows,
        "bytes": path.stat().st_size,
        "sha256": sha256_file(path),
    }


def _zip(folder: Path, names: Iterable[str], sink: BinaryIO, stored: frozenset[str] = frozenset()) -> None:
    """Zip `names` (paths under `folder`); those in `stored` (files of a format that is not compressible, e.g.
    Parquet, already compressed) are stored as they are, the rest deflated."""
    with zipfile.ZipFile(sink, "w", allowZip64=True) as archive:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with (folder / name).open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                while block := source.read(HASH_CHUNK):
                    target.write(block)


def write_bundle(
    round: Round,
    sink: BinaryIO,
    formats: list[str],
    *,
    version: str,
    include_excluded: bool = False,
    work_dir: Path | None = None,
) -> BundleResult:
    splits.assign_splits(round)
    reliability.refresh(round.task)  # the reliability-weighted labels, redone only if votes changed
    parts = [*splits.SPLITS, *([splits.EXCLUDED] if include_excluded else [])]
    with tempfile.TemporaryDirectory(prefix="bundle-", dir=work_dir) as tmp:
        folder = Path(tmp)
        (folder / "data").mkdir()
        stats, builder = Stats(), RecordBuilder(round.task)
        files = [f for part in parts for f in _write_part(round, part, formats, folder, stats, builder)]
        info = CardInfo(round, version, timezone.now(), files, stats, splits.held_back(round), builder.schema)
        (folder / "README.md").write_text(render_card(info))
        sums = [*files, _describe(folder, folder / "README.md", "markdown", "card", 0)]
        (folder / "SHA256SUMS").write_text("".join(f"{f['sha256']}  {f['path']}\n" for f in sums))
        (folder / "manifest.json").write_text(json.dumps({"version": version, "files": sums}, indent=2))
        stored = frozenset(f["path"] for f in files if not get_format(f["format"]).compressible)
        _zip(folder, ["README.md", "SHA256SUMS", "manifest.json", *(f["path"] for f in files)], sink, stored)
    content = hashlib.sha256("".join(f"{f['sha256']} {f['path']}\n" for f in files).encode()).hexdigest()
    return BundleResult(content, {part: stats.rows[part] for part in parts}, files,
                        {part: stats.validated[part] for part in parts})
