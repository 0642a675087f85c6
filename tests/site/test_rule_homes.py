"""The map's "Where each rule lives" holds in the code: the fooled rule (`TaskKind.is_fooled`) is applied in one
place, `tasks.kinds.is_fooled`, and everything that decides "fooled" (scoring, the sandbox, the writing assistant,
the language model opponent, simulate_rounds) calls that function, never a kind's method of its own."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import tasks.kinds

ROOT = Path(__file__).resolve().parents[2]
APPS = ["accounts", "tasks", "annotation", "validation", "modelzoo", "hardness", "exports", "crowd", "rounds",
        "research", "dynabench_site", "zoo", "torchserve"]
HOME = "tasks/kinds/__init__.py"


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def fooled_calls() -> dict[str, list[tuple[int, str]]]:
    """module path -> (line, how it reaches `is_fooled`) of every call of a function or method named is_fooled."""
    found: dict[str, list[tuple[int, str]]] = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Name) and func.id == "is_fooled":
                    how = "is_fooled"
                elif isinstance(func, ast.Attribute) and func.attr == "is_fooled":
                    how = ast.unparse(func)
                else:
                    continue
                found.setdefault(path.relative_to(ROOT).as_posix(), []).append((node.lineno, how))
    return found


def resolves_to_the_rules_home(rel: str, how: str) -> bool:
    """Whether `how` (a name or `module.is_fooled`) in module `rel` is the function `tasks.kinds.is_fooled`."""
    module = importlib.import_module(module_of(ROOT / rel))
    target = module
    for part in how.split("."):
        target = getattr(target, part, None)
    return target is tasks.kinds.is_fooled


def test_the_fooled_rule_is_applied_only_by_tasks_kinds_is_fooled():
    calls = fooled_calls()
    assert [how for _, how in calls.pop(HOME)] == ["task.kind_impl.is_fooled"]  # the one call of the kind's method
    strays = sorted(f"{rel}:{line}: {how}" for rel, found in calls.items() for line, how in found
                    if not resolves_to_the_rules_home(rel, how))
    assert strays == []
    # everything that decides "fooled" is among the callers
    assert {"annotation/scoring.py", "annotation/services.py", "annotation/assistant.py", "modelzoo/opponent.py",
            "rounds/simulation.py"} <= set(calls)
