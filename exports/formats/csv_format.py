from __future__ import annotations

from typing import Any, BinaryIO

from dynabench_site import csvsafe
from exports.formats.base import ExportFormat, flat_value
from exports.schema import ExportSchema


class CsvWriter:
    def __init__(self, sink: BinaryIO, schema: ExportSchema):
        self.sink = sink
        self.columns = schema.names
        self._write_rows([self.columns])

    def _write_rows(self, rows: list[list[Any]]) -> None:
        # Cells a spreadsheet would run as a formula get a leading ' (dynabench_site.csvsafe).
        self.sink.write(csvsafe.rows_text(rows).encode())

    def write(self, records: list[dict[str, Any]]) -> None:
        self._write_rows([[flat_value(r[c]) for c in self.columns] for r in records])

    def close(self) -> None:
        pass


class CsvFormat(ExportFormat):
    """RFC 4180 CSV with a header. Flat by nature: a nested value (a struct or list of the export schema) is the
    JSON text of that value, exactly as the JSONL file has it, a missing value is an empty cell; text that starts
    like a formula (= + - @ tab CR) is prefixed with ' so spreadsheets never evaluate it."""

    name = "csv"
    extension = "csv"
    media_type = "text/csv"
    flat = True

    def writer(self, sink: BinaryIO, schema: ExportSchema) -> CsvWriter:
        return CsvWriter(sink, schema)
