"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`);
`rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in as `m`."""

from __future__ import annotations

from typing import Any


def build(world: Any) -> Any:
    return None


def rows(m: Any) -> list:
    return []
