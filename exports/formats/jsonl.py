from __future__ import annotations

import json
from typing import Any, BinaryIO

from exports.formats.base import ExportFormat


class JsonlWriter:
    def __init__(self, sink: BinaryIO):
        self.sink = sink

    def write(self, records: list[dict[str, Any]]) -> None:
        lines = [json.dumps(record, ensure_ascii=False, separators=(",", ":")) for record in records]
        if lines:
            self.sink.write(("\n".join(lines) + "\n").encode())

    def close(self) -> None:
        pass


class JsonlFormat(ExportFormat):
    """One JSON object per line; nested values (context, input, predictions) stay nested."""

    name = "jsonl"
    extension = "jsonl"
    media_type = "application/x-ndjson"

    def writer(self, sink: BinaryIO) -> JsonlWriter:
        return JsonlWriter(sink)
