import pytest

from modelzoo import services
from modelzoo.models import Ensemble, ModelVersion
from modelzoo.testing import tiny_model

Status = ModelVersion.Status


def test_a_ready_model_can_be_deployed_and_retired_but_not_trained_again(task):
    version = tiny_model(task)
    assert version.status == Status.READY
    services.transition(version, Status.DEPLOYED)
    services.transition(version, Status.RETIRED)
    with pytest.raises(services.InvalidTransition):
        services.transition(version, Status.READY)
    with pytest.raises(services.InvalidTransition):
        services.transition(version, Status.TRAINING)


@pytest.mark.parametrize(("start", "to"), [
    (Status.TRAINING, Status.DEPLOYED), (Status.FAILED, Status.READY), (Status.FAILED, Status.DEPLOYED),
    (Status.READY, Status.TRAINING), (Status.RETIRED, Status.DEPLOYED),
])
def test_disallowed_transitions_are_refused_and_leave_the_row_unchanged(task, start, to):
    version = tiny_model(task)
    ModelVersion.objects.filter(pk=version.pk).update(status=start)
    version.refresh_from_db()
    with pytest.raises(services.InvalidTransition):
        services.transition(version, to)
    version.refresh_from_db()
    assert version.status == start


def test_a_stale_copy_cannot_transition_after_someone_else_did(task):
    version = tiny_model(task)
    stale = ModelVersion.objects.get(pk=version.pk)
    services.transition(version, Status.RETIRED)
    with pytest.raises(services.InvalidTransition, match="meanwhile"):
        services.transition(stale, Status.DEPLOYED)


def test_deploying_a_new_ensemble_undeploys_the_members_it_replaces(open_round):
    first, second, third = (tiny_model(open_round.task, seed) for seed in range(3))
    old = services.deploy_ensemble(open_round, [first, second])
    new = services.deploy_ensemble(open_round, [second, third])
    statuses = dict(ModelVersion.objects.values_list("pk", "status"))
    assert statuses == {first.pk: Status.READY, second.pk: Status.DEPLOYED, third.pk: Status.DEPLOYED}
    assert list(Ensemble.objects.filter(round=open_round, active=True)) == [new]
    old.refresh_from_db()
    assert not old.active
    assert services.active_ensemble(open_round).ordered_members() == [second, third]


def test_a_model_in_an_active_ensemble_cannot_be_retired(open_round):
    version = tiny_model(open_round.task)
    services.deploy_ensemble(open_round, [version])
    with pytest.raises(services.InvalidTransition, match="active ensemble"):
        services.retire(version)


def test_failed_or_foreign_models_cannot_join_an_ensemble(open_round, qa_round):
    failed = tiny_model(open_round.task)
    ModelVersion.objects.filter(pk=failed.pk).update(status=Status.FAILED)
    failed.refresh_from_db()
    with pytest.raises(ValueError, match="only ready or deployed"):
        services.deploy_ensemble(open_round, [failed])
    with pytest.raises(ValueError, match="another task"):
        services.deploy_ensemble(open_round, [tiny_model(qa_round.task)])


def test_registering_an_artifact_of_the_wrong_head_is_refused(task, qa_round, model_store):
    from modelzoo.testing import build_tiny_artifact

    path = build_tiny_artifact(qa_round.task, model_store / "qa-art")
    with pytest.raises(ValueError, match="does not fit"):
        services.register_artifact(task, path)


def test_versions_count_up_per_task(task, qa_round):
    numbers = [tiny_model(task, seed).version for seed in range(3)]
    assert numbers == [1, 2, 3]
    assert tiny_model(qa_round.task).version == 1
