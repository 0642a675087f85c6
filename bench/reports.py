"""What the benchmark scripts share when they write their page under docs/benchmarks/."""

from __future__ import annotations

from pathlib import Path


def kept_notes(path: Path) -> str:
    """The hand-written "## Notes" section of the page being replaced (kept across runs), or nothing."""
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8")
    at = text.find("\n## Notes")
    return text[at:] if at >= 0 else ""
