"""The Dynaboard (issue 43, item 1): each viewer's weights in the URL, AMRS normalisation as Ma et al. (2021) and
mlcommons/dynabench `calculate_dynascore` define it, the ranking's change shown, prediction-file rows ranked over
what predictions allow, and robustness and fairness counted once measured.

The constructed case follows the paper's example: with the default weights the accurate big model leads; with
weight on throughput and memory the small fast model (FastText's place) does."""

from __future__ import annotations

import pytest

from modelzoo.models import Evaluation, ModelMeasurement, ModelVersion
from rounds import datasets, dynaboard
from rounds.leaderboard import leaderboard
from rounds.models import PredictionScore, PredictionUpload
from tests.factories import TaskFactory, UserFactory
from tests.rounds.test_test_sets import labelled_items

pytestmark = pytest.mark.django_db

HELD_OUT = datasets.BASE_HELD_OUT
# name: (accuracy on the 120-row held-out set, examples per second, MB)
MODELS = {"big": (0.90, 20.0, 1500.0), "mid": (0.86, 100.0, 500.0), "fast": (0.80, 2000.0, 50.0)}
SPEED_WEIGHTS = "?performance=1&throughput=5&memory=5&robustness=0&fairness=0"


@pytest.fixture
def task():
    board_task = TaskFactory(slug="board", kind="sentiment")
    labelled_items(board_task, "heldout", 120, "sst2-train-sample")
    for version, (name, (accuracy, speed, memory)) in enumerate(MODELS.items(), start=1):
        model = ModelVersion.objects.create(task=board_task, version=version, name=name, head="classification",
                                            status="ready")
        Evaluation.objects.create(model_version=model, dataset=HELD_OUT, size=120, metrics={"accuracy": accuracy})
        ModelMeasurement.objects.create(model_version=model, examples=120, seconds=1.0, throughput=speed,
                                        memory_mb=memory)
    return board_task


def names(board):
    return [r["name"] for r in board["rows"]]


def by_name(board):
    return {r["name"]: r for r in board["rows"]}


def add_predictions(task_, accuracy: float, name: str = "my predictions") -> PredictionUpload:
    upload = PredictionUpload.objects.create(task=task_, uploaded_by=UserFactory(username="predictor"), name=name,
                                             status=PredictionUpload.Status.SCORED, rows=120, accepted=120)
    PredictionScore.objects.create(upload=upload, dataset=HELD_OUT, size=120, covered=120,
                                   status=PredictionScore.Status.SCORED, metrics={"accuracy": accuracy})
    return upload


def test_default_weights_put_the_accurate_big_model_first_and_speed_weights_the_small_fast_one(client, task):
    owner = client.get("/api/tasks/board/leaderboard/").json()
    assert names(owner) == ["big", "mid", "fast"]
    assert owner["weights"] == {"performance": 4, "throughput": 1, "memory": 1, "robustness": 0, "fairness": 0}
    assert owner["viewer_weights"] is None

    viewer = client.get(f"/api/tasks/board/leaderboard/{SPEED_WEIGHTS}").json()
    assert names(viewer) == ["fast", "mid", "big"]
    rows = by_name(viewer)
    assert (rows["fast"]["rank"], rows["fast"]["owner_rank"], rows["fast"]["moved"]) == (1, 3, 2)
    assert (rows["big"]["rank"], rows["big"]["owner_rank"], rows["big"]["moved"]) == (3, 1, -2)
    assert rows["mid"]["moved"] == 0

    page = client.get(f"/tasks/board/leaderboard/{SPEED_WEIGHTS}").content.decode()
    assert "Ranked by Dynascore\n  with <strong>your weights</strong>" in page
    assert "▲ up 2" in page and "▼ down 2" in page and "Owner's #" in page
    default_page = client.get("/tasks/board/leaderboard/").content.decode()
    assert "with the owner's weights" in default_page and "Owner's #" not in default_page


def test_amrs_and_the_dynascore_match_the_figures_worked_by_hand(client, task):
    # Sorted by performance: fast 80, mid 86, big 90 (points). Throughput gives up 1900 ex/s over 6 points, then 80
    # over 4: AMRS = (1900/6 + 80/4) / 2. Memory left free below the largest model (1500 MB): 1450, 1000, 0; it gives
    # up 450 MB over 6 points, then 1000 over 4: AMRS = (450/6 + 1000/4) / 2 = 162.5.
    amrs_speed = (1900 / 6 + 80 / 4) / 2
    amrs_memory = (450 / 6 + 1000 / 4) / 2
    board = leaderboard(task)
    assert board["amrs"]["throughput"] == pytest.approx(amrs_speed, abs=1e-5)
    assert board["amrs"]["memory"] == pytest.approx(162.5)
    assert board["memory_offset"] == 1500
    expected = {"big": (4 * 90 + 20 / amrs_speed + 0 / amrs_memory) / 6,
                "mid": (4 * 86 + 100 / amrs_speed + 1000 / amrs_memory) / 6,
                "fast": (4 * 80 + 2000 / amrs_speed + 1450 / amrs_memory) / 6}
    rows = by_name(board)
    for name, score in expected.items():
        assert rows[name]["dynascore"] == round(score, 2)
    assert [round(s, 2) for s in expected.values()] == [60.02, 58.46, 56.80]

    speed = by_name(client.get(f"/api/tasks/board/leaderboard/{SPEED_WEIGHTS}").json())
    assert speed["fast"]["dynascore"] == round((80 + 5 * 2000 / amrs_speed + 5 * 1450 / amrs_memory) / 11, 2)
    assert speed["big"]["owner_dynascore"] == round(expected["big"], 2)

    page = client.get("/tasks/board/leaderboard/").content.decode()
    assert f"One point of performance is worth {amrs_speed:.2f} examples per second of throughput." in page
    assert "One point of performance is worth 162.5 MB of memory." in page


