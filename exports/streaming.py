"""Turn a writer that pushes bytes into a sink into an iterator of chunks, for StreamingHttpResponse."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

from django.db.models import QuerySet

from exports.formats import ExportFormat
from exports.records import RecordBuilder, record_batches
from tasks.models import Task

READ_CHUNK = 1 << 16


class Drain:
    """A write-only, non-seekable file that hands out what was written since the last `take()`."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        if data:
            self.parts.append(bytes(data))
            self.position += len(data)
        return len(data)

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False


def stream_records(task: Task, queryset: QuerySet, fmt: ExportFormat) -> Iterator[bytes]:
    """The file `fmt` makes of `queryset`'s records, a chunk of rows at a time."""
    drain = Drain()
    builder = RecordBuilder(task)
    writer = fmt.writer(drain, builder.schema)
    for batch in record_batches(task, queryset, builder=builder):
        writer.write(batch)
        if chunk := drain.take():
            yield chunk
    writer.close()
    if chunk := drain.take():
        yield chunk


def stream_file(path: Path, delete: bool = False) -> Iterator[bytes]:
    try:
        with path.open("rb") as handle:
            while block := handle.read(READ_CHUNK):
                yield block
    finally:
        if delete:
            path.unlink(missing_ok=True)


def stream_zip_member(path: Path, member: str) -> Iterator[bytes]:
    with zipfile.ZipFile(path) as archive, archive.open(member) as handle:
        while block := handle.read(READ_CHUNK):
            yield block
