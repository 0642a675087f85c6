"""A real TorchServe: register small models, predict and explain over HTTP, compare with the in-process backend."""

from pathlib import Path

import pytest

from modelzoo import services
from modelzoo.serving import reset_backends
from modelzoo.signals import ensemble_deployed
from modelzoo.testing import deploy_tiny_ensemble, tiny_artifact
from zoo.serving.base import ModelRef
from zoo.serving.inprocess import InProcessBackend
from zoo.serving.torchserve import TorchServeBackend, ensemble_ids, ensemble_name

pytestmark = pytest.mark.integration
PASSAGE = "The Eiffel Tower was completed in 1889 and it stands in Paris, France."
TEXTS = [{"text": "A gentle, funny film that never overstays its welcome."}, {"text": "Dull. Utterly, painfully dull!"}]


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory):
    base = tmp_path_factory.mktemp("artifacts")
    return {
        "cls": ModelRef(1, "cls", "live-cls", "classification", tiny_artifact(base / "cls", "classification", ["pos", "neg"], 3)),
        "qa": ModelRef(2, "qa", "live-qa", "qa", tiny_artifact(base / "qa", "qa", seed=4)),
    }


@pytest.fixture(scope="session")
def ts_backend(torchserve, artifacts):
    backend = TorchServeBackend(torchserve.client(), torchserve.model_store, batch_size=4, max_batch_delay_ms=5)
    for ref in artifacts.values():  # each its own (one-member) TorchServe model
        backend.prepare([ref])
    return backend


def test_torchserve_and_in_process_give_the_same_class_probabilities(ts_backend, artifacts):
    ref = artifacts["cls"]
    [remote], [local] = ts_backend.predict([ref], TEXTS), InProcessBackend().predict([ref], TEXTS)
    for r, loc in zip(remote, local, strict=True):
        assert r["label"] == loc["label"]
        assert r["probs"] == pytest.approx(loc["probs"], abs=1e-5)


@pytest.mark.parametrize("method", ["input_x_gradient", "integrated_gradients"])
def test_torchserve_and_in_process_give_the_same_explanation(ts_backend, artifacts, method):
    ref = artifacts["cls"]
    remote = ts_backend.explain(ref, TEXTS[1], method, "neg")
    local = InProcessBackend().explain(ref, TEXTS[1], method, "neg")
    assert remote["method"] == method and remote["target"] == "neg"
    assert [w["word"] for w in remote["words"]] == [w["word"] for w in local["words"]] == ["Dull.", "Utterly,", "painfully", "dull!"]
    assert [w["score"] for w in remote["words"]] == pytest.approx([w["score"] for w in local["words"]], abs=1e-4)


def test_torchserve_and_in_process_give_the_same_qa_span(ts_backend, artifacts):
    ref, inputs = artifacts["qa"], [{"question": "When was the tower completed?", "context": PASSAGE}]
    [[remote]], [[local]] = ts_backend.predict([ref], inputs), InProcessBackend().predict([ref], inputs)
    assert (remote["start"], remote["end"], remote["text"]) == (local["start"], local["end"], local["text"])
    assert remote["score"] == pytest.approx(local["score"], rel=1e-4)
    explanation = ts_backend.explain(ref, inputs[0], "input_x_gradient", {"start": remote["start"], "end": remote["end"]})
    assert len(explanation["words"]) == len(explanation["end_words"]) > 10


def test_models_can_be_scaled_and_unregistered_through_the_management_api(ts_backend, torchserve, artifacts):
    client, name = torchserve.client(), ensemble_name([artifacts["cls"]])
    client.scale(name, 2)
    assert len(client.describe(name)[0]["workers"]) == 2
    client.scale(name, 1)
    assert client.describe(name)[0]["batchSize"] == 4


def test_round_verdicts_through_torchserve_match_in_process(db, settings, torchserve, open_round):
    settings.MODEL_STORE = torchserve.model_store.parent  # archives are built where TorchServe looks for them
    settings.TORCHSERVE_URL, settings.TORCHSERVE_MANAGEMENT_URL = torchserve.inference_url, torchserve.management_url
    settings.MODEL_BACKEND = "torchserve"
    reset_backends()
    ensemble = deploy_tiny_ensemble(open_round, members=2)
    remote = services.predict_for_round(open_round, TEXTS)
    settings.MODEL_BACKEND = "inprocess"
    local = services.predict_for_round(open_round, TEXTS)
    for r, loc in zip(remote, local, strict=True):
        assert r["ensemble"]["label"] == loc["ensemble"]["label"]
        assert r["ensemble"]["probs"] == pytest.approx(loc["ensemble"]["probs"], abs=1e-5)
        # occlusion maps of untrained tiny models are probability drops of ~1e-6: compare the drops themselves
        # (score x peak), which normalising would blow up to float noise
        remote_drops = [w["score"] * r["explanation"]["peak"] for w in r["explanation"]["words"]]
        local_drops = [w["score"] * loc["explanation"]["peak"] for w in loc["explanation"]["words"]]
        assert remote_drops == pytest.approx(local_drops, abs=1e-6)
        assert r["explanation"]["members"] == loc["explanation"]["members"] == 2
    settings.MODEL_BACKEND = "torchserve"
    reset_backends()
    first, second = ensemble.ordered_members()
    services.deploy_ensemble(open_round, [first])
    ensemble_deployed.send(sender=None, round=open_round, versions=[first])  # as `train_model --deploy` does
    second.refresh_from_db()
    services.retire(second)  # unregisters every TorchServe model that holds it
    held = [ensemble_ids(name) or [] for name in torchserve.client().models()]
    assert not any(second.pk in ids for ids in held)
    assert [first.pk] in held
    assert Path(torchserve.model_store, ensemble_name([ModelRef.of(first)]), "ensemble.json").is_file()