def test_only_the_ratios_of_the_weights_matter_and_unnamed_weights_stay_the_owners(client, task):
    doubled = client.get("/api/tasks/board/leaderboard/?performance=2&throughput=10&memory=10").json()
    assert names(doubled) == ["fast", "mid", "big"]
    assert doubled["weights"] == {"performance": 2, "throughput": 10, "memory": 10, "robustness": 0, "fairness": 0}
    only_speed = client.get("/api/tasks/board/leaderboard/?throughput=100").json()
    assert only_speed["weights"]["performance"] == 4 and names(only_speed)[0] == "fast"


@pytest.mark.parametrize(("query", "field", "message"), [
    ("throughput=fast", "throughput", "must be a number from 0 to 1000, not 'fast'"),
    ("memory=-1", "memory", "must be a number from 0 to 1000, not '-1'"),
    ("performance=nan", "performance", "must be a number from 0 to 1000, not 'nan'"),
    ("fairness=1e9", "fairness", "must be a number from 0 to 1000, not '1e9'"),
    ("performance=0&throughput=0&memory=0", "weights", "at least one weight must be above 0"),
])
def test_bad_weights_are_refused_with_what_was_wrong_and_the_page_keeps_the_owners(client, task, query, field,
                                                                                  message):
    api = client.get(f"/api/tasks/board/leaderboard/?{query}")
    assert api.status_code == 400 and api.json()["errors"][field] == [message]
    assert api.json()["detail"] == f"{field}: {message}"
    page = client.get(f"/tasks/board/leaderboard/?{query}")
    assert page.status_code == 400
    text = page.content.decode()
    assert "These weights could not be used" in text and f"{field}: {message}".replace("'", "&#x27;") in text
    assert "with the owner's weights" in text and page.context["board"]["rows"][0]["name"] == "big"


def test_a_view_is_shared_by_its_address_and_reset_to_the_owners(client, task):
    response = client.get(f"/tasks/board/leaderboard/{SPEED_WEIGHTS}")
    share = response.context["share_url"]
    assert share == ("http://testserver/tasks/board/leaderboard/"
                     "?performance=1&throughput=5&memory=5&robustness=0&fairness=0")
    text = response.content.decode()
    assert f'href="{share.replace("&", "&amp;")}" id="share-view"' in text
    assert 'href="/tasks/board/leaderboard/" id="reset-view"' in text
    shared = client.get(share.removeprefix("http://testserver"))
    assert [r["name"] for r in shared.context["board"]["rows"]] == ["fast", "mid", "big"]
    assert 'id="view-throughput" name="throughput" value="5"' in text


def test_the_owners_saved_weights_are_where_every_viewer_starts(task):
    task.config = {**task.config, "dynascore": {"performance": 1, "throughput": 5, "memory": 5, "robustness": 0,
                                                "fairness": 0}}
    task.save()
    board = leaderboard(task)
    assert names(board) == ["fast", "mid", "big"] and all(r["moved"] == 0 for r in board["rows"])


def test_prediction_rows_are_ranked_over_what_predictions_allow_and_marked(client, task):
    upload = add_predictions(task, 0.85)
    board = client.get("/api/tasks/board/leaderboard/").json()
    row = next(r for r in board["rows"] if r["predictions_only"])
    assert row["id"] == f"p{upload.pk}" and row["throughput"] is None and row["memory_mb"] is None
    assert row["lacks"] == ["throughput", "memory"] and row["over"] == ["performance"]
    # By hand: its performance's distance from the listed mean, plus the board's level (the weighted mean of each
    # figure's mean term); the models' AMRS is unchanged (the row has no throughput or memory to compare).
    amrs_speed, amrs_memory = (1900 / 6 + 80 / 4) / 2, 162.5
    mean_perf = (90 + 86 + 80 + 85) / 4
    level = (4 * mean_perf + (20 + 100 + 2000) / 3 / amrs_speed + (0 + 1000 + 1450) / 3 / amrs_memory) / 6
    assert row["dynascore"] == round(85 - mean_perf + level, 2)
    assert names(board) == ["big", "mid", "my predictions", "fast"]  # 85 % sits between 86 % and 80 %
    # A full row's Dynascore is still Dynabench's weighted sum: the prediction row changes no model's figure.
    assert by_name(board)["big"]["dynascore"] == 60.02

    only_speed = client.get("/api/tasks/board/leaderboard/?performance=0&throughput=1&memory=0").json()
    row = next(r for r in only_speed["rows"] if r["predictions_only"])
    assert row["dynascore"] is None and row["rank"] is None and only_speed["rows"][-1] is row

    page = client.get("/tasks/board/leaderboard/").content.decode()
    assert "predictions only</span>" in page and "without throughput, memory" in page
    assert "predictions allow accuracy and the task's measures, not throughput or memory" in page


