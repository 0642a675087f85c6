"""The import direction between apps, checked over the source (every import, in-function ones included).

Layers, bottom to top:
    zoo                            — the model library (torch, transformers): imports no Django, no app, not
                                     the kernel; what TorchServe runs, packed whole into every archive
    dynabench_site kernel (errors, env, jobs, celery, settings)  — imports no app
    accounts                       — where an account came from (sign-up address, external worker id)
    tasks                          — tasks, rounds-as-data, kinds, roles (global and per task), guidelines
    modelzoo                       — models, serving, training; receives ready labelled sets
    hardness                       — Hard-Bench scores and seeding, on top of the model zoo
    annotation, validation         — the collection flow (validation never calls a model)
    exports, crowd                 — round datasets (the one owner of splits); the crowd (quizzes, worker
                                     links, pay, badges), which never sees models or datasets
    rounds                         — the round pipeline that ties them together
    research, dynabench_site urls/api/pages — on top; no app imports research
The TorchServe handler runs inside TorchServe without Django: neither it nor anything it imports may import Django,
and it imports the model library alone.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ["accounts", "tasks", "annotation", "validation", "modelzoo", "hardness", "exports", "crowd", "rounds", "research",
        "torchserve", "chat", "study", "notify"]
LIBRARY = "zoo"  # below every app and the kernel
DJANGO = ("django", "rest_framework", "celery", "kombu", "channels")
KERNEL = ["dynabench_site.errors", "dynabench_site.env", "dynabench_site.jobs", "dynabench_site.celery",
          "dynabench_site.settings", "dynabench_site.throttles", "dynabench_site.bodylimit", "dynabench_site.parsers",
          "dynabench_site.params", "dynabench_site.csvsafe", "dynabench_site.text", "dynabench_site.rendering",
          "dynabench_site.textdata", "dynabench_site.health", "dynabench_site.health_tags",
          "dynabench_site.access_cache", "dynabench_site.wake"]
FORBIDDEN = {
    "accounts": {"tasks", "annotation", "validation", "modelzoo", "hardness", "exports", "crowd", "rounds", "research",
                 "chat", "study", "notify"},
    "tasks": {"annotation", "validation", "modelzoo", "hardness", "exports", "crowd", "rounds", "research", "chat",
              "study", "notify"},
    "modelzoo": {"annotation", "validation", "exports", "crowd", "rounds", "hardness", "research", "chat", "study",
                 "notify"},
    "hardness": {"annotation", "validation", "exports", "crowd", "rounds", "research", "chat", "study", "notify"},
    # notify (outgoing webhooks and e-mail) sits right above tasks: the apps that cause an event call it
    "notify": {"annotation", "validation", "modelzoo", "hardness", "exports", "crowd", "rounds", "research", "chat",
               "study"},
    # study (consent, surveys, arms, participants, translations) sits above the model zoo (an arm's ensemble) and
    # below the apps where people work, which read a person's arm and language from it
    "study": {"annotation", "validation", "exports", "crowd", "rounds", "hardness", "research", "chat", "notify"},
    "annotation": {"validation", "exports", "crowd", "rounds", "hardness", "research", "chat"},
    "validation": {"modelzoo", "hardness", "exports", "crowd", "rounds", "research", "chat"},
    # chat (conversations with language models, their judgements, the arena) sits beside annotation: it calls
    # models through modelzoo's providers and may use validation's statistics; exports and rounds read it
    "chat": {"annotation", "exports", "crowd", "rounds", "hardness", "research"},
    "exports": {"modelzoo", "hardness", "crowd", "rounds", "research"},
    "crowd": {"modelzoo", "hardness", "exports", "rounds", "research", "chat"},
    "rounds": {"research"},
    "torchserve": {"accounts", "tasks", "annotation", "validation", "modelzoo", "hardness", "exports", "crowd",
                   "rounds", "research", "chat", "study", "notify"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def sources() -> dict[str, Path]:
    found = {}
    for top in [*APPS, "dynabench_site", LIBRARY]:
        for path in (ROOT / top).rglob("*.py"):
            if "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


@cache
def imports_of(module: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(sources()[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return frozenset(names)


def app_of(name: str) -> str:
    return name.split(".")[0]


def app_imports(app: str) -> dict[str, set[str]]:
    """Other apps this app imports -> the modules that do it."""
    out: dict[str, set[str]] = {}
    for module in sources():
        if app_of(module) != app:
            continue
        for name in imports_of(module):
            other = app_of(name)
            if other != app and other in [*APPS, "dynabench_site", LIBRARY]:
                out.setdefault(other, set()).add(f"{module}: {name}")
    return out


@pytest.mark.parametrize("app", sorted(FORBIDDEN))
def test_an_app_imports_no_layer_above_it(app):
    found = app_imports(app)
    offenders = sorted(line for other in FORBIDDEN[app] for line in found.get(other, ()))
    assert offenders == []


def test_no_two_apps_import_each_other():
    graph = {app: set(app_imports(app)) for app in APPS}
    mutual = sorted((a, b) for a in APPS for b in graph[a] if b in graph and a in graph[b] and a < b)
    assert mutual == []


@pytest.mark.parametrize("module", KERNEL)
def test_the_site_kernel_imports_no_app(module):
    assert sorted(n for n in imports_of(module) if app_of(n) in APPS) == []


def project_module(name: str) -> str | None:
    """The project module an import name refers to (a module, or the module holding an imported name)."""
    while name:
        if name in sources():
            return name
        name = name.rpartition(".")[0]
    return None


def test_the_torchserve_handler_never_imports_django():
    seen, todo, django_users = set(), ["torchserve.handler"], []
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in imports_of(module):
            if app_of(name) in (*DJANGO, "dynabench_site"):
                django_users.append(f"{module}: {name}")
            elif (inner := project_module(name)) is not None:
                todo.append(inner)
    assert "zoo.runtime" in seen  # the walk follows the handler into the model library
    assert django_users == []


def library_modules() -> list[str]:
    return sorted(m for m in sources() if app_of(m) == LIBRARY)


def test_the_model_library_imports_neither_django_nor_any_app_nor_the_kernel():
    """Every import of every module of `zoo` (in-function and TYPE_CHECKING ones too): the library runs where
    neither Django nor the project is (TorchServe, a plain script), so it imports only itself and third parties."""
    assert len(library_modules()) > 20 and "zoo.serving.torchserve" in library_modules()
    offenders = sorted(f"{module}: {name}" for module in library_modules() for name in imports_of(module)
                       if app_of(name) in (*DJANGO, *APPS, "dynabench_site"))
    assert offenders == []


def test_the_model_library_names_no_module_outside_itself_by_string():
    """Registries that import by dotted path (`zoo.heads.HEADS`) point into the library too."""
    from zoo.heads import HEADS

    assert all(path.startswith(f"{LIBRARY}.") and project_module(path.rpartition(".")[0]) for _, path in HEADS.values())
    offenders = []
    for module in library_modules():
        for node in ast.walk(ast.parse(sources()[module].read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in
                    ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
                    and app_of(str(node.args[0].value)) in (*DJANGO, *APPS, "dynabench_site")):
                offenders.append(f"{module}: {node.args[0].value}")
    assert offenders == []


def test_no_import_cycles_between_modules():
    """Cycles between modules are resolved by moving code, not hidden behind in-function imports."""
    graph = {m: {p for n in imports_of(m) if (p := project_module(n)) and p != m} for m in sources()}
    # A package's __init__ re-exporting its submodules is not a cycle with them.
    graph = {m: {p for p in deps if not m.startswith(p + ".")} for m, deps in graph.items()}
    cycles = sorted({tuple(sorted(c)) for c in strongly_connected(graph) if len(c) > 1})
    assert cycles == []


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            out.append(component)

    for node in list(graph):
        if node not in index:
            visit(node)
    return out
