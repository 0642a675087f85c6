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
    assert response.status_code == 400 and "the limit is 1 MB" in json.dumps(response.json())


def test_missing_weights_are_refused(client_for, task, artifact):
    response = post(client_for("researcher"), files_of(artifact, names=("config.json", "tokenizer.json")))
    assert response.status_code == 400 and "no weights" in json.dumps(response.json())


@pytest.mark.parametrize("persona", ["annotator", "validator", "outsider", "anonymous"])
def test_only_researchers_owners_and_admins_may_upload(client_for, task, artifact, persona):
    response = post(client_for(persona), files_of(artifact))
    assert response.status_code in (401, 403)
