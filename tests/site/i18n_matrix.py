"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`);
`rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in as `m`."""

from __future__ import annotations

from typing import Any


def build(world: Any) -> Any:
    return None


def rows(m: Any) -> list:
    Row, p = m.Row, m.p
    return [
        # Django's language switch: anyone may choose the interface's language (a cookie; nothing else changes).
        Row("i18n/setlang/", "GET", p("/i18n/setlang/"), m.EVERYONE, note="(changes nothing: 204)"),
        Row("i18n/setlang/", "POST", p("/i18n/setlang/"), m.EVERYONE, lambda w, u: {"language": "es", "next": "/"}),
    ]
