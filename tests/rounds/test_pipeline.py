"""The close-round / open-next-round pipeline: runs to the end, resumes after a failure, refuses a second run."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from modelzoo.models import Ensemble, EnsembleScore, Evaluation, ModelMeasurement
from rounds import services
from rounds.models import PipelineRun, PipelineStep
from tasks.models import LabeledItem, Round
from tests.factories import UserFactory


@pytest.fixture
def owner(small_task):
    user = UserFactory(username="boss")
    small_task.owners.add(user)
    return user


def test_pipeline_closes_round_one_and_opens_round_two_with_new_ensemble_and_seeds(small_task, owner):
    run = services.start_pipeline(small_task, owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    assert [s.status for s in run.steps.all()] == ["done"] * 8
    assert small_task.rounds.get(number=1).status == Round.Status.CLOSED
    round2 = small_task.rounds.get(number=2)
    assert round2.status == Round.Status.OPEN and run.to_round == round2
    ensemble = Ensemble.objects.get(round=round2, active=True)
    members = ensemble.ordered_members()
    assert [m.name for m in members] == ["small-r2-s0", "small-r2-s1"]
    assert run.members == [m.pk for m in members]  # the run keeps its ensemble's members itself
    assert LabeledItem.objects.filter(task=small_task, seed_round=round2).count() == 4  # k=2 per label
    sets = run.steps.get(name="evaluate").result["test_sets"]
    assert "*/test" in sets and "round-1/test" in sets
    assert Evaluation.objects.filter(model_version__in=members).count() == 2 * len(sets)
    assert EnsembleScore.objects.filter(task=small_task, round_number=2).count() == len(sets)
    assert ModelMeasurement.objects.filter(model_version__in=members, throughput__gt=0, memory_mb__gt=0).count() == 2


def test_each_step_reports_timing_and_log(small_task, owner):
    run = services.start_pipeline(small_task, owner)
    for step in run.steps.all():
        assert step.started_at and step.finished_at and step.attempts == 1
        assert step.log, step.name


def test_failed_step_is_retried_without_redoing_finished_steps(small_task, owner, monkeypatch):
    from rounds import seeding, training

    trained = []
    real_train = training.train_ensemble
    monkeypatch.setattr(training, "train_ensemble", lambda ctx, n: trained.append(n) or real_train(ctx, n))

    def broken(*args, **kwargs):
        raise RuntimeError("hardness scorer exploded")

    real_seed = seeding.seed_round
    monkeypatch.setattr(seeding, "seed_round", broken)
    run = services.start_pipeline(small_task, owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.FAILED
    seed = run.steps.get(name="seed")
    assert seed.status == PipelineStep.Status.FAILED and "hardness scorer exploded" in seed.error
    assert list(run.steps.filter(status="done").values_list("name", flat=True)) == [
        "freeze", "assign_splits", "retrain", "evaluate", "compare"]
    assert small_task.current_round is None  # round 1 frozen, round 2 not open yet

    monkeypatch.setattr(seeding, "seed_round", real_seed)
    services.retry_pipeline(run, owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE
    assert trained == [2]  # retraining ran once, not again on retry
    attempts = dict(run.steps.values_list("name", "attempts"))
    assert attempts == {"freeze": 1, "assign_splits": 1, "retrain": 1, "evaluate": 1, "compare": 1, "seed": 2,
                        "deploy": 1, "open": 1}
    assert small_task.current_round.number == 2


def test_steps_are_idempotent_when_the_whole_run_is_repeated(small_task, owner):
    from rounds import pipeline

    run = services.start_pipeline(small_task, owner)
    ensembles = Ensemble.objects.count()
    evaluations = Evaluation.objects.count()
    run.steps.update(status="pending")
    PipelineRun.objects.filter(pk=run.pk).update(status="pending")
    pipeline.execute(run.pk)
    assert Ensemble.objects.count() == ensembles and Evaluation.objects.count() == evaluations
    assert small_task.rounds.count() == 2


@pytest.fixture
def no_dispatch(settings):
    """Jobs queued the way the embedded default queues them: once the transaction commits, which a test's
    transaction never does, so runs stay pending."""
    settings.JOB_RUNNER = ""


def test_second_open_next_round_while_one_runs_is_refused(small_task, owner, no_dispatch):
    first = services.start_pipeline(small_task, owner)
    PipelineRun.objects.filter(pk=first.pk).update(status="running")
    with pytest.raises(services.PipelineBusy, match=f"Pipeline #{first.pk} is already running"):
        services.start_pipeline(small_task, owner)
    assert PipelineRun.objects.filter(task=small_task).count() == 1


def test_failed_pipeline_must_be_retried_or_abandoned_first(small_task, owner, no_dispatch):
    first = services.start_pipeline(small_task, owner)
    PipelineRun.objects.filter(pk=first.pk).update(status="failed")
    with pytest.raises(services.PipelineBusy, match="Retry it .* or abandon it"):
        services.start_pipeline(small_task, owner)
    services.abandon_pipeline(first, owner)
    assert services.start_pipeline(small_task, owner).pk != first.pk


def test_database_allows_one_unfinished_pipeline_per_task(small_task):
    PipelineRun.objects.create(task=small_task, status="running")
    with pytest.raises(IntegrityError), transaction.atomic():
        PipelineRun.objects.create(task=small_task, status="pending")
    PipelineRun.objects.create(task=small_task, status="done")  # finished runs do not count


def test_api_answers_409_with_the_reason_while_a_pipeline_runs(small_task, owner, no_dispatch, api):
    api.force_authenticate(owner)
    first = api.post("/api/tasks/small/rounds/", {}, format="json")
    assert first.status_code == 202 and first.json()["status"] == "pending"
    second = api.post("/api/tasks/small/rounds/", {}, format="json")
    assert second.status_code == 409
    assert "already pending" in second.json()["detail"] and second.json()["job"] == first.json()["id"]


def test_job_api_reports_steps_and_progress(small_task, owner, api):
    api.force_authenticate(owner)
    job = api.post("/api/tasks/small/rounds/", {"description": "round two"}, format="json").json()
    body = api.get(f"/api/jobs/{job['id']}/").json()
    assert body["status"] == "done" and body["progress"] == 1.0 and body["to_round"] == 2
    assert [s["name"] for s in body["steps"]] == ["freeze", "assign_splits", "retrain", "evaluate", "compare", "seed", "deploy",
                                         "open"]
    assert all(s["seconds"] is not None for s in body["steps"])


def test_bad_pipeline_options_are_refused(small_task, owner, api):
    api.force_authenticate(owner)
    response = api.post("/api/tasks/small/rounds/", {"options": {"epochs": 0}}, format="json")
    assert response.status_code == 400 and "epochs" in response.json()["detail"]


def test_a_stalled_run_can_be_retried(small_task, owner, no_dispatch, settings):
    from django.utils import timezone

    run = services.start_pipeline(small_task, owner)
    old = timezone.now() - timezone.timedelta(hours=2)
    PipelineRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=old)
    run.steps.filter(name="freeze").update(status="running")
    run.refresh_from_db()
    services.retry_pipeline(run, owner)
    run.refresh_from_db()
    assert run.status == "pending" and run.steps.get(name="freeze").status == "failed"
