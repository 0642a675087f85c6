"""The TorchServe archive is self-contained: its serving code runs without this project and without Django."""

import json
import subprocess
import sys
import zipfile

import pytest

from modelzoo.archive import build_mar
from modelzoo.runtime import Predictor
from modelzoo.testing import tiny_artifact

pytestmark = pytest.mark.integration
PASSAGE = "The Eiffel Tower was completed in 1889 and it stands in Paris, France."

# Run in a bare folder (-I: no project, no PYTHONPATH on sys.path), as the handler does: the model folder first.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from modelzoo.runtime import Predictor
predictor = Predictor.load(sys.argv[1])
inputs = json.loads(sys.argv[2])
print(json.dumps({"predictions": predictor.predict(inputs), "explanation": predictor.explain(inputs[0]),
                  "django": sorted(m for m in sys.modules if m.split(".")[0] == "django")}))
"""


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
