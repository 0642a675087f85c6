from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from json.encoder import encode_basestring  # the C implementation when available
from typing import Any, BinaryIO

from exports.formats.base import ExportFormat
from exports.records import RawJson

encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# Fast paths for the value types of a record (the generic encoder costs more than the rest of an export).
SCALARS: dict[type, Callable[[Any], str]] = {
    RawJson: str,
    str: encode_basestring,
    int: int.__repr__,
    bool: lambda v: "true" if v else "false",
    type(None): lambda v: "null",
}


def value_text(value: Any) -> str:
    return SCALARS.get(type(value), encode)(value)


@cache
def key_text(key: str) -> str:
    return encode_basestring(key) + ":"


def line(record: dict[str, Any]) -> str:
    """One JSON object; JSON text from the database is put in as it is."""
    return "{" + ",".join(key_text(k) + value_text(v) for k, v in record.items()) + "}"


class JsonlWriter:
    def __init__(self, sink: BinaryIO):
        self.sink = sink

    def write(self, records: list[dict[str, Any]]) -> None:
        lines = [line(record) for record in records]
        if lines:
            self.sink.write(("\n".join(lines) + "\n").encode())

    def close(self) -> None:
        pass


class JsonlFormat(ExportFormat):
    """One JSON object per line; nested values (context, input, predictions) stay nested."""

    name = "jsonl"
    extension = "jsonl"
    media_type = "application/x-ndjson"
    loader = "json"  # `datasets` reads JSON lines with its json builder

    def writer(self, sink: BinaryIO) -> JsonlWriter:
        return JsonlWriter(sink)
