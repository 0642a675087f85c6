from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from exports import splits
from exports.formats import FORMATS, UnknownFormat, get_format
from exports.records import column_names
from exports.streaming import stream_records

pytestmark = pytest.mark.django_db


def write(round, split: str, fmt_name: str, folder: Path) -> Path:
    fmt = get_format(fmt_name)
    path = folder / f"{split}.{fmt.extension}"
    path.write_bytes(b"".join(stream_records(round.task, splits.in_split(round, split), fmt)))
    return path


@pytest.fixture
def hf_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return tmp_path / "hf-cache"


@pytest.mark.parametrize("fmt_name, loader", [("jsonl", "json"), ("csv", "csv"), ("parquet", "parquet")])
def test_each_format_loads_with_hugging_face_datasets(mixed_round, open_round, tmp_path, hf_offline, fmt_name, loader):
    from datasets import load_dataset

    splits.assign_splits(open_round)
    files = {name: str(write(open_round, name, fmt_name, tmp_path)) for name in ("train", "dev", "test")}
    files = {name: path for name, path in files.items() if splits.in_split(open_round, name).exists()}
    dataset = load_dataset(loader, data_files=files, cache_dir=str(hf_offline))
    for name, part in dataset.items():
        assert part.num_rows == splits.in_split(open_round, name).count()
        assert set(column_names()) <= set(part.column_names)
    row = dataset["train"][0]
    assert row["task"] == "sentiment" and row["round"] == 1 and row["split"] == "train"
    assert row["annotator_id"].startswith("a_")


def test_a_record_carries_context_input_labels_votes_verdict_and_predictions(mixed_round, open_round):
    example = mixed_round["verified"][0]
    example.context.hardness_score = 0.75
    example.context.save()
    splits.assign_splits(open_round)
    text = b"".join(stream_records(open_round.task, splits.usable(open_round).filter(pk=example.pk), FORMATS["jsonl"]))
    record = json.loads(text)
    assert record["context"] == example.context.payload and record["input"] == example.input
    assert (record["target"], record["validated_label"], record["label"]) == ("positive", "positive", "positive")
    assert (record["votes_correct"], record["votes_incorrect"], record["votes_flagged"]) == (2, 1, 0)
    assert record["consensus"] == "verified" and record["fooled"] is True
    assert [p["name"] for p in record["model_predictions"]] == ["r1-a", "r1-b"]
    assert record["hardness_score"] == 0.75 and record["model_versions"] == [1]
    assert record["split"] in splits.SPLITS and record["exclusion"] is None


def test_csv_keeps_labels_plain_and_objects_as_json_and_parquet_nests_them(mixed_round, open_round, tmp_path):
    import csv

    import pyarrow.parquet as pq

    splits.assign_splits(open_round)
    with write(open_round, "train", "csv", tmp_path).open() as handle:
        row = next(csv.DictReader(handle))
    assert row["target"] == "positive" and json.loads(row["input"])["text"]
    table = pq.read_table(write(open_round, "train", "parquet", tmp_path))
    assert table.column("target")[0].as_py() == "positive"
    assert table.column("model_predictions")[0].as_py()[0]["model_version"] == 1  # a list of structs (issue 39)


def test_an_unknown_format_names_the_choices():
    with pytest.raises(UnknownFormat, match="jsonl, csv, parquet"):
        get_format("xlsx")


def test_export_round_command_writes_one_file_per_split(mixed_round, open_round, tmp_path):
    call_command("export_round", "sentiment", "1", "--format", "csv", "--out", str(tmp_path / "out"))
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["sentiment-round1-dev.csv", "sentiment-round1-test.csv", "sentiment-round1-train.csv"]
    call_command("export_round", "sentiment", "1", "--format", "bundle", "--out", str(tmp_path / "b.zip"))
    assert (tmp_path / "b.zip").stat().st_size > 0


def test_an_unzipped_bundle_loads_by_its_card(mixed_round, open_round, tmp_path, hf_offline):
    import zipfile

    from datasets import load_dataset

    from exports.bundle import write_bundle

    path = tmp_path / "bundle.zip"
    with path.open("wb") as sink:
        result = write_bundle(open_round, sink, ["jsonl", "parquet"], version="v1")
    zipfile.ZipFile(path).extractall(tmp_path / "bundle")
    dataset = load_dataset(str(tmp_path / "bundle"), cache_dir=str(hf_offline))
    assert {name: part.num_rows for name, part in dataset.items()} == {k: v for k, v in result.counts.items() if v}


def test_output_does_not_depend_on_chunk_or_row_group_size(mixed_round, open_round, tmp_path):
    import pyarrow.parquet as pq

    from exports.formats.parquet import ParquetWriter
    from exports.records import record_batches
    from exports.schema import export_schema

    splits.assign_splits(open_round)
    queryset = splits.usable(open_round)
    small = [r for batch in record_batches(open_round.task, queryset, chunk_size=3) for r in batch]
    large = [r for batch in record_batches(open_round.task, queryset, chunk_size=2000) for r in batch]
    assert small == large and len(small) == queryset.count()
    path = tmp_path / "small-groups.parquet"
    with path.open("wb") as sink:
        writer = ParquetWriter(sink, export_schema(open_round.task), row_group_size=4)
        for batch in record_batches(open_round.task, queryset, chunk_size=3):
            writer.write(batch)
        writer.close()
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_rows == len(small) and parquet.metadata.num_row_groups > 1