def test_robustness_and_fairness_count_once_measured_and_a_missing_one_is_said(client, task):
    page = client.get("/tasks/board/leaderboard/?robustness=4").content.decode()
    assert "Robustness is left out of every Dynascore: no listed model has it — its weight counts for nothing." in page
    assert "A missing figure (— in the table) is not counted as 0 nor guessed." in page

    # robust shares: fast keeps 95 % of its predictions under perturbation, mid 70 %, big unmeasured
    for name, robustness in (("fast", 0.95), ("mid", 0.70)):
        Evaluation.objects.filter(model_version__name=name).update(metrics={
            "accuracy": MODELS[name][0], "robustness": robustness, "fairness": 0.9,
            "intervals": {"robustness": [robustness - 0.04, robustness + 0.03]}})
    query = "/api/tasks/board/leaderboard/?performance=1&throughput=0&memory=0&robustness=4"
    board = client.get(query).json()
    rows = by_name(board)
    assert rows["fast"]["robustness"] == 0.95 and rows["fast"]["robustness_interval"] == [0.91, 0.98]
    assert rows["big"]["robustness"] is None and rows["big"]["lacks"] == ["robustness"]
    # AMRS of robustness over the two rows that have it: 25 points given up over 6 points of performance.
    rate = 25 / 6
    assert board["amrs"]["robustness"] == pytest.approx(rate, abs=1e-5)
    mean_perf, mean_robust = (80 + 86 + 90) / 3, (95 + 70) / 2 / rate
    level = (mean_perf + 4 * mean_robust) / 5
    assert rows["fast"]["dynascore"] == round((80 + 4 * 95 / rate) / 5, 2)  # a full row: the weighted sum
    # big has no robustness figure: its Dynascore is over its performance, from the mean, plus the board's level
    assert rows["big"]["dynascore"] == round(90 - mean_perf + level, 2)
    assert names(board) == ["big", "fast", "mid"]
    # fairness is the same for both measured models: it cannot be traded against performance
    assert board["left_out"]["fairness"] == "it is the same for every listed model that has it"
    page = client.get(query.removeprefix("/api")).content.decode()
    assert "without robustness" in page and "95.0%<br><small class=\"interval\" title=\"95 % interval\">91.0%–98.0%</small>" in page

    # once big is measured (50 %: the least robust), the robust small model leads
    Evaluation.objects.filter(model_version__name="big").update(metrics={"accuracy": 0.9, "robustness": 0.5})
    rows = by_name(client.get(query).json())
    rate = (25 / 6 + 20 / 4) / 2
    assert rows["big"]["lacks"] == [] and rows["big"]["dynascore"] == round((90 + 4 * 50 / rate) / 5, 2)
    assert [rows[n]["rank"] for n in ("fast", "mid", "big")] == [1, 2, 3]
    assert rows["fast"]["dynascore"] == round((80 + 4 * 95 / rate) / 5, 2) == 32.58

    assert "without robustness" not in client.get(query.removeprefix("/api")).content.decode()


def test_the_amrs_follows_dynabench_on_ties_and_single_models():
    # a tie in performance (delta under the cutoff) gives no rate; the next pair is taken from the tied row
    rows = [{"performance": 80.0, "throughput": 100.0}, {"performance": 80.0, "throughput": 50.0},
            {"performance": 90.0, "throughput": 10.0}]
    result = dynaboard.dynascores(rows, {"performance": 1, "throughput": 1})
    assert result["amrs"]["throughput"] == pytest.approx(40 / 10)
    one = dynaboard.dynascores([{"performance": 75.0, "throughput": 3.0, "memory": 10.0}], {"performance": 4,
                                                                                             "throughput": 1})
    assert one["scores"] == [75.0] and set(one["left_out"]) == {"throughput", "memory", "robustness", "fairness"}
    with pytest.raises(dynaboard.WeightsError) as error:
        dynaboard.viewer_weights({"memory": "inf", "throughput": ""}, {"performance": 4})
    assert set(error.value.errors) == {"memory", "throughput"}
    assert dynaboard.viewer_weights({"page": "2"}, {"performance": 4}) is None
