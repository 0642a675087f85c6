"""The export format interface: a writer that takes batches of records and writes bytes to a sink."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, BinaryIO, ClassVar, Protocol

from exports.schema import ExportSchema


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
    flat: ClassVar[bool] = False  # True: nested values are written as JSON text (CSV), not as nested values
    typed: ClassVar[bool] = False  # True: the file carries its column types (Parquet), so a reader needs no card

    @property
    def datasets_loader(self) -> str:
        return self.loader or self.name

    @abstractmethod
    def writer(self, sink: BinaryIO, schema: ExportSchema) -> RecordWriter:
        """A writer of records of `schema` (exports.schema) to `sink` as they arrive; `close()` finishes the file
        (not the sink)."""


# One encoder for every value: json.dumps with arguments builds a new encoder per call.
json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def flat_value(value: Any) -> Any:
    """A value for a flat format (CSV): objects and lists become JSON text; strings, numbers and null stay."""
    return json_text(value) if value.__class__ is dict or value.__class__ is list else value
