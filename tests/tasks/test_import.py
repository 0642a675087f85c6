import json

import pytest
from django.core.management import CommandError, call_command

from tasks import importing
from tasks.importing import ImportFailed, ImportSpec, import_jsonl, import_lines
from tasks.models import Context, LabeledItem
from tests.factories import TaskFactory


def write_jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def nli(db):
    return TaskFactory(slug="nli", kind="nli")


def test_good_file_imports_labelled_pool(nli, tmp_path):
    path = write_jsonl(tmp_path / "pool.jsonl", [
        {"premise": "A cat sleeps.", "hypothesis": "An animal rests.", "label": "entailment", "uid": "a"},
        {"premise": "A cat sleeps.", "hypothesis": "The cat runs.", "label": "contradiction", "uid": "b"},
    ])
    report = import_jsonl(nli, path, ImportSpec.from_preset("anli", target="pool", collection="mine"))
    assert (report.rows, report.created) == (2, 2)
    items = LabeledItem.objects.filter(task=nli, collection="mine").order_by("external_id")
    assert [i.target for i in items] == ["entailment", "contradiction"]
    assert items[0].context == {"premise": "A cat sleeps."}
    assert items[0].input == {"hypothesis": "An animal rests."}


def test_bad_rows_are_reported_by_line_and_nothing_is_imported(nli, tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [
        {"premise": "P1.", "hypothesis": "H1.", "label": "entailment"},
        '{"premise": "broken json"',
        {"premise": "P3.", "hypothesis": "H3.", "label": "maybe"},
        {"premise": "P4.", "label": "neutral"},
        {"premise": "P5.", "hypothesis": "H5.", "label": None},
    ])
    with pytest.raises(ImportFailed) as err:
        import_jsonl(nli, path, ImportSpec(target="pool"))
    lines = {e.line: e.message for e in err.value.report.errors}
    assert set(lines) == {2, 3, 4, 5}
    assert "not valid JSON" in lines[2]
    assert "unknown label 'maybe'" in lines[3]
    assert "hypothesis" in lines[4] and "missing" in lines[4]
    assert "null" in lines[5]
    assert LabeledItem.objects.count() == 0


def test_skip_errors_imports_the_good_rows(nli, tmp_path):
    path = write_jsonl(tmp_path / "mixed.jsonl", [
        {"premise": "P1.", "hypothesis": "H1.", "label": "entailment"},
        {"premise": "P2.", "hypothesis": "", "label": "neutral"},
    ])
    report = import_jsonl(nli, path, ImportSpec(target="pool", skip_errors=True))
    assert (report.created, report.skipped) == (1, 1)
    assert str(report.errors[0]) == "line 2: input.hypothesis: must not be empty"


def test_reimport_never_duplicates(nli, tmp_path):
    path = write_jsonl(tmp_path / "ctx.jsonl", [{"premise": "One."}, {"premise": "Two."}, {"premise": "One."}])
    first = import_jsonl(nli, path, ImportSpec(target="contexts"))
    second = import_jsonl(nli, path, ImportSpec(target="contexts"))
    assert (first.created, first.duplicates) == (2, 1)
    assert (second.created, second.existing) == (0, 2)
    assert Context.objects.filter(task=nli).count() == 2


def test_command_reports_line_numbers_and_imports_nothing(nli, tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"premise": "P.", "hypothesis": "H.", "label": "entailment"}, {"premise": 3}])
    with pytest.raises(CommandError, match=r"line 2: premise: must be a non-empty string"):
        call_command("import_data", "nli", str(path), "--as", "pool")
    assert LabeledItem.objects.count() == 0


def test_command_refuses_unknown_task_and_missing_file(nli, tmp_path):
    with pytest.raises(CommandError, match="no task with slug 'nope'"):
        call_command("import_data", "nope", "x.jsonl", "--as", "pool")
    with pytest.raises(CommandError, match="file not found"):
        call_command("import_data", "nli", str(tmp_path / "missing.jsonl"), "--as", "pool")


# The shared real datasets load with their presets.


def test_sst2_loads_into_a_sentiment_task(data_dir, db):
    task = TaskFactory(slug="sst", kind="sentiment")
    call_command("import_data", "sst", str(data_dir / "sst2/dev.jsonl"), "--as", "eval", "--preset", "sst2")
    items = LabeledItem.objects.filter(task=task, split="test")
    assert items.count() == 872
    assert set(items.values_list("target", flat=True)) == {"positive", "negative"}


def test_sst2_train_slice_loads_as_seed_pool(data_dir, db):
    task = TaskFactory(slug="sst", kind="sentiment")
    call_command("import_data", "sst", str(data_dir / "sst2/train.jsonl"), "--as", "pool", "--preset", "sst2", "--limit", "2000")
    items = LabeledItem.objects.filter(task=task)
    assert items.filter(split__in=["train", "heldout"]).count() > 1900  # a few duplicate phrases collapse
    assert 50 < items.filter(split="heldout").count() < 150  # about 5 % held out from training


def test_anli_and_snli_load_into_an_nli_task(data_dir, nli):
    call_command("import_data", "nli", str(data_dir / "anli/r1_dev.jsonl"), "--as", "eval", "--preset", "anli", "--split", "dev")
    call_command("import_data", "nli", str(data_dir / "anli/r1_dev.jsonl"), "--as", "contexts", "--preset", "anli")
    call_command("import_data", "nli", str(data_dir / "snli/dev.jsonl"), "--as", "pool", "--preset", "snli", "--limit", "500")
    assert LabeledItem.objects.filter(task=nli, collection="r1_dev").count() == 1000
    assert Context.objects.filter(task=nli).count() > 100
    assert LabeledItem.objects.filter(task=nli, collection="dev").count() == 500


