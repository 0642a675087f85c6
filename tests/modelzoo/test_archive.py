"""The TorchServe archive is self-contained: it carries the model library whole, which runs without this project
and without Django."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import zoo
from modelzoo.testing import tiny_artifact
from zoo.archive import HANDLER, build_mar, stage_runtime
from zoo.dynamics import DYNAMICS_FILE
from zoo.runtime import Predictor

LIBRARY = Path(zoo.__file__).resolve().parent
PASSAGE = "The Eiffel Tower was completed in 1889 and it stands in Paris, France."

# Run in a bare folder (-I: no project, no PYTHONPATH on sys.path), as the handler does: the model folder first.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from zoo.runtime import Predictor
predictor = Predictor.load(sys.argv[1])
inputs = json.loads(sys.argv[2])
print(json.dumps({"predictions": predictor.predict(inputs), "explanation": predictor.explain(inputs[0]),
                  "django": sorted(m for m in sys.modules if m.split(".")[0] == "django")}))
"""


def modules(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.py") if "__pycache__" not in p.parts}


def test_the_archive_carries_every_module_of_the_library_and_nothing_compiled(tmp_path):
    (LIBRARY / "__pycache__").mkdir(exist_ok=True)  # compiled files are left out even where they exist
    staged = stage_runtime(tmp_path / "stage") / "zoo"
    assert modules(staged) == modules(LIBRARY)
    assert {"runtime.py", "trunk.py", "explain.py", "precision.py", "heads/qa.py", "serving/torchserve.py"} <= modules(staged)
    assert not [p for p in staged.rglob("*") if p.name == "__pycache__" or p.suffix in (".pyc", ".pyo")]
    for name in modules(LIBRARY):
        assert (staged / name).read_bytes() == (LIBRARY / name).read_bytes()


# Import every module of a staged library in a bare interpreter (-I: no project, no PYTHONPATH), as TorchServe does.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import zoo
for module in pkgutil.walk_packages(zoo.__path__, "zoo."):
    importlib.import_module(module.name)
project = {"django", "rest_framework", "dynabench_site", "modelzoo", "tasks", "annotation", "rounds", "hardness"}
print(json.dumps({"outside": sorted(m for m in sys.modules if m.split(".")[0] in project),
                  "zoo": sorted({m.__file__.startswith(sys.argv[1]) for n, m in sys.modules.items()
                                 if n.split(".")[0] == "zoo"})}))
"""


def test_the_staged_library_imports_whole_without_the_project(tmp_path):
    staged = stage_runtime(tmp_path / "stage")
    bare = tmp_path / "bare"
    bare.mkdir()
    result = subprocess.run([sys.executable, "-I", "-c", IMPORT_ALL, str(staged)], cwd=bare, capture_output=True,
                            text=True, timeout=300, check=True)
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer == {"outside": [], "zoo": [True]}  # nothing of the project; the library from the archive


def test_the_handler_imports_only_the_library():
    handler = HANDLER.read_text(encoding="utf-8")
    assert "from zoo.runtime import" in handler and "modelzoo" not in handler


@pytest.mark.integration
@pytest.mark.parametrize(("head", "labels", "inputs"), [
    ("classification", ["pos", "neg"], [{"text": "A gentle, funny film."}, {"text": "Dull.", "text_pair": "Very."}]),
    ("qa", [], [{"question": "When was the tower completed?", "context": PASSAGE}]),
])
def test_an_archived_model_predicts_and_explains_as_in_process_without_the_project(tmp_path, head, labels, inputs):
    artifact = tiny_artifact(tmp_path / "artifact", head, labels, seed=5)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(build_mar(artifact, f"probe-{head}", tmp_path / "mar")) as mar:
        mar.extractall(unpacked)
    bare = tmp_path / "bare"
    bare.mkdir()
    result = subprocess.run([sys.executable, "-I", "-c", PROBE, str(unpacked), json.dumps(inputs)], cwd=bare,
                            capture_output=True, text=True, timeout=120, check=True)
    remote = json.loads(result.stdout.splitlines()[-1])
    local = Predictor.load(artifact)
    assert remote["django"] == []
    assert remote["predictions"] == json.loads(json.dumps(local.predict(inputs)))
    assert remote["explanation"] == json.loads(json.dumps(local.explain(inputs[0])))


def test_the_training_dynamics_stay_out_of_the_serving_archive(tmp_path):
    """A member's data-map file is training data (about 100 bytes per training row): the archive carries the
    model's own files and not that one."""
    artifact = tiny_artifact(tmp_path / "artifact", "classification", ["negative", "positive"], seed=1)
    (artifact / DYNAMICS_FILE).write_text(json.dumps({"entries": [{"key": "a", "confidence": 0.9}]}))
    with zipfile.ZipFile(build_mar(artifact, "probe-dynamics", tmp_path / "mar")) as mar:
        names = {Path(n).name for n in mar.namelist()}
    assert "config.json" in names and "zoo.json" in names
    assert DYNAMICS_FILE not in names
