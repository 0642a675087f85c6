"""Every encoder family the library runs is served and explained: models trained from tiny random checkpoints of
each family (made in code, no download) load in `zoo.runtime.Predictor`, predict (classification and QA), explain
with every explanation method crediting the text's own words (never a SentencePiece "▁" or byte-level "Ġ" piece),
run as ensembles, and answer through the TorchServe handler (in process, with a fake context) and, for two
non-BERT families, through a real TorchServe."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from zoo import encoders, training
from zoo.explain_methods import METHODS, OCCLUSION
from zoo.runtime import Predictor, ensemble, explain_ensemble

FAMILIES = encoders.FAMILIES
LABELS = ["negative", "positive"]
TEXT = "the food was terrible"
PAIR = {"text": "The chef cooked all night.", "text_pair": "the food was terrible"}
PASSAGE = "The book was written by Jane Austen in 1813."
QUESTION = {"question": "Who wrote it?", "context": PASSAGE}
ROOT = Path(__file__).resolve().parents[2]


def _train(family: str, head: str, out: Path) -> Path:
    if head == "qa":
        examples = [training.TrainExample(QUESTION, {"text": "Jane Austen", "start": PASSAGE.index("Jane")})] * 4
        spec = training.TrainSpec(head="qa", encoder=f"tiny-{family}", epochs=1, batch_size=4)
    else:
        rows = [(TEXT, "negative"), ("great place, lovely staff", "positive"), ("awful service", "negative"),
                ("I loved it", "positive")]
        examples = [training.TrainExample({"text": t}, label) for t, label in rows]
        spec = training.TrainSpec(head="classification", labels=LABELS, encoder=f"tiny-{family}", epochs=1, batch_size=4)
    training.train(examples, spec, out)
    return out


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """{family: {"classification": folder, "qa": folder}}, trained once for the module (~0.2 s each)."""
    base = tmp_path_factory.mktemp("families")
    return {f: {h: _train(f, h, base / f / h) for h in ("classification", "qa")} for f in FAMILIES}


@pytest.fixture(scope="module")
def loaded(artifacts):
    return {f: {h: Predictor.load(path) for h, path in heads.items()} for f, heads in artifacts.items()}


def words(result, key="words"):
    return [w["word"] for w in result[key]]


# -- prediction -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_loads_and_classifies_texts_and_pairs(loaded, family):
    predictor = loaded[family]["classification"]
    predictions = predictor.predict([{"text": TEXT}, PAIR])
    assert len(predictions) == 2
    for p in predictions:
        assert p["label"] in LABELS and set(p["probs"]) == set(LABELS)
        assert sum(p["probs"].values()) == pytest.approx(1.0, abs=1e-5)
        assert all(isinstance(v, float) for v in p["probs"].values())
    # a batch answers as one input at a time does (padding and pairs handled by the family's tokenizer)
    alone = predictor.predict([PAIR])[0]
    assert alone["probs"] == pytest.approx(predictions[1]["probs"], abs=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_answers_qa_with_a_span_of_the_passage_s_own_characters(loaded, family):
    [answer] = loaded[family]["qa"].predict([QUESTION])
    assert 0 <= answer["start"] < answer["end"] <= len(PASSAGE)
    assert answer["text"] == PASSAGE[answer["start"]:answer["end"]]
    assert answer["text"] == answer["text"].strip()  # no leading "▁"/"Ġ" space counted into the span
    for c in answer["candidates"]:
        assert c["text"] == PASSAGE[c["start"]:c["end"]] == c["text"].strip()
    assert all(isinstance(answer[k], int) for k in ("start", "end")) and isinstance(answer["score"], float)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_pair_never_gives_the_model_token_types_it_does_not_have(loaded, family):
    predictor = loaded[family]["classification"]
    args = predictor.model_args(predictor.encode([PAIR]))
    types = int(getattr(predictor.model.config, "type_vocab_size", 0) or 0)
    if "token_type_ids" in args:
        assert types > 1 and int(args["token_type_ids"].max()) < types
    if family in ("deberta-v2", "roberta", "xlm-roberta", "distilbert"):  # none, one type, or no such input
        assert "token_type_ids" not in args
    assert set(args) <= {"input_ids", "attention_mask", "token_type_ids"}
    assert predictor.predict([PAIR])[0]["label"] in LABELS


def test_the_bert_path_still_passes_token_types_for_pairs(loaded):
    predictor = loaded["bert"]["classification"]
    args = predictor.model_args(predictor.encode([PAIR]))
    assert int(args["token_type_ids"].max()) == 1


# -- explanations -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_credits_the_text_s_own_words_for_every_family(loaded, family, method):
    predictor = loaded[family]["classification"]
    result = predictor.explain({"text": TEXT}, method)
    assert words(result) == TEXT.split()  # words, never "▁"/"Ġ" pieces or a run-together sentence
    assert result["method"] == method and result["target"] in LABELS
    assert all(isinstance(w["score"], float) and -1.0 <= w["score"] <= 1.0 for w in result["words"])
    if method != OCCLUSION:
        assert any(w["score"] != 0.0 for w in result["words"])
    pair = predictor.explain(PAIR, method)
    assert words(pair) == PAIR["text"].split() + PAIR["text_pair"].split()
    assert [w["segment"] for w in pair["words"]] == [0] * 5 + [1] * 4


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_explains_a_qa_answer_over_the_question_and_passage_words(loaded, family, method):
    predictor = loaded[family]["qa"]
    result = predictor.explain(QUESTION, method)
    expected = QUESTION["question"].split() + PASSAGE.split()
    assert words(result) == expected
    if method != OCCLUSION:
        assert words(result, "end_words") == expected
    else:
        assert 0.0 <= result["probability"] <= 1.0


def test_integrated_gradients_start_from_the_family_s_own_pad_and_keep_its_boundary_tokens(loaded):
    from zoo.explain import _tokenizer_specials, baseline_ids

    predictor = loaded["deberta-v2"]["classification"]
    tokenizer = predictor.tokenizer
    ids = predictor.encode([{"text": TEXT}])["input_ids"]
    baseline = baseline_ids(predictor.model, ids, _tokenizer_specials(tokenizer))[0].tolist()
    assert baseline[0] == tokenizer.cls_token_id and baseline[-1] == tokenizer.sep_token_id
    assert set(baseline[1:-1]) == {tokenizer.pad_token_id}


# -- ensembles --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_an_ensemble_of_each_family_predicts_and_explains_with_sharing_off(artifacts, loaded, family, monkeypatch):
    monkeypatch.setenv("ZOO_SHARE_TRUNK", "off")
    first, second = loaded[family]["classification"], Predictor.load(artifacts[family]["classification"])
    members = ensemble([first, second])
    assert all(k == 0 for _, k in members.describe())
    per_member = members.predict([{"text": TEXT}, PAIR])
    alone = first.predict([{"text": TEXT}, PAIR])
    for m in per_member:
        for got, want in zip(m, alone, strict=True):
            assert got["probs"] == pytest.approx(want["probs"], abs=1e-5)
    for method in METHODS:
        result = explain_ensemble([first, second], {"text": TEXT}, method)
        assert words(result) == TEXT.split() and result["members"] == 2
    qa = explain_ensemble([loaded[family]["qa"], Predictor.load(artifacts[family]["qa"])], QUESTION)
    assert words(qa) == QUESTION["question"].split() + PASSAGE.split()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_shared_trunk_answers_as_separate_forwards_for_every_family(artifacts, loaded, family, monkeypatch):
    """Members with bit-identical weights share what their family allows (`zoo.trunk`); the answers are those
    of separate forwards (a family that cannot split runs its members alone)."""
    monkeypatch.setenv("ZOO_SHARE_TRUNK", "on")
    first, second = loaded[family]["classification"], Predictor.load(artifacts[family]["classification"])
    shared = ensemble([first, second], share=True)
    inputs = [{"text": TEXT}, PAIR]
    alone = first.predict(inputs)
    for m in shared.predict(inputs):
        for got, want in zip(m, alone, strict=True):
            assert got["probs"] == pytest.approx(want["probs"], abs=1e-4)
    result = explain_ensemble(shared, {"text": TEXT})
    assert words(result) == TEXT.split()


# -- the TorchServe handler, in process ----------------------------------------------------------------------------


def load_handler_class():
    spec = importlib.util.spec_from_file_location("zoo_ts_handler_under_test", ROOT / "torchserve" / "handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ZooHandler


class FakeContext:
    """What TorchServe hands a handler: system properties, request headers, a response status per request."""

    def __init__(self, model_dir: Path, gpu_id: int | None = None):
        self.system_properties = {"model_dir": str(model_dir), "gpu_id": gpu_id}
        self.statuses: dict[int, tuple[int, str]] = {}

    def get_request_header(self, index, name):
        return None

    def set_response_status(self, code=200, phrase="", idx=0):
        self.statuses[idx] = (code, phrase)


@pytest.fixture
def handler_class():
    before = list(sys.path)
    yield load_handler_class()
    sys.path[:] = before  # initialize puts the model folder first on sys.path


def ensemble_dir(tmp_path: Path, artifact: Path, members: int = 1) -> Path:
    """A TorchServe model folder as `zoo.archive.build_ensemble_archive` lays it out (without the archiver)."""
    folder = tmp_path / "model"
    listing = []
    for i in range(members):
        shutil.copytree(artifact, folder / "members" / str(i))
        listing.append({"id": 10 + i, "name": f"m{i}", "dir": f"members/{i}"})
    (folder / "ensemble.json").write_text(json.dumps({"format": 1, "name": "t", "members": listing}))
    return folder


def ask(handler, context, body):
    [reply] = handler.handle([{"body": json.dumps(body).encode()}], context)
    assert not context.statuses, context.statuses
    return reply


@pytest.mark.parametrize("family", FAMILIES)
def test_the_torchserve_handler_serves_and_explains_every_family(artifacts, loaded, family, handler_class, tmp_path):
    folder = ensemble_dir(tmp_path, artifacts[family]["classification"])
    handler, context = handler_class(), FakeContext(folder)
    handler.initialize(context)
    assert handler.device.type == "cpu"
    reply = ask(handler, context, {"inputs": [{"text": TEXT}, PAIR]})
    want = loaded[family]["classification"].predict([{"text": TEXT}, PAIR])
    assert reply["members"] == [10]
    for got, expected in zip(reply["predictions"][0], want, strict=True):
        assert got["probs"] == pytest.approx(expected["probs"], abs=1e-5)
    for method in METHODS:
        explanation = ask(handler, context, {"input": {"text": TEXT}, "method": method, "member": 0})
        assert words(explanation) == TEXT.split()
    together = ask(handler, context, {"input": {"text": TEXT}, "ensemble": True})
    assert words(together) == TEXT.split()


@pytest.mark.parametrize("family", ["roberta", "deberta-v2"])
def test_the_handler_answers_qa_and_a_two_member_ensemble_of_a_non_bert_family(artifacts, loaded, family,
                                                                                handler_class, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_SHARE_TRUNK", "off")
    qa = ensemble_dir(tmp_path / "qa", artifacts[family]["qa"], members=2)
    handler, context = handler_class(), FakeContext(qa)
    handler.initialize(context)
    assert len({id(p.tokenizer) for p in handler.predictors}) == 1  # same tokenizer files: one tokenizer
    reply = ask(handler, context, {"inputs": [QUESTION]})
    [want] = loaded[family]["qa"].predict([QUESTION])
    for [got] in reply["predictions"]:
        assert (got["start"], got["end"], got["text"]) == (want["start"], want["end"], want["text"])
    explanation = ask(handler, context, {"input": QUESTION, "method": "integrated_gradients", "ensemble": True})
    assert words(explanation) == words(explanation, "end_words") == QUESTION["question"].split() + PASSAGE.split()


def test_the_handler_computes_on_the_cpu_with_zoo_device_cpu_whatever_gpu_torchserve_names(artifacts, handler_class,
                                                                                           tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DEVICE", "cpu")
    handler, context = handler_class(), FakeContext(ensemble_dir(tmp_path, artifacts["roberta"]["classification"]), 0)
    handler.initialize(context)
    assert handler.device.type == "cpu"
    assert all(p.device.type == "cpu" for p in handler.predictors)


def test_the_archive_carries_what_the_runtime_imports(tmp_path):
    """The whole library is packed, so the encoder registry, the device policy, the tiny checkpoints, the
    offsets and the family table travel with every archive."""
    from zoo.archive import stage_runtime

    staged = stage_runtime(tmp_path / "stage") / "zoo"
    for name in ("runtime.py", "explain.py", "encoders.py", "device.py", "tiny.py", "offsets.py", "trunk.py",
                 "artifacts.py", "registry.py", "flags.py", "precision.py", "heads/qa.py"):
        assert (staged / name).is_file(), name
    if (ROOT / "zoo" / "families.py").is_file():
        assert (staged / "families.py").is_file()


# -- a real TorchServe ------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("family", ["roberta", "deberta-v2"])
def test_a_non_bert_family_is_served_by_a_real_torchserve_as_in_process(torchserve, artifacts, family):
    from zoo.serving.base import ModelRef
    from zoo.serving.inprocess import InProcessBackend
    from zoo.serving.torchserve import TorchServeBackend

    offset = {"roberta": 0, "deberta-v2": 10}[family]
    refs = {h: ModelRef(900 + offset + i, f"{family}-{h}", f"fam-{family}-{h}", h, artifacts[family][h])
            for i, h in enumerate(("classification", "qa"))}
    backend = TorchServeBackend(torchserve.client(), torchserve.model_store, batch_size=4, max_batch_delay_ms=5)
    local = InProcessBackend()
    for ref in refs.values():
        backend.prepare([ref])
    cls = refs["classification"]
    [remote], [here] = backend.predict([cls], [{"text": TEXT}, PAIR]), local.predict([cls], [{"text": TEXT}, PAIR])
    for r, h in zip(remote, here, strict=True):
        assert r["label"] == h["label"] and r["probs"] == pytest.approx(h["probs"], abs=1e-5)
    explained = backend.explain(cls, {"text": TEXT}, "integrated_gradients", "negative")
    assert words(explained) == TEXT.split()
    assert [w["score"] for w in explained["words"]] == pytest.approx(
        [w["score"] for w in local.explain(cls, {"text": TEXT}, "integrated_gradients", "negative")["words"]], abs=1e-4)
    [[span]], [[span_here]] = backend.predict([refs["qa"]], [QUESTION]), local.predict([refs["qa"]], [QUESTION])
    assert (span["start"], span["end"], span["text"]) == (span_here["start"], span_here["end"], span_here["text"])


# -- lower precision --------------------------------------------------------------------------------------------


def test_a_family_that_cannot_autocast_runs_in_float32_from_then_on(artifacts):
    """DeBERTa (v1) fails under autocast ("value cannot be converted to type BFloat16"): a GPU forward (here the
    CPU's bfloat16 autocast stands in for it) falls back to float32 once and remembers it."""
    import torch

    predictor = Predictor.load(artifacts["deberta"]["classification"])
    predictor.amp_dtype = torch.bfloat16
    args = predictor.model_args(predictor.encode([{"text": TEXT}]))
    output = predictor.forward_amp(args)
    assert predictor.autocast_ok is False and output.logits.dtype == torch.float32


def test_occlusion_in_bfloat16_falls_back_to_float32_for_a_family_that_cannot_autocast(artifacts, monkeypatch):
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "bf16")
    predictor = Predictor.load(artifacts["deberta"]["classification"])
    result = predictor.explain({"text": TEXT}, OCCLUSION)
    assert words(result) == TEXT.split() and predictor.autocast_ok is False
    monkeypatch.setenv("ZOO_OCCLUSION_PRECISION", "fp32")
    exact = Predictor.load(artifacts["deberta"]["classification"]).explain({"text": TEXT}, OCCLUSION)
    assert [w["score"] for w in result["words"]] == pytest.approx([w["score"] for w in exact["words"]], abs=1e-5)