def test_dynasent_rows_without_gold_label_are_reported(data_dir, db):
    TaskFactory(slug="dyna", kind="sentiment")
    with pytest.raises(CommandError, match="label: is null"):
        call_command("import_data", "dyna", str(data_dir / "dynasent/sst_dev_validated.jsonl"), "--as", "eval", "--preset", "dynasent")
    call_command("import_data", "dyna", str(data_dir / "dynasent/r2_dev.jsonl"), "--as", "eval", "--preset", "dynasent")
    assert LabeledItem.objects.filter(collection="r2_dev").count() == 720


def test_davidson_loads_into_hate_speech(data_dir, db):
    task = TaskFactory(slug="hate", kind="hate_speech", config={"max_input_chars": 1000})
    call_command("import_data", "hate", str(data_dir / "davidson_hate/labeled_data.jsonl"), "--as", "pool", "--preset", "davidson", "--limit", "1000")
    targets = set(LabeledItem.objects.filter(task=task).values_list("target", flat=True))
    assert targets == {"hateful", "not hateful"}


def test_squad_loads_into_qa_with_checked_spans(data_dir, db):
    task = TaskFactory(slug="squad", kind="qa", config={"max_answer_chars": 400})
    call_command("import_data", "squad", str(data_dir / "squad_subset/squad_subset.jsonl"), "--as", "eval", "--preset", "squad")
    call_command("import_data", "squad", str(data_dir / "squad_subset/squad_subset.jsonl"), "--as", "contexts", "--preset", "squad")
    item = LabeledItem.objects.filter(task=task).first()
    passage = item.context["passage"]
    assert passage[item.target["start"]:].startswith(item.target["text"])
    assert 4620 < LabeledItem.objects.filter(task=task).count() <= 4639  # identical questions collapse
    assert Context.objects.filter(task=task).count() == 920


# Imported train rows lose a stable held-out slice (never trained on; the retraining gate's base held-out set).


def sentiment_lines(n: int, start: int = 0):
    return [(i + 1, json.dumps({"text": f"review number {start + i} was {'fine' if i % 2 else 'poor'}",
                                "label": "positive" if i % 2 else "negative"})) for i in range(n)]


def held_keys(task) -> set[str]:
    return set(LabeledItem.objects.filter(task=task, split="heldout").values_list("key", flat=True))


def test_a_train_import_holds_out_a_stable_slice(db):
    first, second = TaskFactory(slug="one", kind="sentiment"), TaskFactory(slug="two", kind="sentiment")
    report = import_lines(first, sentiment_lines(400), ImportSpec(target="pool", collection="base"))
    held = held_keys(first)
    assert report.created == 400 and report.held_out == len(held)
    assert 5 <= len(held) <= 40  # about 5 % of 400
    assert all(importing.hold_out_fraction(k) < importing.HOLD_OUT_FRACTION for k in held)
    assert LabeledItem.objects.filter(task=first, split="train").count() == 400 - len(held)
    assert f"{len(held)} of the imported rows held out from training" in report.summary()
    # The slice follows from the rows' content: the same file gives the same slice in another task (or database).
    import_lines(second, sentiment_lines(400), ImportSpec(target="pool", collection="base"))
    assert held_keys(second) == held
    # Importing the file again changes nothing.
    again = import_lines(first, sentiment_lines(400), ImportSpec(target="pool", collection="base"))
    assert (again.created, again.held_out, held_keys(first)) == (0, 0, held)


def test_a_small_import_and_evaluation_data_keep_every_row(db):
    task = TaskFactory(slug="small-import", kind="sentiment")
    report = import_lines(task, sentiment_lines(importing.HOLD_OUT_MIN_ROWS - 1), ImportSpec(target="pool"))
    assert report.held_out == 0 and "held out" not in report.summary()
    assert not held_keys(task)
    report = import_lines(task, sentiment_lines(400, start=1000),
                          ImportSpec(target="eval", collection="eval", split="test"))
    assert report.held_out == 0 and LabeledItem.objects.filter(task=task, collection="eval", split="test").count() == 400
    report = import_lines(task, sentiment_lines(400, start=2000),
                          ImportSpec(target="pool", collection="all", hold_out=False))
    assert report.held_out == 0 and not held_keys(task)


def test_the_held_out_slice_is_capped_per_collection(db, monkeypatch):
    monkeypatch.setattr(importing, "HOLD_OUT_MAX", 6)
    task = TaskFactory(slug="capped", kind="sentiment")
    first = import_lines(task, sentiment_lines(400), ImportSpec(target="pool", collection="big"))
    assert first.held_out == 6
    # The lowest hashes are held out, so the choice is stable under the cap too.
    ranked = sorted(LabeledItem.objects.filter(task=task).values_list("key", flat=True), key=importing.hold_out_fraction)
    assert held_keys(task) == set(ranked[:6])
    more = import_lines(task, sentiment_lines(400, start=5000), ImportSpec(target="pool", collection="big"))
    assert more.held_out == 0 and len(held_keys(task)) == 6  # the collection is full
    other = import_lines(task, sentiment_lines(400, start=9000), ImportSpec(target="pool", collection="other"))
    assert other.held_out == 6  # the cap is per collection


def test_held_out_rows_are_never_trained_on_nor_seeds(db):
    from hardness.services import item_pool
    from modelzoo import data

    task = TaskFactory(slug="never", kind="sentiment")
    import_lines(task, sentiment_lines(400), ImportSpec(target="pool", collection="base"))
    held = held_keys(task)
    assert held
    assert not held & set(data.training_set(task).keys)
    assert not held & set(item_pool(task, None).values_list("key", flat=True))
    assert set(data.load(task, "*/heldout").keys) == held
