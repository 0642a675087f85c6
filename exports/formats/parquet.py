from __future__ import annotations

from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from exports.formats.base import ExportFormat
from exports.schema import ExportSchema

ROW_GROUP_SIZE = 10_000


class ParquetWriter:
    """Converts each batch to Arrow at once (nested values as structs and lists of the task's schema) and writes
    a row group every `row_group_size` rows, so at most one row group (in compact Arrow buffers) is held, whatever
    the number of rows."""

    def __init__(self, sink: BinaryIO, schema: ExportSchema, row_group_size: int = ROW_GROUP_SIZE):
        self.schema = schema.arrow()
        self.names = schema.names
        self.row_group_size = row_group_size
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.writer = pq.ParquetWriter(pa.PythonFile(sink, mode="w"), self.schema, compression="zstd")

    def write(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        data = {name: [row[name] for row in records] for name in self.names}
        self.pending.append(pa.RecordBatch.from_pydict(data, schema=self.schema))
        self.pending_rows += len(records)
        if self.pending_rows >= self.row_group_size:
            self._flush()

    def _flush(self) -> None:
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        self.writer.write_table(table, row_group_size=max(self.pending_rows, 1))
        self.pending, self.pending_rows = [], 0

    def close(self) -> None:
        if self.pending:
            self._flush()
        self.writer.close()


class ParquetFormat(ExportFormat):
    """Apache Parquet (zstd), written in row groups; nested values are Arrow structs and lists of the task's
    schema (exports.schema), the same fields and types as JSONL's objects."""

    name = "parquet"
    extension = "parquet"
    media_type = "application/vnd.apache.parquet"
    compressible = False
    typed = True

    def writer(self, sink: BinaryIO, schema: ExportSchema) -> ParquetWriter:
        return ParquetWriter(sink, schema)
