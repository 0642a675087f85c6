"""The site's choice of base encoder (modelzoo.encoders): names, folders only inside ZOO_ENCODER_DIRS, uploads of
the task; refused with the reason in the settings form, the pipeline options and the commands; the device check."""

from __future__ import annotations

import json

import pytest
from django.core import checks
from django.core.management import CommandError, call_command

from modelzoo import encoders, ensemble_training
from modelzoo.apps import check_device
from modelzoo.models import ModelVersion
from rounds.options import BadOptions, pipeline_options
from tasks.config_form import ConfigForm
from tasks.forms import SettingsForm
from tests.factories import TaskFactory, UserFactory
from zoo import tiny
from zoo.encoders import DEFAULT, EncoderError

LABELS = ["negative", "positive"]


@pytest.fixture
def sentiment(db):
    return TaskFactory(slug="enc", kind="sentiment", config={"labels": LABELS})


@pytest.fixture
def folder(tmp_path):
    """A tiny RoBERTa checkpoint inside an allowed parent folder."""
    root = tmp_path / "encoders"
    return tiny.tiny_checkpoint("roberta", root / "my-roberta"), root


def upload_of(task, artifact, name="lab-model", status=ModelVersion.Status.READY):
    from rounds.models import ResearcherModel

    version = ModelVersion.objects.create(task=task, version=ModelVersion.objects.filter(task=task).count() + 1,
                                          name=name, head="classification", status=status, artifact=str(artifact))
    return ResearcherModel.objects.create(task=task, uploaded_by=UserFactory(), name=name, model_version=version,
                                          status="evaluated")


def test_names_resolve_and_unknown_ones_are_refused_with_the_reason(sentiment):
    assert encoders.validate_encoder("tiny-bert", sentiment) == "tiny-bert"
    assert encoders.validate_encoder("  ", sentiment) is None
    with pytest.raises(EncoderError, match="unknown encoder 'bert-large-uncased'"):
        encoders.validate_encoder("bert-large-uncased", sentiment)


def test_precedence_is_the_runs_option_then_the_tasks_setting_then_the_sites(sentiment, settings):
    settings.MODELZOO_RECIPE = {}
    assert encoders.encoder_for(sentiment, None) == DEFAULT
    settings.MODELZOO_RECIPE = {"encoder": "tiny"}
    assert encoders.encoder_for(sentiment, None) == "tiny"
    sentiment.config = {"labels": LABELS, "retraining": {"encoder": "tiny-roberta"}}
    sentiment.save()
    assert encoders.encoder_for(sentiment, None) == "tiny-roberta"
    assert encoders.encoder_for(sentiment, {"encoder": "tiny-electra"}) == "tiny-electra"
    assert ensemble_training.default_recipe(sentiment).encoder == "tiny-roberta"
    assert ensemble_training.default_recipe(sentiment, encoder="tiny-bert").encoder == "tiny-bert"


def test_a_folder_is_accepted_only_inside_the_folders_the_operator_allows(sentiment, folder, settings):
    path, root = folder
    settings.ZOO_ENCODER_DIRS = []
    with pytest.raises(EncoderError, match="allows no encoder folders"):
        encoders.validate_encoder(str(path), sentiment)
    settings.ZOO_ENCODER_DIRS = [str(root / "elsewhere")]
    with pytest.raises(EncoderError, match="not inside a folder this site allows"):
        encoders.validate_encoder(str(path), sentiment)
    with pytest.raises(EncoderError, match="not inside"):  # no escape through ..
        encoders.validate_encoder(str(root / "elsewhere" / ".." / "my-roberta"), sentiment)
    settings.ZOO_ENCODER_DIRS = [str(root)]
    assert encoders.validate_encoder(str(path), sentiment) == str(path)
    (root / "empty").mkdir()
    with pytest.raises(EncoderError, match="has no config.json"):
        encoders.validate_encoder(str(root / "empty"), sentiment)
    # the operator on the command line may name any folder
    settings.ZOO_ENCODER_DIRS = []
    assert encoders.validate_encoder(str(path), sentiment, operator=True) == str(path)


def test_a_folder_stored_in_a_tasks_settings_outside_the_allowed_ones_is_refused_at_training(sentiment, folder,
                                                                                               settings):
    """However a folder got into a task's stored settings (an import, an older form), training checks it again: an
    owner cannot have the server train from another task's model files."""
    path, root = folder
    settings.ZOO_ENCODER_DIRS = [str(root / "elsewhere")]
    sentiment.config = {"labels": LABELS, "retraining": {"encoder": str(path)}}
    sentiment.save()
    with pytest.raises(EncoderError, match="not inside a folder this site allows"):
        encoders.encoder_for(sentiment, None)
    settings.ZOO_ENCODER_DIRS = [str(root)]
    assert encoders.encoder_for(sentiment, None) == str(path.resolve())


