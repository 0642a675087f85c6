"""One TorchServe model per ensemble, registered eagerly and idempotently, never while scoring (real TorchServe)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.models import Example
from annotation.scoring import ScoringDeferred, score_example
from modelzoo.serving import get_backend, reset_backends
from modelzoo.signals import ensemble_deployed
from modelzoo.testing import tiny_artifact, tiny_model
from tests.factories import ExampleFactory, RoundFactory, TaskFactory
from zoo import explain as zoo_explain
from zoo.runtime import Predictor
from zoo.serving.base import ModelRef
from zoo.serving.inprocess import InProcessBackend
from zoo.serving.torchserve import TorchServeBackend, TorchServeError, ensemble_name

pytestmark = pytest.mark.integration
TEXTS = [{"text": "A gentle, funny film that never overstays its welcome."}, {"text": "Dull. Utterly, painfully dull!"},
         {"text": "It was fine, I suppose."}]


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    base = tmp_path_factory.mktemp("members")
    return [ModelRef(100 + s, f"member-{s}", f"ens-test-v{s}", "classification",
                     tiny_artifact(base / str(s), "classification", ["pos", "neg"], seed=s)) for s in range(3)]


@pytest.fixture
def ts_settings(settings, torchserve):
    """Django settings pointing at the session's TorchServe (archives built where it looks for them)."""
    settings.MODEL_STORE = torchserve.model_store.parent
    settings.TORCHSERVE_URL, settings.TORCHSERVE_MANAGEMENT_URL = torchserve.inference_url, torchserve.management_url
    settings.MODEL_BACKEND = "torchserve"
    reset_backends()
    yield settings
    reset_backends()


