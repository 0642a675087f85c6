"""Rounds that improve the model, or say why not: the retrained ensemble is compared with the live one before it
is deployed; a worse one waits for the owner's approval; a round without new training data keeps the live one."""

from __future__ import annotations

import pytest

from modelzoo.models import Ensemble, ModelVersion
from modelzoo.services import active_ensemble, default_spec, deploy_ensemble, train_model
from rounds import services
from rounds.models import PipelineRun, PipelineStep
from tasks.models import Round
from tests.factories import TaskFactory
from tests.personas import PERSONAS
from tests.rounds.conftest import fill_task

ALLOWED = {"owner", "admin"}
# The gate itself, on test sets of a few rows: here they decide as sets of 100+ rows would (a smaller set decides
# nothing by default: tests/rounds/test_test_sets.py).
pytestmark = pytest.mark.usefixtures("small_sets_decide")


@pytest.fixture
def task(db):
    """The rounds' small sentiment task (slug "small"), its personas' task."""
    task = TaskFactory(slug="small", kind="sentiment")
    fill_task(task)
    return task


def deploy_live(task, epochs: int = 30) -> list[ModelVersion]:
    """A live ensemble for round 1: one tiny model trained long on the imported pool (100 % on the base test set
    with this seed)."""
    spec = default_spec(task, seed=0, epochs=epochs, lr=1e-3, batch_size=8, encoder="tiny")
    live = [train_model(task, spec, name="live-r1")]
    deploy_ensemble(task.rounds.get(number=1), live)
    return live


@pytest.fixture
def live(task):
    """The strong live ensemble, and a round 1 whose training examples validators relabelled wrongly (the labels
    a model learns are the validated ones), so whatever the retraining recipe, the new ensemble learns nonsense."""
    for example in task.rounds.get(number=1).examples.exclude(split="test"):
        example.validated_label = "negative" if example.target == "positive" else "positive"
        example.save(update_fields=["validated_label"])
    return deploy_live(task)


