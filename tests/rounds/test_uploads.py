"""Researchers' uploads: weights only, evaluated on every test set, listed; pickles, code and big files refused."""

from __future__ import annotations

import json
import pickle
import struct

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from modelzoo.models import Evaluation
from rounds.models import ResearcherModel
from tests.rounds.conftest import fill_task

ALLOWED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


@pytest.fixture
def task(db):
    from tests.factories import TaskFactory

    task = TaskFactory(slug="small", kind="sentiment")
    round_ = fill_task(task, pool=6, test=6, examples=12)
    ids = list(round_.examples.values_list("id", flat=True)[:4])
    round_.examples.filter(id__in=ids).update(split="test")  # as the pipeline's split step would
    return task


@pytest.fixture
def artifact(task, tmp_path_factory):
    from modelzoo.testing import build_tiny_artifact

    return build_tiny_artifact(task, tmp_path_factory.mktemp("upload") / "model")


def files_of(folder, names=ALLOWED, **replace: bytes) -> list[SimpleUploadedFile]:
    out = [SimpleUploadedFile(n, replace.pop(n, None) or (folder / n).read_bytes()) for n in names]
    return out + [SimpleUploadedFile(n, content) for n, content in replace.items()]


def post(client, files, name="my model"):
    return client.post("/api/tasks/small/models/", {"name": name, "files": files}, format="multipart")


def test_researcher_upload_is_evaluated_and_listed_on_the_leaderboard(client_for, task, artifact):
    response = post(client_for("researcher"), files_of(artifact))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "evaluated" and body["architecture"] == "BertForSequenceClassification"
    upload = ResearcherModel.objects.get(pk=body["id"])
    datasets = set(Evaluation.objects.filter(model_version=upload.model_version).values_list("dataset", flat=True))
    assert "*/test" in datasets and "round-1/test" in datasets
    board = client_for("anonymous").get("/api/tasks/small/leaderboard/").json()
    row = next(r for r in board["rows"] if r["upload_id"] == upload.pk)
    assert row["source"] == "upload by researcher" and row["scores"]["*/test"] is not None
    assert row["throughput"] > 0 and row["memory_mb"] > 0 and row["dynascore"] is not None


def test_an_upload_whose_evaluation_cannot_be_queued_says_so(client_for, task, artifact, broker_down,
                                                             django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client_for("researcher"), files_of(artifact))
    assert response.status_code == 201
    upload = ResearcherModel.objects.get(pk=response.json()["id"])
    assert upload.status == "failed" and upload.error.startswith("could not enqueue the evaluation: ")


def test_owner_adds_an_evaluated_upload_to_the_next_ensemble(client_for, task, artifact):
    upload_id = post(client_for("researcher"), files_of(artifact)).json()["id"]
    url = f"/api/models/uploads/{upload_id}/ensemble/"
    assert client_for("researcher").post(url, {"include": True}, format="json").status_code == 403
    assert client_for("owner").post(url, {"include": True}, format="json").json()["in_next_ensemble"] is True


def test_uploaded_model_joins_the_next_rounds_ensemble(client_for, personas, task, artifact):
    from modelzoo.models import Ensemble
    from rounds import services

    upload_id = post(client_for("researcher"), files_of(artifact)).json()["id"]
    client_for("owner").post(f"/api/models/uploads/{upload_id}/ensemble/", {"include": True}, format="json")
    services.start_pipeline(task, personas.owner)
    members = Ensemble.objects.get(round__task=task, round__number=2, active=True).ordered_members()
    upload = ResearcherModel.objects.get(pk=upload_id)
    assert upload.model_version in members and len(members) == 3
    assert upload.in_next_ensemble is False  # used once; the owner chooses again for later rounds


def safetensors_bytes() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0\0\0\0"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"pytorch_model.bin": pickle.dumps({"w": 1})}, "pickled weights"),
        ({"model.pkl": pickle.dumps({"w": 1})}, "pickled weights"),
        ({"weights.pt": b"PK\x03\x04"}, "pickled weights"),
        ({"model.zip": b"PK\x03\x04"}, "archives are refused"),
        ({"model.tar.gz": b"\x1f\x8b"}, "archives are refused"),
        ({"modeling_evil.py": b"import os"}, "code files are refused"),
        ({"notes.txt": b"hello"}, "not a weights, config or tokenizer file"),
    ],
)
def test_pickles_archives_and_code_are_refused(client_for, task, artifact, extra, message):
    response = post(client_for("researcher"), files_of(artifact, **extra))
    assert response.status_code == 400
    assert message in json.dumps(response.json())
    assert not ResearcherModel.objects.exists()


