"""The export format interface: a writer that takes batches of records and writes bytes to a sink."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, BinaryIO, ClassVar, Protocol

from exports.records import COLUMNS, JSON, RawJson


class RecordWriter(Protocol):
    def write(self, records: list[dict[str, Any]]) -> None: ...

    def close(self) -> None: ...


class ExportFormat(ABC):
    """One file format. Registered in exports.formats; stateless, so one instance serves every export."""

    name: ClassVar[str]  # what `?format=`, `--format` and snapshots say; the registry's key
    extension: ClassVar[str]
    media_type: ClassVar[str]
    compressible: ClassVar[bool] = True  # False: already compressed, so a bundle stores it as it is
    loader: ClassVar[str] = ""  # the Hugging Face `datasets` builder that reads it (the card); "": `name`

    @property
    def datasets_loader(self) -> str:
        return self.loader or self.name

    @abstractmethod
    def writer(self, sink: BinaryIO) -> RecordWriter:
        """A writer that writes to `sink` as records arrive; `close()` finishes the file (not the sink)."""


def flat_value(name: str, value: Any) -> Any:
    """A column value for tabular formats: strings stay strings, objects and lists become JSON text."""
    if COLUMNS[name] != JSON or value is None:
        return value
    if isinstance(value, RawJson):
        return json.loads(value) if value.startswith('"') else str(value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
