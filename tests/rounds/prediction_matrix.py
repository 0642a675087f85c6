"""The prediction-upload routes' part of the site's permission matrix (tests/site/test_permission_matrix.py).

`build(world)` adds what the rows act on (returned, stored as `world.predictions`); `rows(m)` returns the rows,
built with the matrix's `Row`, `expect` and outcome constants passed in as `m` (no import cycle).
"""

from __future__ import annotations

from typing import Any


def build(world: Any) -> Any:
    return None


def rows(m: Any) -> list:
    return []
