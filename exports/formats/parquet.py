from __future__ import annotations

from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from exports.formats.base import ExportFormat, flat_value
from exports.records import BOOL, FLOAT, INT, column_names, columns

ARROW_TYPES = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_()}
ROW_GROUP_SIZE = 10_000


def arrow_schema() -> pa.Schema:
    return pa.schema([pa.field(name, ARROW_TYPES.get(kind, pa.string())) for name, kind in columns()])


class ParquetWriter:
    """Buffers at most one row group, so memory stays flat whatever the number of rows."""

    def __init__(self, sink: BinaryIO, row_group_size: int = ROW_GROUP_SIZE):
        self.schema = arrow_schema()
        self.names = column_names()
        self.row_group_size = row_group_size
        self.pending: list[dict[str, Any]] = []
        self.writer = pq.ParquetWriter(pa.PythonFile(sink, mode="w"), self.schema, compression="zstd")

    def write(self, records: list[dict[str, Any]]) -> None:
        self.pending.extend(records)
        while len(self.pending) >= self.row_group_size:
            self._flush(self.pending[: self.row_group_size])
            self.pending = self.pending[self.row_group_size :]

    def _flush(self, rows: list[dict[str, Any]]) -> None:
        data = {name: [flat_value(name, row[name]) for row in rows] for name in self.names}
        self.writer.write_table(pa.Table.from_pydict(data, schema=self.schema))

    def close(self) -> None:
        if self.pending:
            self._flush(self.pending)
            self.pending = []
        self.writer.close()


class ParquetFormat(ExportFormat):
    """Apache Parquet (zstd), written in row groups; objects and lists are JSON text columns."""

    name = "parquet"
    extension = "parquet"
    media_type = "application/vnd.apache.parquet"
    compressible = False

    def writer(self, sink: BinaryIO) -> ParquetWriter:
        return ParquetWriter(sink)
