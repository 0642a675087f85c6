"""Robustness and fairness (issue 43, item 1; docs/evaluation/robustness.md): each perturbation family changes
what it should and nothing else, keeps labels and answer spans valid, gives the same copy every time; the measure
on a tiny model is the share of perturbed rows whose prediction did not change, stored with an interval, and the
perturbed copy is made once per test set and kept."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from modelzoo.models import EnsembleScore, Evaluation
from modelzoo.services import predict_with
from modelzoo.testing import deploy_tiny_ensemble
from rounds import datasets, perturbations, robustness
from rounds.evaluation import evaluate_everything
from rounds.perturbations import FAIRNESS, NOISE, Fields, perturb_row, same_prediction
from tests.factories import LabeledItemFactory, RoundFactory, TaskFactory

NLI = Fields(noise=("text_pair",), swaps=("text", "text_pair"))
QA = Fields(noise=("question",), swaps=("question", "context"), span_key="context")
PREMISE = "John handed his sister a parcel at the station while Mary waited outside."
HYPOTHESIS = "A man gave her a parcel because he was kind."
PASSAGE = "Mary met her brother in Paris. She told John that the king had arrived in the city by train."
QUESTION = "Whom did Mary tell that the king had arrived?"


def answer(text: str) -> dict:
    return {"text": text, "start": PASSAGE.index(text)}


@pytest.mark.parametrize("family", NOISE)
def test_noise_changes_only_the_writers_text_and_is_the_same_every_time(family):
    row = {"text": PREMISE, "text_pair": HYPOTHESIS}
    changed = [perturb_row(family, NLI, row, "entailment", f"row-{n}") for n in range(8)]
    assert any(c is not None for c in changed), f"{family} changed none of 8 rows"
    for n, out in enumerate(changed):
        if out is None:
            continue
        assert out.input["text"] == PREMISE  # the premise is context: noise leaves it alone
        assert out.input["text_pair"] != HYPOTHESIS and out.target == "entailment" and out.table == {}
        again = perturb_row(family, NLI, row, "entailment", f"row-{n}")
        assert again is not None and again.input == out.input  # seeded per row: a reproducible copy
    assert len({c.input["text_pair"] for c in changed if c}) > 1  # ... and the seed differs between rows


def test_each_noise_family_makes_its_own_kind_of_change():
    text = "The service was excellent and the staff were friendly and helpful"
    outs = {f: perturbations.noise(f, text, seed) for f in NOISE for seed in [7]}
    assert outs["case"].lower() == text.lower() and outs["case"] != text  # only the case changed
    for family in ("typos", "keyboard", "ocr"):
        assert outs[family] != text and outs[family].lower() != text.lower()
        assert len(outs[family].split()) == len(text.split())  # a few letters of a word, not new words
    assert sum(a != b for a, b in zip(outs["ocr"].split(), text.split(), strict=True)) >= 1
    assert perturbations.noise("typos", "   ", 7) == "   "


def test_names_are_swapped_within_their_group_and_alike_in_premise_and_hypothesis():
    row = {"text": PREMISE, "text_pair": "Mary waited while John handed over a parcel."}
    out = perturb_row("names", NLI, row, "entailment", "k")
    assert out is not None and set(out.table) == {"john", "mary"}
    groups = {n.lower(): g for g, listed in perturbations.names().items() for n in listed}
    assert groups[out.table["john"]] == "male" and groups[out.table["mary"]] == "female"
    new_john, new_mary = out.table["john"].title(), out.table["mary"].title()
    for text in out.input.values():  # the same swap in both fields: the relation still holds
        assert "John" not in text and "Mary" not in text and new_john in text and new_mary in text
    assert out.input["text_pair"] == f"{new_mary} waited while {new_john} handed over a parcel."
    assert perturb_row("names", NLI, {"text": "A dog ran.", "text_pair": "An animal ran."}, "entailment", "k") is None
    lower = {"text": "The bill of Rights", "text_pair": "So mary had a lamb"}  # only capitalised names are names
    assert perturb_row("names", NLI, lower, "neutral", "k") is None
    cased = perturb_row("names", NLI, {"text": "john liked it", "text_pair": "So mary had a lamb"}, "neutral", "k")
    assert cased is not None and set(cased.table) == {"john"}  # ... except in a text with no capital (SST-2)
    assert cased.input["text"] == f"{cased.table['john']} liked it"


def test_gender_terms_are_swapped_in_both_fields_with_her_read_from_what_follows():
    out = perturb_row("gender", NLI, {"text": PREMISE, "text_pair": HYPOTHESIS}, "neutral", "k")
    assert out is not None and out.target == "neutral"
    assert out.input["text"] == "John handed her brother a parcel at the station while Mary waited outside."
    assert out.input["text_pair"] == "A woman gave him a parcel because she was kind."
    assert perturbations.swap_words("I met her mother. I saw her.", perturbations.gender_table())[0] == (
        "I met his father. I saw him.")
    assert perturb_row("gender", NLI, {"text": "It rained.", "text_pair": "It was wet."}, "entailment", "k") is None


@pytest.mark.parametrize("family", NOISE)
def test_qa_noise_touches_the_question_only_and_the_answer_span_stays(family):
    outs = [perturb_row(family, QA, {"question": QUESTION, "context": PASSAGE}, answer("John"), f"q{n}")
            for n in range(6)]
    assert any(outs)
    for out in filter(None, outs):
        assert out.input["context"] == PASSAGE and out.target == answer("John") and out.input["question"] != QUESTION


@pytest.mark.parametrize(("family", "gold", "expected"), [("names", "John", None), ("gender", "the king", "the queen"),
                                                          ("gender", "Paris", "Paris")])
def test_qa_swaps_move_the_answer_span_with_the_passage(family, gold, expected):
    target = {**answer(gold), "alternatives": [gold]}
    out = perturb_row(family, QA, {"question": QUESTION, "context": PASSAGE}, target, "q")
    assert out is not None
    passage, new = out.input["context"], out.target
    assert passage[new["start"]:new["start"] + len(new["text"])] == new["text"]  # a valid span of the new passage
    assert new["text"] == (expected or out.table["john"].title()) and new["alternatives"] == [new["text"]]
    assert out.input["question"] != QUESTION  # Mary or the king: the question is swapped alike
    if family == "gender":  # "her brother" -> "his sister" and "She" -> "He" moved every later offset
        assert "his sister" in passage and new["start"] == PASSAGE.index(gold) + {"the king": -2, "Paris": -1}[gold]
    # A model that answers the same person after the swap has not changed its answer.
    assert same_prediction("qa", {"text": gold}, {"text": new["text"]}, out.table)
    assert not same_prediction("qa", {"text": gold}, {"text": "Mary"}, out.table)


def test_each_kind_perturbs_the_fields_the_docs_say():
    def fields(kind: str) -> Fields | None:
        task = TaskFactory.build(slug=f"f-{kind}", kind=kind)
        return perturbations.fields_for(task.kind_impl, task.typed_config)

    assert fields("sentiment") == Fields(noise=("text",), swaps=("text",))  # the prompt is not fed to the model
    assert fields("hate_speech") == Fields(noise=("text",), swaps=("text",))
    assert fields("nli") == NLI
    assert fields("qa") == QA
    assert fields("chat") is None


WORDS = {"positive": "great", "negative": "awful"}


@pytest.fixture
def measured_task(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    task = TaskFactory(slug="robust", kind="sentiment")
    people = ["Mary", "John", "Aisha", "Carlos"]
    for n in range(24):
        label = "positive" if n % 2 else "negative"
        who = people[n % 4] if n % 3 else ("he" if n % 2 else "she")
        LabeledItemFactory(task=task, split="test", collection="demo", target=label,
                           input={"text": f"{who} said the film number {n} was {WORDS[label]} and well made"})
    round_ = RoundFactory(task=task, number=1)
    deploy_tiny_ensemble(round_, members=2)
    return task


@pytest.mark.django_db
def test_the_measure_is_the_share_of_predictions_a_perturbation_left_alone(measured_task, settings):
    counts = evaluate_everything(measured_task, log=lambda _m: None)
    assert counts["robustness"] == 3  # two tiny models and the round's ensemble
    copies = list((settings.VAR_DIR / "perturbed" / "robust").glob("*.json"))
    assert len(copies) == 1
    kept = json.loads(copies[0].read_text())
    assert kept["sampled"] == 24 and {f: len(kept["families"][f]) > 0 for f in NOISE + FAIRNESS} == dict.fromkeys(
        NOISE + FAIRNESS, True)
    assert len(kept["families"]["gender"]) == 8 and len(kept["families"]["names"]) == 16

    labelled = datasets.load(measured_task, datasets.BASE_TEST)
    for evaluation in Evaluation.objects.filter(model_version__task=measured_task, dataset=datasets.BASE_TEST):
        metrics = evaluation.metrics
        # Recomputed here from the kept copy: the same model predicting each changed row and its original.
        original = predict_with([evaluation.model_version], labelled.inputs)
        same = {m: [0, 0] for m in ("robustness", "fairness")}
        for family, rows in kept["families"].items():
            perturbed = predict_with([evaluation.model_version], [r["input"] for r in rows])
            agree = [original[r["i"]]["label"] == p["label"] for r, p in zip(rows, perturbed, strict=True)]
            detail = metrics["perturbations"]["families"][family]
            assert (detail["changed"], detail["unchanged"]) == (len(rows), sum(agree))
            same[perturbations.MEASURE[family]][0] += sum(agree)
            same[perturbations.MEASURE[family]][1] += len(rows)
        for measure, (kept_rows, n) in same.items():
            assert metrics[measure] == round(kept_rows / n, 4)
            low, high = metrics["intervals"][measure]
            assert low <= metrics[measure] <= high and high - low > 0
            assert metrics["perturbations"][f"{measure}_rows"] == n
        assert "accuracy" in metrics and "accuracy" in metrics["intervals"]  # the scoring's figures are kept
    ensemble = EnsembleScore.objects.get(task=measured_task, round_number=1, dataset=datasets.BASE_TEST)
    assert 0 <= ensemble.metrics["robustness"] <= 1 and len(ensemble.metrics["intervals"]["fairness"]) == 2

    # Measured once: a second evaluation reads the kept copy and measures nothing again.
    stamp = copies[0].stat().st_mtime_ns
    assert evaluate_everything(measured_task, log=lambda _m: None)["robustness"] == 0
    assert copies[0].stat().st_mtime_ns == stamp
    assert evaluate_everything(measured_task, log=lambda _m: None, remeasure=True)["robustness"] == 3


@pytest.mark.django_db
def test_a_changed_test_set_gets_a_new_copy_and_the_command_prints_the_table(measured_task, settings, capsys):
    call_command("measure_robustness", "robust", "--quiet", "--markdown")
    first = capsys.readouterr().out
    assert "| robust | */test | round 1 ensemble |" in first and "robustness % [95 %]" in first
    LabeledItemFactory(task=measured_task, split="test", collection="demo", target="positive",
                       input={"text": "Olivia thought it was great"})
    call_command("measure_robustness", "robust", "--quiet")
    assert len(list((settings.VAR_DIR / "perturbed" / "robust").glob("*.json"))) == 2
    assert all(e.metrics["perturbations"]["size"] == 25
               for e in Evaluation.objects.filter(model_version__task=measured_task, dataset=datasets.BASE_TEST))
    assert robustness.table(measured_task)[0]["sampled"] == 25