def test_an_upload_of_the_task_resolves_to_its_folder(sentiment, folder, settings):
    path, _ = folder
    settings.MODEL_STORE = path.parent
    upload = upload_of(sentiment, path)
    assert encoders.encoder_for(sentiment, f"upload:{upload.pk}") == str(path.resolve())
    assert encoders.encoder_for(sentiment, "upload:lab-model") == str(path.resolve())
    other = TaskFactory(slug="other", kind="sentiment", config={"labels": LABELS})
    with pytest.raises(EncoderError, match="no uploaded model"):
        encoders.validate_encoder(f"upload:{upload.pk}", other)
    with pytest.raises(EncoderError, match="no uploaded model '999'"):
        encoders.validate_encoder("upload:999", sentiment)


def test_the_settings_forms_refuse_a_bad_encoder_with_the_reason(sentiment, folder, settings):
    path, root = folder
    settings.ZOO_ENCODER_DIRS = []
    base = ConfigForm(task=sentiment).initial
    posted = {k: ("\n".join(v) if isinstance(v, list) else v) for k, v in base.items() if v is not None}
    field = next(name for name in ConfigForm(task=sentiment).fields if name.endswith("encoder"))
    form = ConfigForm({**posted, field: "bert-large"}, task=sentiment)
    assert not form.is_valid() and "unknown encoder 'bert-large'" in " ".join(form.errors[field])
    form = ConfigForm({**posted, field: str(path)}, task=sentiment)
    assert not form.is_valid() and "allows no encoder folders" in " ".join(form.errors[field])
    settings.ZOO_ENCODER_DIRS = [str(root)]
    form = ConfigForm({**posted, field: str(path)}, task=sentiment)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["config"]["retraining"]["encoder"] == str(path)
    settings.ZOO_ENCODER_DIRS = []
    raw = {"labels": LABELS, "retraining": {"encoder": str(path)}}
    json_form = SettingsForm({"name": "x", "config": json.dumps(raw)}, task=sentiment)
    assert not json_form.is_valid() and "allows no encoder folders" in str(json_form.errors["config"])


def test_the_pipeline_options_refuse_a_bad_encoder(sentiment, settings):
    settings.ROUNDS_PIPELINE = {}
    with pytest.raises(BadOptions, match="unknown encoder 'nope'"):
        pipeline_options({"encoder": "nope"}, sentiment)
    with pytest.raises(BadOptions, match="allows no encoder folders"):
        settings.ZOO_ENCODER_DIRS = []
        pipeline_options({"encoder": "/etc"}, sentiment)
    with pytest.raises(BadOptions, match="start_from"):
        pipeline_options({"start_from": "scratch"})
    assert pipeline_options({"encoder": "tiny-bert", "start_from": "live"}, sentiment).start_from == "live"


def test_the_pipeline_api_answers_400_with_the_reason(sentiment, api):

    owner = UserFactory(username="own")
    sentiment.owners.add(owner)
    api.force_authenticate(owner)
    response = api.post(f"/api/tasks/{sentiment.slug}/rounds/", {"options": {"encoder": "nope"}}, format="json")
    assert response.status_code == 400 and "unknown encoder 'nope'" in response.content.decode()


@pytest.mark.parametrize("command, args", [
    ("train_model", ["enc", "--encoder", "nope"]),
    ("demo_models", ["--tasks", "enc", "--encoder", "nope"]),
    ("simulate_rounds", ["enc", "--writers", "README.md", "--held-out", "README.md", "--encoder", "nope"]),
])
def test_the_commands_refuse_a_bad_encoder_with_the_reason(sentiment, command, args):
    if command == "simulate_rounds":  # research's command (python -m research.simulate_rounds), not manage.py's
        from research.simulate_rounds.command import Command

        command = Command()
    with pytest.raises(CommandError, match="unknown encoder 'nope'"):
        call_command(command, *args)


def test_the_system_check_fails_when_cuda_is_asked_for_and_absent(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("ZOO_DEVICE", "cuda")
    (error,) = check_device()
    assert isinstance(error, checks.Error) and error.id == "modelzoo.E001" and "no CUDA device" in error.msg
    monkeypatch.setenv("ZOO_DEVICE", "gpu")
    (error,) = check_device()
    assert "ZOO_DEVICE='gpu' is not one of" in error.msg
    monkeypatch.setenv("ZOO_DEVICE", "cpu")
    assert check_device() == []
    monkeypatch.setenv("ZOO_DEVICE", "cuda")
    with pytest.raises(Exception, match="no CUDA device"):
        call_command("check")
