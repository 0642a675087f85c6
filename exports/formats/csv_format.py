from __future__ import annotations

from typing import Any, BinaryIO

from dynabench_site import csvsafe
from exports.formats.base import ExportFormat, flat_value
from exports.records import column_names


class CsvWriter:
    def __init__(self, sink: BinaryIO):
        self.sink = sink
        self.columns = column_names()
        self._write_rows([self.columns])

    def _write_rows(self, rows: list[list[Any]]) -> None:
        # Cells a spreadsheet would run as a formula get a leading ' (dynabench_site.csvsafe).
        self.sink.write(csvsafe.rows_text(rows).encode())

    def write(self, records: list[dict[str, Any]]) -> None:
        self._write_rows([[flat_value(c, r[c]) for c in self.columns] for r in records])

    def close(self) -> None:
        pass


class CsvFormat(ExportFormat):
    """RFC 4180 CSV with a header; objects and lists are JSON text, a missing value is an empty cell; text that
    starts like a formula (= + - @ tab CR) is prefixed with ' so spreadsheets never evaluate it."""

    name = "csv"
    extension = "csv"
    media_type = "text/csv"

    def writer(self, sink: BinaryIO) -> CsvWriter:
        return CsvWriter(sink)
