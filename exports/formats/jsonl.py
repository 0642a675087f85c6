from __future__ import annotations

import json
from typing import Any, BinaryIO

from exports.formats.base import ExportFormat
from exports.schema import ExportSchema

# The C encoder writes a whole record in one call (records are built in the schema's column order, with every
# nested field present: exports.schema).
encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def line(record: dict[str, Any]) -> str:
    """One JSON object."""
    return encode(record)


class JsonlWriter:
    def __init__(self, sink: BinaryIO, schema: ExportSchema):
        self.sink = sink

    def write(self, records: list[dict[str, Any]]) -> None:
        if records:
            self.sink.write(("\n".join(map(encode, records)) + "\n").encode())

    def close(self) -> None:
        pass


class JsonlFormat(ExportFormat):
    """One JSON object per line; nested values (context, input, predictions) are objects and arrays, with the
    same fields and types as Parquet's structs and lists (exports.schema)."""

    name = "jsonl"
    extension = "jsonl"
    media_type = "application/x-ndjson"
    loader = "json"  # `datasets` reads JSON lines with its json builder

    def writer(self, sink: BinaryIO, schema: ExportSchema) -> JsonlWriter:
        return JsonlWriter(sink, schema)