def awaiting_run(task, owner) -> PipelineRun:
    run = services.start_pipeline(task, owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.AWAITING, run.error or run.steps.get(name="compare").log
    return run


def test_a_worse_retrained_ensemble_waits_for_approval_and_the_live_one_stays(task, live, personas, client_for):
    run = awaiting_run(task, personas.owner)
    compare = run.steps.get(name="compare")
    assert compare.status == PipelineStep.Status.WAITING and "approve" in compare.message
    assert list(run.steps.filter(status="pending").values_list("name", flat=True)) == ["seed", "deploy", "open"]
    # The live ensemble stays where it is; the next round is a draft with no ensemble, and nothing is open.
    assert active_ensemble(task.rounds.get(number=1)).ordered_members() == live
    assert task.rounds.get(number=2).status == Round.Status.DRAFT
    assert not Ensemble.objects.filter(round__number=2, round__task=task).exists()
    assert task.current_round is None
    rows = {r["dataset"]: r for r in run.comparison["rows"]}
    assert rows["*/test"]["live"] == 1.0 and rows["*/test"]["delta"] < -1.0
    assert "base test" in run.comparison["worse"] and run.comparison["tolerance"] == 1.0
    # The job's API gives the table and what the owner may do; the run holds the task's one slot.
    body = client_for("owner").get(f"/api/jobs/{run.pk}/").json()
    assert body["status"] == "awaiting" and body["actions"]["approve"] and body["actions"]["discard"]
    assert {r["label"] for r in body["comparison"]["rows"]} == {"base test", "round 1 test"}
    with pytest.raises(services.PipelineBusy, match="awaits approval"):
        services.start_pipeline(task, personas.owner)


def test_the_job_page_shows_the_comparison_and_the_decision_forms(task, live, personas, client):
    run = awaiting_run(task, personas.owner)
    client.force_login(personas.owner)
    page = client.get(f"/console/jobs/{run.pk}/").content.decode()
    assert 'id="comparison-table"' in page and "base test" in page and "Awaiting your approval" in page
    assert f"/console/jobs/{run.pk}/approve/" in page and f"/console/jobs/{run.pk}/discard/" in page


def test_approval_deploys_the_new_ensemble_and_opens_the_round(task, live, personas, client_for):
    run = awaiting_run(task, personas.owner)
    response = client_for("owner").post(f"/api/jobs/{run.pk}/approve/")
    assert response.status_code == 202
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE and run.decision == "approved"
    assert run.decided_by == personas.owner
    round2 = task.rounds.get(number=2)
    assert round2.status == Round.Status.OPEN and task.current_round == round2
    trained = run.steps.get(name="retrain").result["versions"]
    assert [v.pk for v in active_ensemble(round2).ordered_members()] == trained != [v.pk for v in live]
    assert "approved it" in run.steps.get(name="compare").log
    # The round dashboard shows the before/after figures and what happened.
    dashboard = client_for("anonymous").get("/api/tasks/small/dashboard/").json()
    change = dashboard["before_after"][0]
    assert change["job"] == run.pk and change["outcome"] == "approved" and change["live_round"] == 1
    assert {r["label"] for r in change["rows"]} == {"base test", "round 1 test"}


def test_discarding_keeps_the_live_ensemble_and_opens_the_round(task, live, personas, client):
    run = awaiting_run(task, personas.owner)
    client.force_login(personas.owner)
    response = client.post(f"/console/jobs/{run.pk}/discard/")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE and run.decision == "discarded"
    round2 = task.rounds.get(number=2)
    assert round2.status == Round.Status.OPEN
    assert active_ensemble(round2).ordered_members() == live
    assert "keeps the live one" in run.steps.get(name="compare").log
    page = client.get("/tasks/small/dashboard/").content.decode()
    assert "Before and after each retraining" in page and "discarded" in page


def test_abandoning_an_awaiting_run_frees_the_slot(task, live, personas, settings):
    run = awaiting_run(task, personas.owner)
    services.abandon_pipeline(run, personas.owner)
    assert PipelineRun.objects.get(pk=run.pk).status == "abandoned"
    settings.JOB_RUNNER = ""  # queued after commit, which the test's transaction never does
    assert services.start_pipeline(task, personas.owner).pk != run.pk


def test_the_tolerance_is_a_task_setting(task, live, personas):
    task.config = {**task.config, "retraining": {"deploy_tolerance": 100}}
    task.save()
    run = services.start_pipeline(task, personas.owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE and run.comparison["tolerance"] == 100
    assert run.comparison["worse"] == [] and "within 100 point(s)" in run.steps.get(name="compare").log
    assert run.decision == "" and task.current_round.number == 2


@pytest.fixture
def quiet_task(personas):
    """A task whose round 1 brought no example at all, owned by the owner persona."""
    task = TaskFactory(slug="quiet", kind="sentiment")
    task.owners.add(personas.owner)
    fill_task(task, examples=0)
    return task


def test_a_round_without_new_training_data_keeps_the_live_ensemble_without_training(quiet_task, personas):
    task = quiet_task
    live = deploy_live(task, epochs=1)
    versions = ModelVersion.objects.count()
    run = services.start_pipeline(task, personas.owner)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    assert ModelVersion.objects.count() == versions  # nothing was trained
    retrain = run.steps.get(name="retrain")
    assert retrain.result["kept_live"] == [v.pk for v in live] and "no new training data" in retrain.log
    assert active_ensemble(task.rounds.get(number=2)).ordered_members() == live
    assert run.steps.get(name="compare").result["verdict"] == "same"


def test_the_owner_may_ask_to_retrain_without_new_data(quiet_task, personas, client):
    task = quiet_task
    live = deploy_live(task, epochs=1)
    client.force_login(personas.owner)
    response = client.post(f"/tasks/{task.slug}/console/rounds/", {"retrain_without_new_data": "1"})
    assert response.status_code == 302
    run = PipelineRun.objects.get(task=task)
    assert run.options["retrain_without_new_data"] is True and run.status == "done"
    trained = run.steps.get(name="retrain").result["versions"]
    assert len(trained) == 2 and [v.pk for v in active_ensemble(task.rounds.get(number=2)).ordered_members()] == trained
    assert live[0].pk not in trained


def test_the_close_confirmation_offers_retraining_without_new_data(task, personas, client):
    client.force_login(personas.owner)
    page = client.get("/tasks/small/console/rounds/").content.decode()
    assert 'name="retrain_without_new_data"' in page and "waits for your approval" in page


@pytest.fixture
def pending_awaiting(task, personas):
    """A run awaiting approval, made without training (the permission checks come before any work)."""
    run = PipelineRun.objects.create(task=task, from_round=task.rounds.get(number=1), status="awaiting",
                                     started_by=personas.owner)
    return run


@pytest.mark.parametrize("action", ["approve", "discard"])
@pytest.mark.parametrize("persona", PERSONAS)
def test_only_owners_and_admins_may_approve_or_discard(persona, action, client_for, pending_awaiting, settings):
    settings.JOB_RUNNER = ""  # the continued run is queued after commit, which never comes in a test
    response = client_for(persona).post(f"/api/jobs/{pending_awaiting.pk}/{action}/")
    pending_awaiting.refresh_from_db()
    if persona in ALLOWED:
        assert response.status_code == 202 and pending_awaiting.status == "pending"
        assert pending_awaiting.decision == {"approve": "approved", "discard": "discarded"}[action]
    else:
        assert response.status_code == (401 if persona == "anonymous" else 403)
        assert pending_awaiting.status == "awaiting" and pending_awaiting.decision == ""


@pytest.mark.parametrize("action", ["approve", "discard", "abandon"])
@pytest.mark.parametrize("persona", ["annotator", "researcher", "validator"])
def test_the_decision_forms_refuse_non_owners(persona, action, personas, client, pending_awaiting):
    client.force_login(personas.get(persona))
    assert client.post(f"/console/jobs/{pending_awaiting.pk}/{action}/").status_code == 403
    assert PipelineRun.objects.get(pk=pending_awaiting.pk).status == "awaiting"


def test_approving_a_run_that_does_not_wait_is_refused(task, personas, client_for):
    run = PipelineRun.objects.create(task=task, status="failed", started_by=personas.owner)
    response = client_for("owner").post(f"/api/jobs/{run.pk}/approve/")
    assert response.status_code == 409 and "only a pipeline awaiting approval" in response.json()["detail"]


def test_the_close_confirmation_says_when_the_live_ensemble_is_kept(quiet_task, task, personas, client):
    deploy_live(quiet_task, epochs=1)
    deploy_live(task, epochs=1)
    client.force_login(personas.owner)
    quiet = client.get("/tasks/quiet/console/rounds/").content.decode()
    assert 'id="will-keep-live"' in quiet and "brought no new training data" in quiet
    busy = client.get("/tasks/small/console/rounds/").content.decode()  # round 1 has training examples
    assert 'id="will-keep-live"' not in busy
