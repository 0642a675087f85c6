"""The pipeline's seeding step follows the task's seeding settings (set in the console), scores with a weak model
trained on the pool (not the new ensemble), and the round dashboard shows the seeds and the fooling rate on
seeded contexts versus the others."""

from __future__ import annotations

import pytest

from annotation.models import Example
from rounds import seeding
from tasks.models import Context, LabeledItem
from tests.factories import ContextFactory, ExampleFactory, LabeledItemFactory, RoundFactory, TaskFactory, UserFactory
from tests.rounds.conftest import sentence

pytestmark = pytest.mark.django_db


def pool_task(slug: str, seeding_settings: dict, n: int = 40):
    task = TaskFactory(slug=slug, kind="sentiment", config={"labels": ["positive", "negative"],
                                                            "seeding": seeding_settings})
    for i in range(n):
        label = "positive" if i % 2 else "negative"
        LabeledItemFactory(task=task, input={"text": sentence(label, i)}, target=label)
    return task


def test_the_seeding_step_uses_the_tasks_score_k_and_pool_max(small_task):
    task = pool_task("settings", {"score": "el2n", "k_per_label": 3, "pool_max": 16, "min_steps": 40})
    lines: list[str] = []
    rnd = RoundFactory(task=task, number=2, status="draft")
    # no ensemble at all: the scorer is the weak model trained on the pool, not the new round's models
    seeded = seeding.seed_round(task, rnd, [], None, None, lines.append)
    assert seeded == 6 and LabeledItem.objects.filter(seed_round=rnd).count() == 6
    assert LabeledItem.objects.filter(task=task, hardness_score__isnull=False).count() == 16
    log = "\n".join(lines)
    assert "trained on the 16 sampled pool items" in log and "by el2n" in log and "pool_max 16" in log
    assert "3 per label" in log


def test_pipeline_options_override_the_tasks_k_and_pool_max(small_task):
    task = pool_task("override", {"k_per_label": 5, "pool_max": 30})
    rnd = RoundFactory(task=task, number=2, status="draft")
    assert seeding.seed_round(task, rnd, [], 2, 10, lambda _: None) == 4
    assert LabeledItem.objects.filter(task=task, hardness_score__isnull=False).count() == 10


def test_k_zero_in_the_settings_seeds_nothing(small_task):
    task = pool_task("off", {"k_per_label": 0})
    lines: list[str] = []
    assert seeding.seed_round(task, RoundFactory(task=task, number=1), [], None, None, lines.append) == 0
    assert "no hardness seeding" in lines[0] and not LabeledItem.objects.filter(task=task, seed_round__isnull=False).exists()


def test_a_qa_round_gets_seeds_in_the_pipeline(small_task):
    task = TaskFactory(slug="qa-seeds", kind="qa", config={"seeding": {"k_per_label": 2}})
    passage = "The Nile flows north through Egypt and reaches the Mediterranean Sea at a wide delta."
    for question, answer in [("Where does the Nile flow?", "north"), ("Which country?", "Egypt"),
                             ("Which sea does it reach?", "the Mediterranean Sea"), ("What is at its end?", "a wide delta")]:
        LabeledItemFactory(task=task, context={"passage": passage}, input={"question": question},
                           target={"text": answer, "start": passage.index(answer)})
    ContextFactory(task=task, payload={"passage": passage})
    rnd = RoundFactory(task=task, number=1)
    lines: list[str] = []
    assert seeding.seed_round(task, rnd, [], None, None, lines.append) == 2
    assert "2 in all" in lines[-1] and "by loss" in lines[-1]
    assert Context.objects.get(task=task).is_seed


