"""Export formats as a registry of strategies: adding a format is adding one module and one line here."""

from __future__ import annotations

from dynabench_site.errors import InvalidInput
from exports.formats.base import ExportFormat, RecordWriter
from exports.formats.csv_format import CsvFormat
from exports.formats.jsonl import JsonlFormat
from exports.formats.parquet import ParquetFormat

FORMATS: dict[str, ExportFormat] = {}


class UnknownFormat(InvalidInput, ValueError):
    pass


def register(fmt: ExportFormat) -> ExportFormat:
    FORMATS[fmt.name] = fmt
    return fmt


def get_format(name: str) -> ExportFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormat(f"unknown format {name!r}; choose one of: {', '.join(FORMATS)}") from None


for _fmt in (JsonlFormat(), CsvFormat(), ParquetFormat()):
    register(_fmt)

__all__ = ["FORMATS", "ExportFormat", "RecordWriter", "UnknownFormat", "get_format", "register"]