def close(a, b) -> bool:
    """Equal, floats to 1e-4, however nested."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, int | float):
        return abs(a - b) <= 1e-4
    return a == b


def backend_for(torchserve) -> TorchServeBackend:
    return TorchServeBackend(torchserve.client(), torchserve.model_store, batch_size=4, max_batch_delay_ms=5)


def test_one_worker_answers_every_member_of_an_ensemble_in_one_request(torchserve, members):
    backend = backend_for(torchserve)
    name = backend.register(members)
    client = torchserve.client()
    assert name == ensemble_name(members) == "ens-test-ens-100-101-102"
    assert len([w for d in client.describe(name) for w in d["workers"]]) == 1  # one process for three members

    reply = client.request("POST", f"{client.inference_url}/predictions/{name}", json={"inputs": TEXTS})
    assert reply["members"] == [100, 101, 102]
    local = InProcessBackend().predict(members, TEXTS)
    assert len(reply["predictions"]) == 3
    for remote_member, local_member in zip(reply["predictions"], local, strict=True):
        assert [p["label"] for p in remote_member] == [p["label"] for p in local_member]
        for r, loc in zip(remote_member, local_member, strict=True):
            assert r["probs"] == pytest.approx(loc["probs"], abs=1e-5)
    # The backend answers in the shape every backend has: [member][input]; a subset asks the same model.
    assert backend.predict(members, TEXTS) == reply["predictions"]
    assert backend.route(members[1:2]) == (name, [1])
    assert backend.predict(members[2:] + members[:1], TEXTS[:1]) == [reply["predictions"][2][:1], reply["predictions"][0][:1]]
    remote = backend.explain(members[1], TEXTS[1], "input_x_gradient", "neg")
    local = InProcessBackend().explain(members[1], TEXTS[1], "input_x_gradient", "neg")
    assert [w["word"] for w in remote["words"]] == [w["word"] for w in local["words"]]
    assert [w["score"] for w in remote["words"]] == pytest.approx([w["score"] for w in local["words"]], abs=1e-4)


def test_an_ensemble_explanation_is_one_request_to_the_ensemble_model(torchserve, members):
    backend = backend_for(torchserve)
    backend.register(members)
    explain_ensemble = getattr(zoo_explain, "explain_ensemble", None)
    if explain_ensemble is None:  # serving code without ensemble explanations: a clear, final refusal
        with pytest.raises(TorchServeError) as err:
            backend.explain_ensemble(members, TEXTS[1], "occlusion", "neg")
        assert err.value.status == 400 and not err.value.retryable
        assert "cannot explain an ensemble" in str(err.value)
    else:
        predictors = [Predictor.load(m.path) for m in members]
        local = explain_ensemble(predictors, TEXTS[1], "occlusion", "neg")
        remote = backend.explain_ensemble(members, TEXTS[1], "occlusion", "neg")
        assert close(remote, json.loads(json.dumps(local)))


def test_registration_is_idempotent_and_a_409_is_success(torchserve, members):
    backend, client = backend_for(torchserve), torchserve.client()
    first = backend.register(members[:2])
    again = backend_for(torchserve).register(members[:2])  # another process, same ensemble
    assert first == again
    # Two registrations racing after a restart: TorchServe answers the second 409, which counts as done.
    assert client.register(first, first) is False
    assert client.models().count(first) == 1
    assert backend.predict(members[:2], TEXTS[:1])[1][0]["label"] in ("pos", "neg")


@pytest.mark.django_db
def test_scoring_never_registers_a_missing_model_and_the_register_command_does(ts_settings, torchserve):
    round_ = RoundFactory(task=TaskFactory(slug="sentiment", kind="sentiment"), number=1)
    versions = [tiny_model(round_.task, seed) for seed in range(2)]
    from modelzoo import services

    services.deploy_ensemble(round_, versions)  # registered at once
    name = ensemble_name([ModelRef.of(v) for v in versions])
    assert name in torchserve.client().models()
    get_backend().unregister(name)  # as after a TorchServe restart (it forgets its models)

    example = ExampleFactory(round=round_, scoring_state=Example.Scoring.PENDING, fooled=None, ensemble_prediction=None)
    with pytest.raises(ScoringDeferred):
        score_example(example.pk)
    example.refresh_from_db()
    assert example.scoring_state == Example.Scoring.PENDING  # kept for a retry, not failed
    assert "torchserve_register" in example.scoring_error
    assert name not in torchserve.client().models()  # the scoring job registered nothing

    call_command("torchserve_register", wait=5)
    call_command("torchserve_register", wait=5)  # again: nothing to do, no error
    assert torchserve.client().models().count(name) == 1
    assert score_example(example.pk).value == "scored"
    example.refresh_from_db()
    assert example.scoring_state == Example.Scoring.SCORED and example.model_versions == [v.pk for v in versions]


@pytest.mark.django_db
def test_a_deployed_ensemble_is_registered_when_the_signal_says_so(ts_settings, torchserve):
    round_ = RoundFactory(task=TaskFactory(slug="nli", kind="nli"), number=1)
    versions = [tiny_model(round_.task, seed) for seed in (3, 4)]
    name = ensemble_name([ModelRef.of(v) for v in versions])
    assert name not in torchserve.client().models()
    ensemble_deployed.send(sender=None, round=round_, versions=versions)
    assert name in torchserve.client().models()
    workers = [w for d in torchserve.client().describe(name) for w in d["workers"]]
    assert [w["status"] for w in workers] == ["READY"]


def test_members_registered_apart_are_asked_apart_and_nothing_is_registered(torchserve, members):
    """The round pipeline evaluates its new members one by one (each registered alone) and seeds with them
    before their ensemble is deployed: predictions come from the models that hold each member."""
    backend, client = backend_for(torchserve), torchserve.client()
    apart = [ModelRef(200 + i, f"apart-{i}", f"apart-v{i}", m.head, m.path) for i, m in enumerate(members[:2])]
    for ref in apart:
        backend.prepare([ref])
    before = sorted(client.models())
    assert ensemble_name(apart) not in before
    remote = backend.predict(apart, TEXTS)
    local = InProcessBackend().predict(apart, TEXTS)
    assert [[p["label"] for p in m] for m in remote] == [[p["label"] for p in m] for m in local]
    assert sorted(client.models()) == before  # serving registered nothing


def test_members_that_share_a_frozen_trunk_answer_as_separate_forwards_would(torchserve, tmp_path_factory):
    """Three cached-top members (one trunk in the worker) and a fully fine-tuned one (its own forward)."""
    from tests.modelzoo.trunks import member_artifacts
    from zoo.runtime import ensemble

    paths = member_artifacts(tmp_path_factory.mktemp("trunk"), "classification", ["pos", "neg"], members=4, full=(3,))
    refs = [ModelRef(200 + i, f"trunk-{i}", f"trunk-test-v{i}", "classification", p) for i, p in enumerate(paths)]
    predictors = [Predictor.load(p) for p in paths]
    assert ensemble(predictors).describe() == [([0, 1, 2], 1), ([3], 0)]
    backend = backend_for(torchserve)
    name = backend.register(refs)
    try:
        remote = backend.predict(refs, TEXTS)
        for remote_member, predictor in zip(remote, predictors, strict=True):
            for r, loc in zip(remote_member, predictor.predict(TEXTS), strict=True):
                assert r["label"] == loc["label"] and r["probs"] == pytest.approx(loc["probs"], abs=1e-5)
        one = backend.predict(refs[2:0:-1], TEXTS[:1])  # a subset, one input (less padding: float noise)
        assert [m[0]["label"] for m in one] == [remote[2][0]["label"], remote[1][0]["label"]]
        assert one[0][0]["probs"] == pytest.approx(remote[2][0]["probs"], abs=1e-5)
        apart = zoo_explain.explain_ensemble(ensemble(predictors, share=False), TEXTS[0], "occlusion")
        together = backend.explain_ensemble(refs, TEXTS[0], "occlusion")
        assert [w["word"] for w in together["words"]] == [w["word"] for w in apart["words"]]
        assert [w["score"] for w in together["words"]] == pytest.approx([w["score"] for w in apart["words"]], abs=1e-5)
        assert together["probability"] == pytest.approx(apart["probability"], abs=1e-5)
        subset = backend.explain_ensemble(refs[:2], TEXTS[1], "occlusion", "neg")
        alone = zoo_explain.explain_ensemble(ensemble(predictors[:2], share=False), TEXTS[1], "occlusion", "neg")
        assert [w["score"] for w in subset["words"]] == pytest.approx([w["score"] for w in alone["words"]], abs=1e-5)
    finally:
        backend.unregister(name)