def test_the_owner_sets_seeding_in_the_console_settings_form(client, personas, task):
    from tests.tasks.test_settings_form import form_data

    client.force_login(personas.owner)
    page = client.get("/tasks/sentiment/console/settings/").content.decode()
    for name in ("seeding__score", "seeding__k_per_label", "seeding__pool_max", "seeding__min_steps"):
        assert f'name="{name}"' in page
    response = client.post("/tasks/sentiment/console/settings/",
                           form_data(task, seeding__score="gradnorm", seeding__k_per_label=7, seeding__pool_max=900))
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.typed_config.seeding.score == "gradnorm"
    assert (task.typed_config.seeding.k_per_label, task.typed_config.seeding.pool_max) == (7, 900)
    refused = client.post("/tasks/sentiment/console/settings/", form_data(task, seeding__score="entropy"))
    assert refused.status_code == 400 and 'id="id_seeding__score-errors"' in refused.content.decode()


def test_the_dashboard_shows_the_seeds_scores_and_fooling_on_seeded_contexts_versus_others(client, small_task):
    small_task.rounds.filter(number=1).update(status="closed")
    rnd = RoundFactory(task=small_task, number=2)
    seeding.seed_round(small_task, rnd, [], 2, None, lambda _: None)
    seeded_ctx = ContextFactory(task=small_task, round=rnd, is_seed=True, hardness_score=1.2)
    other_ctx = ContextFactory(task=small_task, round=rnd)
    writer = UserFactory(username="seed-writer")
    for n, fooled in enumerate([True, True, True, False]):  # 3 of 4 fooled on the seeded context
        ExampleFactory(round=rnd, context=seeded_ctx, author=writer, input={"text": f"s {n}"}, fooled=fooled)
    for n, fooled in enumerate([True, False, False, False, False]):  # 1 of 5 on the other one
        ExampleFactory(round=rnd, context=other_ctx, author=writer, input={"text": f"o {n}"}, fooled=fooled)
    ExampleFactory(round=rnd, context=seeded_ctx, author=writer, input={"text": "retracted"}, fooled=True, retracted=True)

    from rounds.dashboard import dashboard

    seeds = dashboard(small_task, 2)["seeds"]
    assert seeds["items_seeded"] == 4 and seeds["contexts_seeded"] == 1
    assert sum(seeds["histogram"]["seeds"]) == 4 and sum(seeds["histogram"]["rest"]) == 20
    assert seeds["fooling"]["seeded"] == {"examples": 4, "fooled": 3, "rate": 0.75}
    assert seeds["fooling"]["other"] == {"examples": 5, "fooled": 1, "rate": 0.2}
    body = client.get("/tasks/small/dashboard/?round=2").content.decode()
    assert 'id="chart-seed-scores"' in body and 'id="chart-seed-fooling"' in body
    row = body.split('data-contexts="seeded"')[1].split("</tr>")[0]
    assert ">4<" in row and ">3<" in row and "75" in row
    api = client.get("/api/tasks/small/dashboard/?round=2")
    assert api.status_code == 200 and api.json()["seeds"]["fooling"]["other"]["rate"] == 0.2
    assert Example.objects.filter(round=rnd, context=seeded_ctx).count() == 5


def test_a_round_without_seeds_has_no_seeding_section(client, small_task):
    from rounds.dashboard import dashboard

    assert dashboard(small_task, 1)["seeds"] is None
    assert 'id="chart-seed-scores"' not in client.get("/tasks/small/dashboard/?round=1").content.decode()


def test_the_close_preview_states_the_tasks_seeding(client, personas, task, open_round, settings):
    settings.ROUNDS_PIPELINE = {"encoder": "tiny"}  # no k or pool_max in the options: the task's settings hold
    task.config = {**task.config, "seeding": {"k_per_label": 4, "pool_max": 3}}
    task.save()
    for i in range(5):
        LabeledItemFactory(task=task, input={"text": f"pool sentence {i}"}, target="positive")
    client.force_login(personas.owner)
    body = client.get("/tasks/sentiment/console/rounds/").content.decode()
    seed_line = body.split('id="will-seed"')[1].split("</li>")[0]
    assert "up to <strong>3</strong> of the 3 unused pool items" in seed_line and "(4 per label)" in seed_line
