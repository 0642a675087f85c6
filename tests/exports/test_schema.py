"""One export schema (issue 39, item 9): JSONL and Parquet hold the same nested types (objects / Arrow structs and
lists), `datasets` loads every format of a bundle with the features the card declares, and CSV's flat columns hold
the JSON text of those values."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pytest

from annotation.models import Example
from annotation.scoring import score_example
from exports import splits
from exports.bundle import write_bundle
from exports.schema import export_schema
from tests.exports.conftest import make_example, vote
from tests.factories import ContextFactory, ExampleFactory, RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

NESTED = ["context", "input", "ensemble_prediction", "model_predictions", "model_versions"]
FORMATS = ["jsonl", "csv", "parquet"]


@pytest.fixture
def hf_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return str(tmp_path / "hf-cache")


def unzipped_bundle(round_, tmp_path: Path) -> Path:
    path = tmp_path / "bundle.zip"
    with path.open("wb") as sink:
        write_bundle(round_, sink, FORMATS, version="v1")
    folder = tmp_path / "bundle"
    zipfile.ZipFile(path).extractall(folder)
    return folder


def qa_round():
    """A QA round: span targets, and member predictions with candidates (as the QA head returns them)."""
    task = TaskFactory(slug="qa-schema", kind="qa", config={})
    round_ = RoundFactory(task=task, number=1)
    passage = "The Eiffel Tower was completed in 1889 and stands on the Champ de Mars in Paris."
    context = ContextFactory(task=task, round=round_, payload={"passage": passage})
    span = {"text": "Paris", "start": 75, "end": 80, "score": 0.61}
    for n in range(4):
        ExampleFactory(
            round=round_, context=context, author=UserFactory(), input={"question": f"Where is it, version {n}?"},
            target={"text": "1889", "start": 34, **({"alternatives": ["in 1889"]} if n == 0 else {})},
            fooled=n % 2 == 0, consensus="verified" if n < 2 else "unvalidated",
            validated_label={"text": "1889", "start": 34} if n < 2 else None,
            ensemble_prediction=span, model_versions=[7, 8],
            model_predictions=[{"model_version": 7, "name": "qa-a", "prediction": {**span, "candidates": [span]}},
                               {"model_version": 8, "name": "qa-b", "prediction": {**span, "candidates": []}}])
    return round_


@pytest.fixture(params=["sentiment", "qa"])
def a_round(request):
    if request.param == "sentiment":
        mixed_round, open_round = request.getfixturevalue("mixed_round"), request.getfixturevalue("open_round")
        example = mixed_round["verified"][0]
        example.context.hardness_score = 0.5
        example.context.save()
        # PostgreSQL's jsonb reorders keys and a stored row may lack some: the files must not care.
        Example.objects.filter(pk=mixed_round["verified"][1].pk).update(
            ensemble_prediction={"probs": {"negative": 0.9, "positive": 0.1}, "label": "negative"},
            model_predictions=[{"prediction": {"label": "negative", "probs": {"negative": 1}}, "name": "r1-a",
                                "model_version": 1}])
        return open_round
    return qa_round()


def loaded(folder: Path, fmt: str, cache: str, **kwargs):
    from datasets import load_dataset

    loader = {"jsonl": "json", "csv": "csv", "parquet": "parquet"}[fmt]
    files = {part: str(folder / "data" / f"{part}.{fmt}") for part in ("train", "dev", "test")
             if (folder / "data" / f"{part}.jsonl").read_text().strip()}  # the splits that hold rows
    return load_dataset(loader, data_files=files, cache_dir=cache, **kwargs)


def test_every_format_loads_with_the_same_types(a_round, tmp_path, hf_offline):
    """The unzipped bundle (its card), its Parquet files alone and its JSONL files with the card's features load with
    identical features (nested fields as structs and lists, never JSON strings) and identical rows; CSV loads with
    the same columns, its nested ones as text (pandas' large strings) holding the JSON of the same values."""
    from datasets import Features, Value, load_dataset

    folder = unzipped_bundle(a_round, tmp_path)
    schema = export_schema(a_round.task)
    expected = Features.from_arrow_schema(schema.arrow())
    by_card = load_dataset(str(folder), cache_dir=hf_offline)
    features = by_card["train"].features
    parquet = loaded(folder, "parquet", hf_offline)
    jsonl = loaded(folder, "jsonl", hf_offline, features=features)
    flat = loaded(folder, "csv", hf_offline)
    assert list(by_card) == list(parquet) == list(jsonl) == list(flat) and "train" in by_card
    for split in by_card:
        assert by_card[split].features == parquet[split].features == jsonl[split].features == expected
        assert list(parquet[split].features) == schema.names  # the same column order too
        for name in NESTED:
            assert not isinstance(parquet[split].features[name], Value), name  # a struct or a list, not a string
        assert by_card[split].to_list() == parquet[split].to_list() == jsonl[split].to_list()
        for flat_row, row in zip(flat[split].to_list(), jsonl[split].to_list(), strict=True):
            for name in NESTED:
                assert flat[split].features[name].dtype in ("string", "large_string"), name  # text
                assert json.loads(flat_row[name]) == row[name], name
            assert flat_row["example_id"] == row["example_id"] and flat_row["fooled"] == row["fooled"]


def inferred_as(inferred, expected) -> bool:
    """`inferred` is `expected`, except where every row was empty (`datasets` then infers null)."""
    from datasets import List, Value

    if inferred == Value("null"):
        return True
    if isinstance(expected, dict):
        return isinstance(inferred, dict) and list(inferred) == list(expected) and all(
            inferred_as(inferred[name], expected[name]) for name in expected)
    if isinstance(expected, List):
        return isinstance(inferred, List) and inferred_as(inferred.feature, expected.feature)
    return inferred == expected


def test_jsonl_alone_infers_the_same_nested_types(a_round, tmp_path, hf_offline):
    """Without the card, `datasets` infers a JSONL file's types from its values: every nested field is the same
    struct or list as in Parquet, with its fields in the same order (every row has every field, so nothing becomes a
    `Json` column); only a field that is empty in every row of the file reads as null, as the card says. (So two
    split files read together without the card's features may disagree — a list empty in every train row, filled
    in test — which is why the card's JSONL call passes the features: `test_every_format_loads_with_the_same_types`.)
    Each file is read alone here, so the check does not depend on which split an example's id lands in."""
    from datasets import Features, Value, load_dataset

    folder = unzipped_bundle(a_round, tmp_path)
    expected = Features.from_arrow_schema(export_schema(a_round.task).arrow())
    parts = [part for part in ("train", "dev", "test") if (folder / "data" / f"{part}.jsonl").read_text().strip()]
    assert "train" in parts
    for part in parts:
        read = load_dataset("json", data_files={part: str(folder / "data" / f"{part}.jsonl")},
                            cache_dir=hf_offline)[part]
        assert list(read.features) == list(expected), part
        for name in expected:
            assert inferred_as(read.features[name], expected[name]), (part, name)
        for name in NESTED:
            assert not isinstance(read.features[name], Value), (part, name)  # a struct or a list, never a string


def test_csv_writes_nested_values_as_the_json_of_the_jsonl_values(mixed_round, open_round, tmp_path):
    folder = unzipped_bundle(open_round, tmp_path)
    with (folder / "data/train.csv").open(newline="") as handle:
        flat = list(csv.DictReader(handle))
    rows = [json.loads(line) for line in (folder / "data/train.jsonl").read_text().splitlines()]
    assert len(flat) == len(rows) > 0
    for cell, row in zip(flat, rows, strict=True):
        assert cell["target"] == row["target"] == "positive"  # a plain label stays itself
        for name in NESTED:
            assert json.loads(cell[name]) == row[name]
        assert set(row["context"]) == {"prompt"} and set(row["ensemble_prediction"]) == {"label", "probs"}
        assert set(row["ensemble_prediction"]["probs"]) == {"positive", "negative", "neutral"}


def test_the_card_states_the_schema(mixed_round, open_round, tmp_path):
    import yaml
    from datasets import Features

    card = (unzipped_bundle(open_round, tmp_path) / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    schema = export_schema(open_round.task)
    assert Features._from_yaml_list(header["dataset_info"]["features"]) == Features.from_arrow_schema(schema.arrow())
    assert [f["path"] for f in header["configs"][0]["data_files"]] == [
        f"data/{part}.parquet" for part in ("train", "dev", "test") if splits.in_split(open_round, part).exists()]
    assert "## Schema" in card and "| `model_predictions` | `list<struct<model_version: int64" in card
    assert "| `context` | `struct<prompt: string>` |" in card
    assert "**CSV is flat**" in card


def test_a_real_verdict_fits_the_schema_without_losing_a_field(open_round, tmp_path, settings):
    """A verdict stored by the real scoring path (a deployed tiny ensemble) has no field the schema leaves out."""
    from exports.records import RecordBuilder, record_batches
    from modelzoo.serving import reset_backends
    from modelzoo.testing import deploy_tiny_ensemble

    settings.MODEL_STORE = tmp_path / "models"
    settings.MODEL_BACKEND = "inprocess"
    reset_backends()
    deploy_tiny_ensemble(open_round, members=2)
    example = ExampleFactory(round=open_round, scoring_state="pending", fooled=None, ensemble_prediction=None,
                             input={"text": "A fine, slow evening."})
    score_example(example.pk)
    example.refresh_from_db()
    assert example.scoring_state == "scored" and len(example.model_predictions) == 2
    builder = RecordBuilder(open_round.task)
    [record] = [r for batch in record_batches(open_round.task, Example.objects.filter(pk=example.pk), builder=builder)
                for r in batch]
    reset_backends()
    assert builder.schema.dropped.keys == {}
    assert record["ensemble_prediction"]["label"] == example.ensemble_prediction["label"]
    assert [p["name"] for p in record["model_predictions"]] == [p["name"] for p in example.model_predictions]


def test_a_stored_field_outside_the_schema_is_named_on_the_card(mixed_round, open_round, tmp_path):
    """Nothing is dropped silently: a key the schema does not know is counted and the card says so."""
    Example.objects.filter(pk=mixed_round["verified"][0].pk).update(
        model_predictions=[{**mixed_round["verified"][0].model_predictions[0], "novel": 1}])
    card = (unzipped_bundle(open_round, tmp_path) / "README.md").read_text()
    assert "`model_predictions[].novel` (1 row(s))" in card


def test_scalar_columns_keep_their_types_in_parquet(mixed_round, open_round, tmp_path):
    """Vote counts and booleans keep their types in Parquet (int64, bool), as before."""
    import pyarrow.parquet as pq

    vote(make_example(open_round, consensus="verified", validated_label="positive"), "correct")
    splits.assign_splits(open_round)
    table = pq.read_table(unzipped_bundle(open_round, tmp_path) / "data/train.parquet")
    assert str(table.schema.field("votes_correct").type) == "int64"
    assert str(table.schema.field("fooled").type) == "bool"
    assert str(table.schema.field("model_versions").type) == "list<element: int64>"


def test_a_projection_fills_orders_coerces_and_counts_what_it_leaves_out():
    """The projector of a shape (compiled from the schema): every field present in the schema's order, an int where
    a float belongs as a float, a number where text belongs as its JSON text, a wrong type as null, unknown keys
    left out and counted by path."""
    from exports.schema import Dropped, kind_shapes, projector
    from tasks.models import Task

    shapes = kind_shapes(Task(slug="x", kind="sentiment", config={}))
    dropped = Dropped()
    rows = projector(shapes["model_predictions"], "model_predictions", dropped)
    stored = [{"prediction": {"probs": {"negative": 1, "positive": True, "odd": 0.5}, "label": "negative"},
               "name": 7, "model_version": 2.0, "extra": "x", "opponent": "yes"}, "junk", None]
    assert rows(stored) == [
        {"model_version": 2, "name": "7", "prediction": {"label": "negative",
                                                         "probs": {"positive": None, "negative": 1.0, "neutral": None}},
         "opponent": None, "fooled": None, "seconds": None, "left_out": None},
        None, None]
    assert list(rows(stored)[0]) == ["model_version", "name", "prediction", "opponent", "fooled", "seconds", "left_out"]
    assert dropped.keys == {"model_predictions[].extra": 2, "model_predictions[].prediction.probs.odd": 2}
    assert rows(None) is None and rows({"not": "a list"}) is None
    text = projector(shapes["target"], "target", dropped)
    assert text("positive") == "positive" and text(None) is None and text({"a": 1}) == '{"a": 1}'
