from modelzoo.testing import deploy_tiny_ensemble, tiny_model
from tests.factories import TaskFactory


def test_model_list_shows_status_metrics_and_evaluations_filtered_by_task(api, open_round):
    deploy_tiny_ensemble(open_round, members=2)
    tiny_model(TaskFactory(slug="other", kind="nli"))
    rows = api.get("/api/models/", {"task": open_round.task.slug}).json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert [(r["task"], r["version"], r["status"]) for r in rows] == [("sentiment", 1, "deployed"), ("sentiment", 2, "deployed")]
    assert {"metrics", "lineage", "evaluations", "progress"} <= set(rows[0])


def test_hidden_tasks_models_are_not_listed_to_outsiders(api, db):
    tiny_model(TaskFactory(slug="secret", kind="sentiment", visibility="hidden"))
    rows = api.get("/api/models/").json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert rows == []


def test_active_ensemble_of_a_round_lists_its_members_in_order(api, open_round):
    ensemble = deploy_tiny_ensemble(open_round, members=2)
    rows = api.get("/api/ensembles/", {"task": "sentiment", "active": "true"}).json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert [r["id"] for r in rows] == [ensemble.pk]
    assert [m["id"] for m in rows[0]["members"]] == [v.pk for v in ensemble.ordered_members()]
    assert rows[0]["strategy"] == "mean_probs"