def test_a_pickle_renamed_to_safetensors_is_refused(client_for, task, artifact):
    response = post(client_for("researcher"), files_of(artifact, **{"model.safetensors": pickle.dumps({"w": [1] * 50})}))
    assert response.status_code == 400 and "not a safetensors file" in json.dumps(response.json())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"auto_map": {"AutoModelForSequenceClassification": "modeling_evil.Evil"}}, "custom code (auto_map)"),
        ({"trust_remote_code": True}, "custom code (trust_remote_code)"),
        ({"model_type": "evil"}, "model_type 'evil' is not supported"),
        ({"architectures": ["BertForQuestionAnswering"]}, "ForSequenceClassification model"),
        ({"id2label": {"0": "yes", "1": "no"}}, "id2label must name exactly the task's labels"),
    ],
)
def test_code_carrying_or_unfit_configs_are_refused(client_for, task, artifact, change, message):
    config = {**json.loads((artifact / "config.json").read_text()), **change}
    response = post(client_for("researcher"), files_of(artifact, **{"config.json": json.dumps(config).encode()}))
    assert response.status_code == 400
    assert message in json.dumps(response.json())


def test_tokenizer_config_with_auto_map_is_refused(client_for, task, artifact):
    tok = {**json.loads((artifact / "tokenizer_config.json").read_text()), "auto_map": {"AutoTokenizer": ["x.Tok", None]}}
    response = post(client_for("researcher"), files_of(artifact, **{"tokenizer_config.json": json.dumps(tok).encode()}))
    assert response.status_code == 400 and "custom code" in json.dumps(response.json())


def test_oversized_upload_is_refused_with_the_limit(client_for, task, artifact, settings):
    settings.ROUNDS_UPLOAD_MAX_MB = 1
    response = post(client_for("researcher"), files_of(artifact, **{"model.safetensors": safetensors_bytes() + b"\0" * (2 * 1024 * 1024)}))
    assert response.status_code == 413 and "the limit is 1 MB" in json.dumps(response.json())
    assert not ResearcherModel.objects.exists()


def test_missing_weights_are_refused(client_for, task, artifact):
    response = post(client_for("researcher"), files_of(artifact, names=("config.json", "tokenizer.json")))
    assert response.status_code == 400 and "no weights" in json.dumps(response.json())


@pytest.mark.parametrize("persona", ["annotator", "validator", "outsider", "anonymous"])
def test_only_researchers_owners_and_admins_may_upload(client_for, task, artifact, persona):
    response = post(client_for(persona), files_of(artifact))
    assert response.status_code in (401, 403)


# --- checks added for issue 14: shards, dimensions against the safetensors header, the body cap ----------------


def header_and_data(raw: bytes) -> tuple[dict, bytes]:
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + length]), raw[8 + length :]


def with_header(raw: bytes, change) -> bytes:
    """The same safetensors file with its JSON header changed by `change` (the weights stay as they are)."""
    header, data = header_and_data(raw)
    change(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"model.safetensors.index.json": b'{"weight_map": {}}'}, "sharded checkpoints and their index files are refused"),
        ({"pytorch_model.bin.index.json": b'{"weight_map": {}}'}, "sharded checkpoints and their index files are refused"),
        ({"model-00002-of-00002.safetensors": safetensors_bytes()}, "only one weights file, model.safetensors"),
    ],
)
def test_sharded_checkpoints_and_their_index_files_are_refused(client_for, task, artifact, extra, message):
    response = post(client_for("researcher"), files_of(artifact, **extra))
    assert response.status_code == 400 and message in json.dumps(response.json())
    assert not ResearcherModel.objects.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": 64}, "config.json gives vocab_size 30522 and hidden size 64, but the word embeddings in "
                              "model.safetensors are 30522 × 32"),
        ({"vocab_size": 1000}, "vocab_size 1000 and hidden size 32"),
        ({"num_hidden_layers": 3}, "num_hidden_layers 3, but model.safetensors holds 2 encoder layers"),
        ({"num_labels": 2}, "num_labels 2 does not match id2label's 3 labels"),
        ({"hidden_size": 10**9}, "hidden_size must be a whole number between 1 and 8192"),
        ({"intermediate_size": "64"}, "intermediate_size must be a whole number"),
    ],
)
def test_config_sizes_are_checked_against_the_safetensors_header(client_for, task, artifact, change, message):
    config = {**json.loads((artifact / "config.json").read_text()), **change}
    response = post(client_for("researcher"), files_of(artifact, **{"config.json": json.dumps(config).encode()}))
    assert response.status_code == 400, response.json()
    assert message in json.dumps(response.json(), ensure_ascii=False)
    assert not ResearcherModel.objects.exists()


