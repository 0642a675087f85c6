"""Research code sits on top of the platform: no app imports it (the reproduction can change freely)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ["annotation", "dynabench_site", "exports", "hardness", "modelzoo", "rounds", "tasks", "torchserve", "validation"]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_platform_module_imports_research():
    offenders = [str(path.relative_to(ROOT)) for app in APPS for path in sorted((ROOT / app).rglob("*.py"))
                 if any(name.split(".")[0] == "research" for name in imported_modules(path))]
    assert offenders == []
