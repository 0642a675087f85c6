"""Events emitted from the real call sites: a round opened and closed (tasks.round_state), an appeal decided on the
expert page (validation.services), a pipeline run that failed or waits for approval (rounds.pipeline), a dataset
published (exports.services); stored in the caller's transaction, and never breaking the caller."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from annotation import services as annotation_services
from annotation.models import Example
from notify import webhooks
from notify.models import Event, Mail
from rounds import pipeline, steps
from rounds.models import PipelineRun
from tasks import round_state, services
from tests.factories import ExampleFactory, RoundFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def hooked(task, personas, settings):
    """The sentiment task with a webhook for every event (queued for a commit the test transaction never
    reaches: these tests look at what is stored)."""
    settings.JOB_RUNNER = ""
    hook = webhooks.add(task, "https://hooks.example.org/in", ["round_opened", "round_closed", "pipeline_waiting",
                                                              "pipeline_failed", "dataset_published",
                                                              "appeal_decided"])
    return hook


def only_event(kind: str) -> Event:
    (event,) = Event.objects.filter(kind=kind)
    return event


def test_opening_the_next_round_emits_round_closed_and_round_opened(task, personas, hooked):
    first = RoundFactory(task=task, number=1)
    services.open_next_round(task, description="Harder, please")
    closed, opened = only_event("round_closed"), only_event("round_opened")
    assert closed.data["round"] == 1 and closed.data["status"] == "closed" and closed.data["closed_at"]
    assert opened.data["round"] == 2 and opened.data["description"] == "Harder, please"
    assert opened.data["task"] == {"slug": "sentiment", "name": task.name}
    assert closed.data["path"] == "/tasks/sentiment/console/rounds/"
    for event in (closed, opened):
        assert [d.webhook_id for d in event.deliveries.all()] == [hooked.pk]
        assert list(event.mails.values_list("address", flat=True)) == [personas.owner.email]
    first.refresh_from_db()
    assert first.status == "closed"


def test_an_event_exists_only_if_the_action_that_caused_it_committed(task, hooked):
    round_ = RoundFactory(task=task, number=1)
    with pytest.raises(RuntimeError), transaction.atomic():
        round_state.close_round(round_)
        raise RuntimeError("the caller's action failed after closing")
    assert not Event.objects.exists() and not Mail.objects.exists()
    round_.refresh_from_db()
    assert round_.status == "open"


def test_a_failure_to_record_the_event_never_breaks_the_caller(task, hooked, monkeypatch, caplog):
    round_ = RoundFactory(task=task, number=1)

    def broken(*args, **kwargs):
        raise RuntimeError("the notify tables are unreachable")

    monkeypatch.setattr(Event.objects, "create", broken)
    round_state.close_round(round_)  # no exception
    round_.refresh_from_db()
    assert round_.status == "closed"
    assert "could not record the event round_closed" in caplog.text


def test_an_appeal_decided_on_the_expert_page_tells_its_writer(task, open_round, personas, hooked):
    example = ExampleFactory(round=open_round, author=personas.annotator, consensus=Example.Consensus.REJECTED)
    annotation_services.appeal(example, "the label was right")
    client = Client()
    client.force_login(personas.expert)
    response = client.post(f"/tasks/sentiment/expert/{example.pk}/resolve/", {"verdict": "correct"})
    assert response.status_code == 302
    event = only_event("appeal_decided")
    assert event.data["example"] == example.pk and event.data["outcome"] == "verified"
    assert event.data["path"] == "/me/examples/"
    assert list(event.mails.values_list("address", flat=True)) == [personas.annotator.email]  # the writer only
    assert event.deliveries.count() == 1
    # a second expert vote on the same example decides no appeal again
    client.force_login(personas.owner)
    client.post(f"/tasks/sentiment/expert/{example.pk}/resolve/", {"verdict": "correct"})
    assert Event.objects.filter(kind="appeal_decided").count() == 1


def pipeline_run(task, round_, owner, monkeypatch, fn) -> PipelineRun:
    monkeypatch.setattr(steps, "STEPS", [("only", "The only step", fn)])
    run = PipelineRun.objects.create(task=task, from_round=round_, started_by=owner)
    pipeline.create_steps(run)
    return run


def test_a_failed_pipeline_run_emits_pipeline_failed(task, open_round, personas, hooked, monkeypatch):
    def crash(ctx):
        raise ValueError("no labelled data to train on")

    run = pipeline.execute(pipeline_run(task, open_round, personas.owner, monkeypatch, crash).pk)
    assert run.status == "failed"
    event = only_event("pipeline_failed")
    assert event.data["run"] == run.pk and "no labelled data to train on" in event.data["error"]
    assert event.data["from_round"] == 1 and event.data["path"] == f"/console/jobs/{run.pk}/"
    assert list(event.mails.values_list("address", flat=True)) == [personas.owner.email]


def test_a_run_that_could_not_be_queued_emits_pipeline_failed(task, open_round, personas, hooked):
    run = PipelineRun.objects.create(task=task, from_round=open_round, started_by=personas.owner)
    assert pipeline.fail_unqueued(run.pk, ConnectionError("broker down"))
    assert "could not enqueue" in only_event("pipeline_failed").data["error"]


def test_a_run_waiting_for_approval_emits_pipeline_waiting(task, open_round, personas, hooked, monkeypatch):
    def worse(ctx):
        raise steps.AwaitingApproval("the new ensemble is worse than the live one by more than 1 point(s)")

    run = pipeline.execute(pipeline_run(task, open_round, personas.owner, monkeypatch, worse).pk)
    assert run.status == "awaiting"
    event = only_event("pipeline_waiting")
    assert event.data["run"] == run.pk and "worse than the live one" in event.data["reason"]


def test_publishing_a_dataset_emits_dataset_published_once_per_new_version(task, open_round, personas, hooked,
                                                                          settings, tmp_path):
    from exports import services as exports

    settings.EXPORTS_DIR = tmp_path / "exports"
    for n in range(3):
        ExampleFactory(round=open_round, author=UserFactory(), fooled=False, input={"text": f"Plain one {n}."})
    snapshot, created = exports.publish_snapshot(open_round, personas.owner)
    assert created
    event = only_event("dataset_published")
    assert event.data["round"] == 1 and event.data["version"] == snapshot.version == 1
    assert sum(event.data["counts"].values()) == 3 and event.data["path"] == "/tasks/sentiment/console/datasets/"
    _, again = exports.publish_snapshot(open_round, personas.owner)  # nothing new: the same version, no event
    assert not again and Event.objects.filter(kind="dataset_published").count() == 1
