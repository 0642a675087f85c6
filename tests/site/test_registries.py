"""Every choice list follows from its registry: explanation methods (`zoo.explain_methods.METHOD_SPECS`) and
export formats (`exports.formats.FORMATS`) are named, as string literals, in their registry's module(s) only; the
OpenAPI enum, the settings, the task schema and the create page's config are derived from them."""

from __future__ import annotations

import ast
import json
import os
import re
from functools import cache
from pathlib import Path

import pytest

from exports.formats import FORMATS
from zoo.explain_methods import DEFAULT_METHOD, METHOD_SPECS, METHODS

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {".venv", "tests", "docs", "node_modules", "var", ".git", "migrations", "shared",
                "bench"}  # benchmarks name the methods and formats they measure (their report's rows)

# The modules that may name them: the registries themselves, and names that only look alike.
EXPLANATION_HOMES = {"zoo/explain_methods.py"}
FORMAT_HOMES = {f"exports/formats/{name}" for name in ("jsonl.py", "csv_format.py", "parquet.py")}
LOOKALIKES = {
    "modelzoo/data.py",  # the function `jsonl` (reads a JSONL file of labelled rows), in `__all__`
    "modelzoo/management/commands/train_model.py",  # its option --jsonl (a file to train on)
}


@cache
def project_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        found += [Path(folder) / f for f in sorted(files) if f.endswith((".py", ".js"))]
    return found


@cache
def sources() -> list[tuple[str, str, frozenset[str]]]:
    """(path, text, its Python string literals) of every project module, read and parsed once."""
    out = []
    for path in project_files():
        text = path.read_text(errors="ignore")
        literals = frozenset(node.value for node in ast.walk(ast.parse(text))
                             if isinstance(node, ast.Constant) and isinstance(node.value, str)) \
            if path.suffix == ".py" else frozenset()
        out.append((path.relative_to(ROOT).as_posix(), text, literals))
    return out


def literal_homes(names: set[str]) -> dict[str, set[str]]:
    """name -> the project modules that hold it as a string literal (Python) or a quoted string / object key (JS)."""
    found: dict[str, set[str]] = {name: set() for name in names}
    for rel, text, literals in sources():
        for name in names:
            if name in literals or (rel.endswith(".js") and re.search(
                    rf"([\"'`]){re.escape(name)}\1|[{{,]\s*{re.escape(name)}\s*:", text)):
                found[name].add(rel)
    return found


def test_explanation_methods_are_named_in_their_registry_only():
    homes = literal_homes(set(METHODS))
    assert all(homes[name] for name in METHODS)  # the scan sees the registry itself
    strays = {name: sorted(where - EXPLANATION_HOMES - LOOKALIKES) for name, where in homes.items()}
    assert strays == {name: [] for name in METHODS}, "derive the list from zoo.explain_methods.METHOD_SPECS"


def test_export_formats_are_named_in_their_registry_only():
    homes = literal_homes(set(FORMATS))
    assert all(homes[name] for name in FORMATS)
    strays = {name: sorted(where - FORMAT_HOMES - LOOKALIKES) for name, where in homes.items()}
    assert strays == {name: [] for name in FORMATS}, "derive the list from exports.formats.FORMATS"


def test_every_explanation_method_runs_and_every_list_follows_the_registry(settings):
    from dynabench_site import env
    from modelzoo.services import explanation_method
    from tasks.kinds.base import TaskConfig
    from zoo import explain

    assert set(explain.GRADIENTS) | {explain.OCCLUSION} == set(METHOD_SPECS)
    assert TaskConfig.model_json_schema()["properties"]["explanation_method"]["enum"] == list(METHODS)
    assert TaskConfig().explanation_method == DEFAULT_METHOD
    for name in METHODS:
        assert env.env_choice("M", DEFAULT_METHOD, METHODS, environ={"M": name}) == name
        settings.MODEL_EXPLANATION_METHOD = name
        assert explanation_method() == name


def test_export_formats_say_what_a_bundle_and_the_card_need():
    from exports import services

    assert tuple(FORMATS) == services.DEFAULT_FORMATS
    assert all(fmt.name == name and fmt.datasets_loader for name, fmt in FORMATS.items())
    assert not FORMATS["parquet"].compressible and FORMATS["jsonl"].compressible  # Parquet is compressed already
    assert FORMATS["jsonl"].datasets_loader == "json"


def test_the_openapi_format_enum_is_the_export_registry(api, db):
    schema = api.get("/api/schema/?format=json").json()
    params = schema["paths"]["/api/tasks/{slug}/rounds/{number}/dataset/"]["get"]["parameters"]
    [fmt] = [p for p in params if p["name"] == "format"]
    assert sorted(fmt["schema"]["enum"]) == sorted(FORMATS)  # drf-spectacular sorts enums


@pytest.mark.django_db
def test_the_create_page_carries_every_explanation_method(client, open_round, personas):
    client.force_login(personas.annotator)
    html = client.get(f"/tasks/{open_round.task.slug}/create/").content.decode()
    match = re.search(r'<script id="create-config" type="application/json">(.*?)</script>', html, re.S)
    config = json.loads(match.group(1))
    assert config["explanation_methods"] == [
        {"name": s.name, "label": s.label, "approximate": s.approximate} for s in METHOD_SPECS.values()
    ]


def test_backends_and_kinds_are_keyed_by_their_own_names():
    from tasks.kinds import KINDS, kind_choices
    from tasks.models import Task
    from zoo.serving import BACKENDS, DEFAULT_BACKEND

    assert all(backend.name == name for name, backend in BACKENDS.items()) and DEFAULT_BACKEND in BACKENDS
    assert all(kind.name == name for name, kind in KINDS.items())
    assert [value for value, _ in Task._meta.get_field("kind").choices] == [name for name, _ in kind_choices()]


@pytest.mark.django_db
def test_a_bundle_asks_each_format_whether_it_compresses(open_round, monkeypatch):
    import io
    import zipfile

    from exports.bundle import write_bundle
    from exports.formats.csv_format import CsvFormat

    monkeypatch.setattr(CsvFormat, "compressible", False)  # the format says so; its suffix does not matter
    sink = io.BytesIO()
    write_bundle(open_round, sink, list(FORMATS), version="live")
    stored = {i.filename for i in zipfile.ZipFile(sink).infolist() if i.compress_type == zipfile.ZIP_STORED}
    assert stored == {f"data/{part}.{fmt.extension}" for part in ("train", "dev", "test")
                      for fmt in FORMATS.values() if not fmt.compressible}
    assert "data/train.csv" in stored
