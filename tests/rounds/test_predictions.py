"""Prediction-file uploads (issue 43, item 2): the test rows a researcher predicts (ids, no labels), each line
checked against the task's output with a line-level report, the lines that pass scored like a model's with a status
per test set, and the file ranked on the leaderboard marked "predictions only"."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from rounds import predictions
from rounds.models import PredictionScore, PredictionUpload
from tasks import roles
from tests.factories import LabeledItemFactory, TaskFactory, UserFactory
from tests.rounds.conftest import fill_task


@pytest.fixture
def task(db):
    task = TaskFactory(slug="small", kind="sentiment")
    fill_task(task, pool=4, test=8, examples=6)  # base test: 8 items; round 1 test: examples 1, 2, 4, 5
    return task


@pytest.fixture
def researcher(db):
    user = UserFactory(username="scientist")
    roles.grant(user, roles.RESEARCHER)
    return user


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def jsonl(*rows) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def upload(client: Client, content: bytes, name: str = "my predictions", slug: str = "small"):
    return client.post(f"/api/tasks/{slug}/predictions/",
                       {"name": name, "file": SimpleUploadedFile("preds.jsonl", content)})


def listed_sets(client: Client, slug: str = "small") -> list[dict]:
    answer = client.get(f"/api/tasks/{slug}/predictions/test-sets/")
    assert answer.status_code == 200
    return answer.json()["sets"]


def gold(task) -> dict[str, object]:
    return {row.id: row.target for rows in predictions.test_rows(task).values() for row in rows}


def test_the_test_rows_are_listed_with_their_ids_and_inputs_but_never_their_labels(task, researcher):
    sets = listed_sets(client_for(researcher))
    assert [(s["name"], s["size"], len(s["rows"])) for s in sets] == [("round-1/test", 4, 4), ("*/test", 8, 8)]
    first = sets[1]["rows"][0]
    assert set(first) == {"id", "context", "input"} and first["id"].startswith("item-")
    assert first["input"]["text"].startswith("the film number 100")
    assert all(r["id"].startswith("example-") for r in sets[0]["rows"])
    body = json.dumps([s["rows"] for s in sets])
    assert "target" not in body and "positive" not in body and "negative" not in body
    download = client_for(researcher).get("/tasks/small/predictions/inputs/")
    lines = [json.loads(line) for line in download.content.decode().splitlines()]
    assert download["Content-Disposition"].endswith('small-test-inputs.jsonl"') and len(lines) == 12
    assert {tuple(sorted(line)) for line in lines} == {("context", "dataset", "id", "input")}


def test_a_full_file_is_scored_on_every_set_and_ranked_predictions_only(task, researcher):
    labels = gold(task)
    wrong = sorted(i for i in labels if i.startswith("item-"))[0]
    rows = [{"id": i, "label": (("negative" if t == "positive" else "positive") if i == wrong else t)}
            for i, t in labels.items()]
    answer = upload(client_for(researcher), jsonl(*rows))
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["status"], body["rows"], body["accepted"], body["error_count"]) == ("scored", 12, 12, 0)
    by_set = {s["dataset"]: s for s in body["test_sets"]}
    assert by_set["round-1/test"]["status"] == "scored" and by_set["round-1/test"]["missing"] == 0
    accuracy = {f["metric"]: f for f in by_set["*/test"]["figures"]}["accuracy"]
    assert accuracy["value"] == pytest.approx(7 / 8) and accuracy["low"] < 7 / 8 < accuracy["high"]
    assert {f["metric"] for f in by_set["*/test"]["figures"]} == {"accuracy", "macro_f1"}
    columns = predictions.public_sets(task)
    [row] = predictions.leaderboard_rows(task, columns, [c["name"] for c in columns], "accuracy")
    assert row["predictions_only"] and row["throughput"] is None and row["memory_mb"] is None
    assert row["scores"] == {"round-1/test": 1.0, "*/test": pytest.approx(0.875)}
    assert row["performance"] == pytest.approx(0.9375)


def test_each_bad_line_is_reported_and_the_good_ones_are_scored(task, researcher):
    labels = gold(task)
    items = sorted(i for i in labels if i.startswith("item-"))
    answer = upload(client_for(researcher), jsonl(
        *[{"id": i, "label": labels[i]} for i in items[:6]],      # lines 1-6: fine
        '{"id": "item-1", "label": ',                             # 7: not JSON
        {"id": "item-999999", "label": "positive"},               # 8: no such row
        {"id": items[0], "label": "negative"},                    # 9: a second prediction for line 1's row
        {"id": items[6], "label": "meh"},                         # 10: not a label
        {"id": items[7], "label": "positive", "prob": 0.9},       # 11: unknown field
        {"label": "positive"},                                    # 12: no id
        ["not", "an", "object"],                                  # 13
        "",                                                       # blank: skipped
        {"id": 5, "label": "positive"},                           # 15: an id must be text
    ))
    assert answer.status_code == 201
    body = answer.json()
    assert (body["rows"], body["accepted"], body["error_count"]) == (14, 6, 8)
    got = [(e["line"], e["code"]) for e in body["errors"]]
    assert got == [(7, "bad_json"), (8, "unknown_id"), (9, "duplicate_id"), (10, "bad_label"), (11, "unknown_field"),
                   (12, "missing_id"), (13, "not_object"), (15, "missing_id")]
    messages = {e["code"]: e["message"] for e in body["errors"]}
    assert "line 1 already predicts" in messages["duplicate_id"]
    assert "not one of the task's labels: positive, negative" in messages["bad_label"]
    assert "ids are text" in [e for e in body["errors"] if e["line"] == 15][0]["message"]
    by_set = {s["dataset"]: s for s in body["test_sets"]}
    assert (by_set["*/test"]["status"], by_set["*/test"]["covered"], by_set["*/test"]["missing"]) == ("incomplete", 6, 2)
    assert by_set["*/test"]["figures"][0]["value"] == 1.0 and not by_set["*/test"]["ranked"]  # shown, never ranked
    assert by_set["round-1/test"]["status"] == "missing" and by_set["round-1/test"]["missing"] == 4
    columns = predictions.public_sets(task)
    # no set covered fully: not on the leaderboard (no row of "not evaluated" files)
    assert predictions.leaderboard_rows(task, columns, [c["name"] for c in columns], "accuracy") == []


def test_an_incomplete_sets_figures_are_withheld_when_the_file_covers_under_half_of_it(task, researcher):
    item = sorted(i for i in gold(task) if i.startswith("item-"))[0]
    body = upload(client_for(researcher), jsonl({"id": item, "label": "negative"})).json()
    base = {s["dataset"]: s for s in body["test_sets"]}["*/test"]
    assert (base["status"], base["covered"], base["figures"], base["withheld"]) == ("incomplete", 1, [], True)
    assert PredictionScore.objects.get(upload_id=body["id"], dataset="*/test").metrics == {}


def test_a_file_without_one_usable_line_is_kept_as_rejected_with_its_report(task, researcher):
    answer = upload(client_for(researcher), jsonl({"id": "item-0", "label": "positive"}, "nope"))
    assert answer.status_code == 400
    body = answer.json()
    assert body["status"] == "rejected" and body["error_count"] == 2 and "the report is kept at" in body["detail"]
    kept = client_for(researcher).get(body["url"])
    assert kept.status_code == 200 and [e["code"] for e in kept.json()["errors"]] == ["unknown_id", "bad_json"]
    columns = predictions.public_sets(task)
    assert predictions.leaderboard_rows(task, columns, [], "accuracy") == []


@pytest.mark.parametrize(("content", "message"), [
    (None, "choose a prediction file"),
    (b"", "the file is empty"),
    (b"   \n\n", "the file is empty"),
    (b"\xff\xfe{}", "not UTF-8 text"),
])
def test_a_file_that_cannot_be_read_is_refused_and_nothing_is_stored(task, researcher, content, message):
    data = {"name": "x"} if content is None else {"name": "x", "file": SimpleUploadedFile("p.jsonl", content)}
    answer = client_for(researcher).post("/api/tasks/small/predictions/", data)
    assert answer.status_code == 400 and message in json.dumps(answer.json())
    assert not PredictionUpload.objects.exists()


def test_a_file_over_the_cap_and_a_missing_name_are_refused(task, researcher, monkeypatch):
    monkeypatch.setattr(predictions, "MAX_BYTES", 100)
    answer = upload(client_for(researcher), b'{"id": "item-1", "label": "positive"}\n' * 5)
    assert answer.status_code == 400
    assert answer.json()["errors"]["file"] == ["the file is 190 bytes; the limit is 100 bytes"]
    answer = upload(client_for(researcher), b'{"id": "item-1", "label": "positive"}', name=" ")
    assert answer.status_code == 400 and "give the predictions a name" in answer.json()["errors"]["name"][0]
    assert not PredictionUpload.objects.exists()


def test_only_the_people_who_may_upload_a_model_may_upload_predictions(task, researcher):
    writer = UserFactory(username="writer-2")
    roles.grant(writer, roles.ANNOTATOR)
    assert upload(client_for(writer), jsonl({"id": "item-1", "label": "positive"})).status_code == 403
    assert client_for(writer).get("/api/tasks/small/predictions/test-sets/").status_code == 403
    assert client_for(writer).get("/tasks/small/predictions/inputs/").status_code == 403
    assert not PredictionUpload.objects.exists()


def test_the_report_is_the_uploaders_and_the_owners(task, researcher):
    item = sorted(i for i in gold(task) if i.startswith("item-"))[0]
    pk = upload(client_for(researcher), jsonl({"id": item, "label": "positive"})).json()["id"]
    other = UserFactory(username="other-researcher")
    roles.grant(other, roles.RESEARCHER)
    owner = UserFactory(username="task-owner")
    task.owners.add(owner)
    assert client_for(other).get(f"/api/predictions/{pk}/").status_code == 404
    assert client_for(other).get(f"/predictions/{pk}/").status_code == 404
    assert client_for(owner).get(f"/api/predictions/{pk}/").status_code == 200
    assert client_for(other).get("/api/tasks/small/predictions/").json()["uploads"] == []
    assert [u["id"] for u in client_for(owner).get("/api/tasks/small/predictions/").json()["uploads"]] == [pk]


def test_a_researcher_may_upload_a_limited_number_of_files_a_day(task, researcher, monkeypatch):
    monkeypatch.setattr(predictions, "DAILY_LIMIT", 2)
    line = jsonl({"id": "item-0", "label": "positive"})  # no such row: rejected
    client = client_for(researcher)
    assert [upload(client, line).status_code for _ in range(2)] == [400, 400]  # rejected files count too
    answer = upload(client, line)
    assert answer.status_code == 429 and "2 prediction files" in answer.json()["detail"]
    assert int(answer["Retry-After"]) > 80000
    assert PredictionUpload.objects.count() == 2
    owner = UserFactory(username="task-owner")
    task.owners.add(owner)
    assert upload(client_for(owner), line).status_code == 400  # owners know the labels: no limit


def test_a_chat_task_takes_no_prediction_file(db):
    task = TaskFactory(slug="chat", kind="chat")
    owner = UserFactory(username="chat-owner")
    task.owners.add(owner)
    answer = upload(client_for(owner), jsonl({"id": "x", "label": "y"}), slug="chat")
    assert answer.status_code == 400 and "nothing to predict" in json.dumps(answer.json())
    assert not PredictionUpload.objects.exists()


# --- extractive QA: the answer is a span of the passage ----------------------------------------------------

PASSAGE = "The capital of Australia is Canberra, not Sydney."


@pytest.fixture
def qa_task(db):
    task = TaskFactory(slug="qa", kind="qa")
    for question, text in [("What is the capital?", "Canberra"), ("Which city is not the capital?", "Sydney")]:
        LabeledItemFactory(task=task, split="test", context={"passage": PASSAGE}, input={"question": question},
                           target={"text": text, "start": PASSAGE.index(text)})
    return task


def test_qa_answers_are_spans_checked_against_the_passage(qa_task, researcher):
    sets = listed_sets(client_for(researcher), "qa")
    rows = sets[0]["rows"]
    assert rows[0]["context"] == {"passage": PASSAGE} and rows[0]["input"] == {"question": "What is the capital?"}
    first, second = rows[0]["id"], rows[1]["id"]
    answer = upload(client_for(researcher), jsonl(
        {"id": first, "answer": {"text": "Canberra", "start": PASSAGE.index("Canberra")}},
        {"id": second, "answer": {"text": "Sydney", "start": 40}},            # the passage has "t Sydn" there
        {"id": second, "answer": {"text": "Sydney.", "start": 44}},           # runs past the passage's end
        {"id": second, "answer": "Sydney"},                                   # not a span object
        {"id": second, "label": "Sydney"},                                    # a label: not this kind's output
    ), slug="qa")
    body = answer.json()
    assert [(e["line"], e["code"]) for e in body["errors"]] == [
        (2, "span_mismatch"), (3, "span_outside"), (4, "bad_span"), (5, "unknown_field")]
    assert "the passage has 't Sydn' at character 40, not 'Sydney'" in body["errors"][0]["message"]
    assert "outside the passage (49 characters)" in body["errors"][1]["message"]
    base = body["test_sets"][0]
    assert (base["status"], base["covered"], base["missing"]) == ("incomplete", 1, 1)
    full = upload(client_for(researcher), jsonl(
        {"id": first, "answer": {"text": "Canberra", "start": PASSAGE.index("Canberra")}},
        {"id": second, "answer": {"text": "not Sydney", "start": PASSAGE.index("not Sydney")}}), slug="qa").json()
    figures = {f["metric"]: f["value"] for f in full["test_sets"][0]["figures"]}
    assert full["test_sets"][0]["status"] == "scored"
    assert figures["exact_match"] == 0.5 and figures["f1"] == pytest.approx((1 + 2 / 3) / 2)


# --- the pages -------------------------------------------------------------------------------------------


def test_the_upload_page_shows_the_format_and_takes_a_file_to_its_report(task, researcher, monkeypatch):
    monkeypatch.setattr("rounds.prediction_views.ERRORS_PER_PAGE", 2)
    client = client_for(researcher)
    page = client.get("/tasks/small/predictions/upload/").content.decode()
    assert '{&quot;id&quot;: &quot;item-12&quot;, &quot;label&quot;: &quot;positive&quot;}' in page
    assert "/tasks/small/predictions/inputs/" in page and 'data-dataset="round-1/test"' in page
    labels = gold(task)
    lines = [{"id": i, "label": t} for i, t in labels.items() if i.startswith("example-")]
    lines += [{"id": "item-0", "label": "positive"}, "{", {"label": "positive"}]
    answer = client.post("/tasks/small/predictions/upload/",
                         {"name": "by hand", "file": SimpleUploadedFile("mine.jsonl", jsonl(*lines))})
    done = PredictionUpload.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/predictions/{done.pk}/"
    detail = client.get(answer["Location"]).content.decode()
    assert "4 of 7 lines accepted" in detail and "3 refused" in detail
    assert 'data-dataset="round-1/test" data-status="scored"' in detail and "ranked" in detail
    assert 'data-dataset="*/test" data-status="missing"' in detail
    assert "unknown id 1" in detail and "not JSON 1" in detail and "Page 1 of 2" in detail
    assert 'data-code="missing_id"' not in detail  # the third error is on the second page
    second = client.get(f"/predictions/{done.pk}/?page=2").content.decode()
    assert 'data-code="missing_id"' in second and "Page 2 of 2" in second


def test_the_upload_page_says_what_was_wrong_with_a_refused_file(task, researcher):
    answer = client_for(researcher).post("/tasks/small/predictions/upload/",
                                         {"name": "x", "file": SimpleUploadedFile("p.jsonl", b"\xff\xfe")})
    assert answer.status_code == 400 and "not UTF-8 text" in answer.content.decode()
    assert not PredictionUpload.objects.exists()


def test_a_large_file_is_checked_and_scored_inline_within_seconds(db, researcher, capsys):
    """Scoring runs inside the request (no job): 3,000 test rows and their predictions, checked and scored with the
    kind's metrics and intervals (macro-F1's by bootstrap), well within a request's time. The docs quote the time."""
    import time

    from tasks.models import LabeledItem, payload_hash

    task = TaskFactory(slug="large", kind="sentiment")
    labels = ["positive", "negative", "neutral"]
    LabeledItem.objects.bulk_create([
        LabeledItem(task=task, collection="big", split="test", input={"text": f"sentence {n}"},
                    target=labels[n % 3], key=payload_hash("big", n)) for n in range(3000)])
    rows = predictions.test_rows(task)["*/test"]
    lines = [{"id": r.id, "label": r.target if n % 4 else labels[(n + 1) % 3]} for n, r in enumerate(rows)]
    started = time.perf_counter()
    answer = upload(client_for(researcher), jsonl(*lines), slug="large")
    seconds = time.perf_counter() - started
    assert answer.status_code == 201
    figures = {f["metric"]: f["value"] for f in answer.json()["test_sets"][0]["figures"]}
    assert figures["accuracy"] == pytest.approx(0.75)
    with capsys.disabled():
        print(f"\n3000-row prediction file checked, scored and stored in {seconds:.2f} s")
    assert seconds < 20
