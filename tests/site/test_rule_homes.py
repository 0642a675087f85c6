"""The map's "Where each rule lives" holds in the code: the fooled rule (`TaskKind.is_fooled`) is applied in one
place, the verdict seam `tasks.kinds.verdict.decide`, and everything that decides "fooled" (scoring, the sandbox,
the writing assistant, the language model opponent, simulate_rounds) calls the seam, never a kind's method nor the
`tasks.kinds.is_fooled` shorthand; and a verdict's stored or shown shape is built in one place, `Verdict.record`."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import tasks.kinds.verdict
from annotation.scoring import verdicts

ROOT = Path(__file__).resolve().parents[2]
APPS = ["accounts", "tasks", "annotation", "validation", "modelzoo", "hardness", "exports", "crowd", "rounds",
        "research", "dynabench_site", "zoo", "torchserve", "chat"]
HOME = "tasks/kinds/verdict.py"
# A kind's metric may count with its own rule (`self.is_fooled` in its `evaluate`): that is the rule's definition
# at work, not a second decision of an example's verdict.
KIND_MODULES = "tasks/kinds/"
# The seam's entry points an app may call: `decide`, and scoring's `verdict_of` (the model server's answer, and
# the opponent's row, handed to `decide`).
ENTRY_POINTS = {"decide": tasks.kinds.verdict.decide, "verdict_of": verdicts.verdict_of}


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def calls_named(names: set[str]) -> dict[str, list[tuple[int, str]]]:
    """module path -> (line, how it is reached) of every call of a function or method with one of `names`."""
    found: dict[str, list[tuple[int, str]]] = {}
    for rel, tree in sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in names:
                how = func.id
            elif isinstance(func, ast.Attribute) and func.attr in names:
                how = ast.unparse(func)
            else:
                continue
            found.setdefault(rel, []).append((node.lineno, how))
    return found


def resolved(rel: str, how: str):
    """What `how` (a name or `module.attr`) in module `rel` is, or None when it is not a module-level name."""
    target = importlib.import_module(module_of(ROOT / rel))
    for part in how.split("."):
        target = getattr(target, part, None)
    return target


def test_only_the_seam_applies_a_kinds_fooled_rule():
    calls = calls_named({"is_fooled"})
    home = [how for _, how in calls.pop(HOME, [])]
    assert home and all(how == "kind.is_fooled" for how in home)  # the kind's method, applied by `decide` alone
    strays = sorted(f"{rel}:{line}: {how}" for rel, found in calls.items() for line, how in found
                    if not (rel.startswith(KIND_MODULES) and how == "self.is_fooled"))
    assert strays == []  # nobody else: not the kind's method, not the `tasks.kinds.is_fooled` shorthand


def test_everything_that_decides_fooled_goes_through_the_seam():
    seam = {rel: [how for _, how in found if resolved(rel, how) in ENTRY_POINTS.values()]
            for rel, found in calls_named(set(ENTRY_POINTS)).items()}  # other functions named `decide` are not it
    callers = {rel for rel, found in seam.items() if found}
    assert {"annotation/scoring/verdicts.py", "annotation/services.py", "annotation/assistant.py",
            "modelzoo/opponent.py", "research/simulate_rounds/replay.py"} <= callers
    # scoring's entry point is the seam's own: it hands the model server's answer to `decide`
    assert "decide" in seam["annotation/scoring/verdicts.py"]


def test_a_verdict_is_shaped_in_one_place():
    """No dict literal of the apps that assemble verdicts (scoring, the sandbox, the assistant, the opponent) holds
    a verdict's fields: they come from `Verdict.record`, so a stored, a sandboxed and a suggested verdict agree."""
    hand_made = []
    for rel, tree in sources():
        if rel == HOME or not rel.startswith(("annotation/", "modelzoo/")):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in
                                                  ("ensemble_prediction", "model_predictions") for k in node.keys):
                hand_made.append(f"{rel}:{node.lineno}")
    assert hand_made == []
