"""Every setting is defined once, in dynabench_site/settings.py (read through the typed readers of
dynabench_site/env.py); code reads it as `settings.X`, never as `getattr(settings, "X", default)`, which would
repeat (and could contradict) the default. Checked over the source with ast."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest
from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured

from dynabench_site.env import env_json_object

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", "node_modules", "var", ".hypothesis", ".git", "__pycache__", "migrations"}
SETTINGS_FILE = ROOT / "dynabench_site" / "settings.py"


@cache
def sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts))


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@cache
def defined() -> set[str]:
    names = {name for name in dir(global_settings) if name.isupper()}
    for node in ast.walk(tree(SETTINGS_FILE)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return names


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}"


def test_no_setting_is_read_with_a_default_of_its_own():
    found = [where(path, node) for path in sources() for node in ast.walk(tree(path))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
             and len(node.args) == 3 and isinstance(node.args[0], ast.Name) and node.args[0].id == "settings"]
    assert not found, "read settings.X instead (defined once in dynabench_site/settings.py): " + ", ".join(found)


def test_every_setting_read_by_the_code_is_defined():
    """`settings.X` read anywhere in the project's code (not the tests, which set their own) names a setting of
    settings.py or one of Django's."""
    reads = [(path, node) for path in sources() if path.relative_to(ROOT).parts[0] != "tests"
             for node in ast.walk(tree(path))
             if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr.isupper()
             and isinstance(node.value, ast.Name) and node.value.id == "settings"]
    assert len(reads) > 50, "hardly any settings.X found: has the scan lost the project's code?"
    missing = [f"{where(path, node)} {node.attr}" for path, node in reads if node.attr not in defined()]
    assert not missing, "define these in dynabench_site/settings.py: " + ", ".join(missing)


def test_every_setting_a_serving_backend_reads_is_defined():
    """The library's backends read their settings by name (`config("X", default)`, zoo.serving.base); the site
    passes its Django settings, where each must be defined (modelzoo.serving.setting)."""
    read = {(path, node) for path in sorted((ROOT / "zoo" / "serving").glob("*.py")) for node in ast.walk(tree(path))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "config"
            and node.args and isinstance(node.args[0], ast.Constant)}
    assert read, "no backend setting found: has zoo.serving changed how backends read settings?"
    missing = [f"{where(path, node)} {node.args[0].value}" for path, node in read if node.args[0].value not in defined()]
    assert not missing, "define these in dynabench_site/settings.py: " + ", ".join(missing)


def test_option_groups_are_json_objects_and_a_bad_one_stops_the_start():
    assert env_json_object("ROUNDS_PIPELINE", {}, environ={}) == {}
    assert env_json_object("ROUNDS_PIPELINE", {}, environ={"ROUNDS_PIPELINE": '{"seeds": [0, 1]}'}) == {"seeds": [0, 1]}
    for bad in ('{"seeds": [0, 1]', "[1, 2]"):
        with pytest.raises(ImproperlyConfigured, match="ROUNDS_PIPELINE="):
            env_json_object("ROUNDS_PIPELINE", {}, environ={"ROUNDS_PIPELINE": bad})
