"""Export formats as a registry of strategies: adding a format is adding one module and one line here.

Every list of formats follows from `FORMATS` (in registration order): the API's `format` enum and the publish
serializer's choices (exports/api.py, serializers.py), the formats a bundle holds by default
(`services.DEFAULT_FORMATS`), `export_round --format`, the download links. What differs per format (extension,
media type, compressible in a zip, the `datasets` loader the card names) is the format's own attribute.
"""

from __future__ import annotations

from dynabench_site.errors import InvalidInput
from exports.formats.base import ExportFormat, RecordWriter
from exports.formats.csv_format import CsvFormat
from exports.formats.jsonl import JsonlFormat
from exports.formats.parquet import ParquetFormat
from zoo.registry import Registry


class UnknownFormat(InvalidInput, ValueError):
    pass


FORMATS: Registry[ExportFormat] = Registry("format", error=UnknownFormat)  # an unknown name: a 400 answer


def register(fmt: ExportFormat) -> ExportFormat:
    return FORMATS.register(fmt.name, fmt)


def get_format(name: str) -> ExportFormat:
    return FORMATS.lookup(name)


for _fmt in (JsonlFormat(), CsvFormat(), ParquetFormat()):
    register(_fmt)

DEFAULT_FORMAT = JsonlFormat.name  # a file asked for without `format`

__all__ = ["DEFAULT_FORMAT", "FORMATS", "ExportFormat", "RecordWriter", "UnknownFormat", "get_format", "register"]
