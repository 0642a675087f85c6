"""Owner console pages: start the round pipeline, leaderboard and dashboard. (The task's creation, settings
and import pages are the tasks app's: tests/tasks/test_task_setup_pages.py.)"""

from __future__ import annotations

import pytest


@pytest.fixture
def owner_client(client, personas):
    client.force_login(personas.owner)
    return client


def test_console_start_button_refuses_a_second_run_with_a_message(owner_client, task, settings):
    settings.JOB_RUNNER = ""  # queued after commit, which this test's transaction never does: the run stays pending
    first = owner_client.post("/tasks/sentiment/console/rounds/")
    assert first.status_code == 302 and first["Location"].startswith("/console/jobs/")
    second = owner_client.post("/tasks/sentiment/console/rounds/", follow=True)
    assert second.redirect_chain == [("/tasks/sentiment/console/", 302)]
    assert "is already pending" in second.content.decode()


def test_leaderboard_and_dashboard_pages_render_charts_for_anyone(client, small_task):
    assert client.get("/tasks/small/leaderboard/").status_code == 200
    page = client.get("/tasks/small/dashboard/")
    assert page.status_code == 200 and page.content.decode().count("<svg") == 4


def test_owner_sets_the_dynascore_weights(owner_client, task, client_for):
    response = owner_client.post("/tasks/sentiment/leaderboard/", {
        "performance": 1, "throughput": 0, "memory": 0, "robustness": 0, "fairness": 0})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.typed_config.dynascore.performance == 1 and task.typed_config.dynascore.throughput == 0