def test_an_output_layer_of_the_wrong_size_is_refused_with_one_message_per_problem(client_for, task, artifact):
    def two_outputs_and_no_layer_1(header):
        header["classifier.weight"]["shape"] = [2, 32]
        for name in [n for n in header if ".layer.1." in n]:
            header[name]["shape"] = [0]  # still described, so the file's size holds; renamed below
            header[name.replace(".layer.1.", ".extra.1.")] = header.pop(name)

    weights = with_header((artifact / "model.safetensors").read_bytes(), two_outputs_and_no_layer_1)
    response = post(client_for("researcher"), files_of(artifact, **{"model.safetensors": weights}))
    assert response.status_code == 400
    problems = response.json()["errors"]["files"]
    assert "the output layer classifier.weight in model.safetensors has 2 outputs; this task needs 3" in problems
    assert "config.json gives num_hidden_layers 2, but model.safetensors holds 1 encoder layers" in problems


def test_a_truncated_safetensors_file_is_refused(client_for, task, artifact):
    weights = (artifact / "model.safetensors").read_bytes()[:-100]
    response = post(client_for("researcher"), files_of(artifact, **{"model.safetensors": weights}))
    assert response.status_code == 400 and "truncated?" in json.dumps(response.json())


def test_an_upload_over_the_cap_is_refused_before_it_is_written(client_for, task, artifact, settings, tmp_path):
    settings.ROUNDS_UPLOAD_MAX_MB = 1
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # every uploaded byte that was read would land in a temporary file
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    big = safetensors_bytes() + b"\0" * (3 * 1024 * 1024)
    response = post(client_for("researcher"), files_of(artifact, **{"model.safetensors": big}))
    assert response.status_code == 413
    assert response.json()["detail"].startswith("The upload is too large (3.") and "the limit is 1 MB" in response.json()["detail"]
    assert list(tmp_path.iterdir()) == [] and not ResearcherModel.objects.exists()


def test_an_upload_that_outgrows_the_cap_while_it_arrives_is_stopped_and_nothing_is_kept(settings, tmp_path, rf):
    """A body may not declare its length truthfully (or at all): the upload handler counts what arrives."""
    import io

    from django.contrib.auth.models import User
    from django.http.multipartparser import MultiPartParser
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    from dynabench_site import bodylimit

    settings.ROUNDS_UPLOAD_MAX_MB = 1
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    body = encode_multipart(BOUNDARY, {"name": "big", "files": SimpleUploadedFile("model.safetensors", b"\0" * (3 * 1024 * 1024))})
    request = rf.post("/api/tasks/small/models/", {})
    request.user = User(username="researcher")  # signed in: an anonymous request never gets the upload cap
    meta = {**request.META, "CONTENT_TYPE": MULTIPART_CONTENT, "CONTENT_LENGTH": "1000"}  # a lie
    stream = io.BytesIO(body)
    post, files = MultiPartParser(meta, stream, request.upload_handlers).parse()
    assert "files" not in files and list(tmp_path.iterdir()) == []
    assert stream.tell() < 2.5 * 1024 * 1024  # stopped near the cap (2 MB with the form's slack), not at 3 MB
    assert "the limit is 1 MB" in bodylimit.refusal(request)


def test_the_upload_page_refuses_an_oversized_upload_with_the_limit(client, personas, task, artifact, settings):
    settings.ROUNDS_UPLOAD_MAX_MB = 1
    client.force_login(personas.researcher)
    big = SimpleUploadedFile("model.safetensors", b"\0" * (3 * 1024 * 1024))
    response = client.post("/tasks/small/models/upload/", {"name": "big", "files": [big]})
    assert response.status_code == 413 and b"the limit is 1 MB" in response.content
