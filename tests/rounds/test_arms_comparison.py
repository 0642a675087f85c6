"""The arms comparison (rounds.arms): per-arm figures on a small fixture with known counts, withdrawn people left
out, the API (its schema shape and a 400 for a bad round), the dashboard section and the management command."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.models import Example
from rounds import arm_stats, arms
from rounds.arm_serializers import ArmsComparisonSerializer
from study.models import Arm, Participant
from tests.factories import ExampleFactory, RoundFactory, UserFactory

pytestmark = pytest.mark.django_db
V, R, F, U = (Example.Consensus.VERIFIED, Example.Consensus.REJECTED, Example.Consensus.FLAGGED,
              Example.Consensus.UNVALIDATED)


@pytest.fixture
def study(open_round):
    """Arm `loop`: 10 examples by two writers, 6 fooled (3 verified), decided 5 (3 verified, 1 rejected, 1 flagged),
    times 10–19 s, and one retracted example (not counted). Arm `standard`: 10 examples by two writers, 1 fooled,
    decided 4 (2 verified, 2 rejected), times 30–39 s. A third writer in `loop` withdrew: 2 examples left out."""
    task = open_round.task
    loop = Arm.objects.create(task=task, key="loop", name="Model in the loop", position=0)
    standard = Arm.objects.create(task=task, key="standard", name="Standard", model_in_loop=False, position=1)
    people = [UserFactory(username=f"p{i}") for i in range(5)]
    for seq, (user, arm) in enumerate(zip(people, [loop, loop, standard, standard, loop], strict=True)):
        Participant.objects.create(task=task, user=user, arm=arm, sequence=seq,
                                   withdrawn_at=timezone.now() if seq == 4 else None)

    def make(arm, author, n, fooled, consensus, seconds, **extra):
        return ExampleFactory(round=open_round, arm=arm, author=author, fooled=fooled, consensus=consensus,
                              time_spent_ms=int(seconds * 1000), input={"text": f"{arm.key} {n}"}, **extra)

    loop_rows = [(True, V), (True, V), (True, V), (True, R), (True, U), (True, U), (False, F), (False, U), (False, U),
                 (False, U)]
    for n, (fooled, consensus) in enumerate(loop_rows):
        make(loop, people[n % 2], n, fooled, consensus, 10 + n)
    make(loop, people[0], 99, True, V, 5, retracted=True)
    standard_rows = [(True, U), (False, V), (False, V), (False, R), (False, R)] + [(False, U)] * 5
    for n, (fooled, consensus) in enumerate(standard_rows):
        make(standard, people[2 + n % 2], n, fooled, consensus, 30 + n)
    make(loop, people[4], 200, True, V, 1)
    make(loop, people[4], 201, True, V, 1)
    return {"task": task, "loop": loop, "standard": standard, "people": people}


def test_per_arm_figures_on_known_counts(study):
    data = arms.comparison(study["task"])
    loop, standard = data["arms"]
    assert (loop["key"], loop["participants"], loop["writers"], loop["examples"]) == ("loop", 2, 2, 10)
    assert loop["mer"]["value"] == 0.6 and loop["vmer"]["value"] == 0.3
    assert (loop["rejected"], loop["decided"], loop["rejection_rate"]["value"]) == (1, 5, 0.2)
    assert (loop["time"]["n"], loop["time"]["median"], loop["time"]["mean"]) == (10, 14.5, 14.5)
    assert loop["time"]["low"] <= 14.5 <= loop["time"]["high"]
    assert (standard["participants"], standard["examples"], standard["mer"]["value"]) == (2, 10, 0.1)
    assert standard["vmer"]["value"] == 0.0 and standard["rejection_rate"]["value"] == 0.5
    assert standard["time"]["median"] == 34.5
    assert loop["mer"]["low"] == arm_stats.share(6, 10).low  # the Wilson interval


def test_tests_between_arms_are_named_and_holm_adjusted(study):
    tests = {t["metric"]: t for t in arms.comparison(study["task"])["tests"]}
    assert tests["mer"]["test"] == "Fisher's exact test"
    from scipy.stats import fisher_exact

    assert tests["mer"]["p_value"] == pytest.approx(fisher_exact([[6, 4], [1, 9]]).pvalue)
    assert tests["vmer"]["p_value"] == pytest.approx(fisher_exact([[3, 7], [0, 10]]).pvalue)
    assert tests["rejection_rate"]["p_value"] is None  # 4 decided in `standard`: fewer than 5
    assert tests["rejection_rate"]["reason"] == "too few examples to compare"
    assert tests["time"]["test"] == "Mann–Whitney U test" and tests["time"]["p_value"] < 0.001
    ps = [tests[m]["p_value"] for m in ("mer", "vmer", "time")]
    assert [tests[m]["p_holm"] for m in ("mer", "vmer", "time")] == arm_stats.holm(ps)


def test_withdrawn_people_are_left_out_and_counted(study):
    data = arms.comparison(study["task"])
    assert data["left_out"] == {"examples": 2, "people": 1}
    assert data["arms"][0]["examples"] == 10  # without the withdrawn writer's two
    Participant.objects.filter(user=study["people"][4]).update(withdrawn_at=None)
    again = arms.comparison(study["task"])
    assert again["left_out"] == {"examples": 0, "people": 0} and again["arms"][0]["examples"] == 12


def test_one_round_and_a_bad_round(study, open_round):
    later = RoundFactory(task=study["task"], number=2, status="closed")
    ExampleFactory(round=later, arm=study["standard"], fooled=True)
    assert arms.comparison(study["task"], 1)["arms"][1]["examples"] == 10
    assert arms.comparison(study["task"], 2)["arms"][1]["examples"] == 1
    assert arms.comparison(study["task"])["arms"][1]["examples"] == 11
    with pytest.raises(arms.InvalidInput, match="has no round 7; its rounds: 1, 2"):
        arms.comparison(study["task"], 7)


def test_a_task_without_arms(open_round):
    data = arms.comparison(open_round.task)
    assert data["arms"] == [] and all(t["p_value"] is None for t in data["tests"])
    assert "no study arms" in arms.as_text(data)


def test_the_api_answers_researchers_in_the_documented_shape(study, client_for):
    response = client_for("researcher").get("/api/tasks/sentiment/arms/comparison/?round=1")
    assert response.status_code == 200
    body = response.json()
    assert ArmsComparisonSerializer(data=body).is_valid(), ArmsComparisonSerializer(data=body).errors
    assert body["round"] == 1 and [a["key"] for a in body["arms"]] == ["loop", "standard"]


@pytest.mark.parametrize("value", ["x", "-1", "1.5", "²", "99"])
def test_the_api_refuses_a_bad_round_with_400(study, client_for, value):
    response = client_for("owner").get("/api/tasks/sentiment/arms/comparison/", {"round": value})
    assert response.status_code == 400
    assert "round" in json.dumps(response.json())


def test_the_api_is_for_researchers_owners_and_admins(study, client_for):
    assert client_for("annotator").get("/api/tasks/sentiment/arms/comparison/").status_code == 403
    assert client_for("anonymous").get("/api/tasks/sentiment/arms/comparison/").status_code in (401, 403)
    assert client_for("admin").get("/api/tasks/sentiment/arms/comparison/").status_code == 200


def test_the_dashboard_shows_the_section_to_researchers_only(study, personas, client):
    client.force_login(personas.owner)
    page = client.get("/tasks/sentiment/dashboard/").content.decode()
    assert 'id="arms-comparison"' in page and 'data-arm="loop"' in page and "Fisher&#x27;s exact test" in page
    assert "too few examples to compare" in page and "2 example(s) of 1 person who withdrew consent" in page
    client.force_login(personas.annotator)
    assert 'id="arms-comparison"' not in client.get("/tasks/sentiment/dashboard/").content.decode()


def test_the_command_prints_the_table_and_json(study):
    out = StringIO()
    call_command("compare_arms", "sentiment", stdout=out)
    text = out.getvalue()
    assert "loop" in text and "60.0 % (" in text and "Fisher's exact test" in text
    assert "Left out: 2 example(s) of 1 person(s) who withdrew consent." in text
    out = StringIO()
    call_command("compare_arms", "sentiment", "--round", "1", "--json", stdout=out)
    assert json.loads(out.getvalue())["round"] == 1
    with pytest.raises(CommandError, match="no round 5"):
        call_command("compare_arms", "sentiment", "--round", "5")
    with pytest.raises(CommandError, match="no task"):
        call_command("compare_arms", "nope")
