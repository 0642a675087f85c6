"""This part's rows of the site's permission matrix (tests/site/test_permission_matrix.py: PART_MATRICES).

`build(world)` adds what the rows act on and returns it (kept as `world.parts[<this module's short name>]`);
`rows(m)` returns the rows, built with the matrix's `Row`, `expect` and outcome constants passed in as `m`.

Who: anyone chooses the interface's language and reads the page scripts' strings; a task's owners and admins
translate its texts (study.text_views); everyone else meets the task's usual answer (403 for those who see it)."""

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
        # The page scripts' strings (Django's JavaScriptCatalog), in the page's language: public, like the scripts.
        Row("jsi18n/", "GET", p("/jsi18n/?v=ar"), m.EVERYONE),
        # The owner's translations of the task's texts.
        Row("tasks/<slug:slug>/texts/", "GET", p("/tasks/sentiment/texts/"), m.OWNERS),
        Row("tasks/<slug:slug>/texts/<str:language>/", "GET", p("/tasks/sentiment/texts/ar/"), m.OWNERS),
        Row("tasks/<slug:slug>/texts/<str:language>/", "POST", p("/tasks/sentiment/texts/ar/"), m.OWNERS,
            lambda w, u: {"label:positive": "إيجابي"}),
        Row("tasks/<slug:slug>/texts/<str:language>/", "GET", p("/tasks/hidden/texts/ar/"),
            m.expect(m.HIDDEN, only=("owner", "admin")), note="(a hidden task)"),
    ]
