import pytest

LINKS = {
    "Write examples": {"annotator"},
    "Validate": {"validator", "expert", "owner", "admin"},
    "Expert queue": {"expert", "owner", "admin"},
    "Console": {"owner", "admin"},
    "Upload a model": {"researcher", "owner", "admin"},
}


@pytest.mark.parametrize("persona", ["owner", "annotator", "validator", "expert", "researcher", "outsider", "admin", "anonymous"])
def test_task_page_offers_each_persona_its_own_actions(client, personas, task, open_round, persona):
    user = personas.get(persona)
    if user:
        client.force_login(user)
    response = client.get(f"/tasks/{task.slug}/")
    assert response.status_code == 200
    actions = response.content.decode().split('id="task-actions"')[1].split("</nav>")[0]
    for label, allowed in LINKS.items():
        assert (f">{label}<" in actions) is (persona in allowed), label
    pages = response.content.decode().split('aria-label="task pages"')[1].split("</nav>")[0]
    assert ">Leaderboard<" in pages and ">Dashboard<" in pages  # for everyone, in the task's own navigation


def test_task_page_shows_figures_and_downloads(client, task, open_round):
    body = client.get(f"/tasks/{task.slug}/").content.decode()
    assert 'id="validation-figures"' in body
    assert "Downloads" in body or "downloads" in body


def test_hidden_task_page_is_404_for_outsiders(client, personas, task):
    task.visibility = "hidden"
    task.save()
    client.force_login(personas.outsider)
    assert client.get(f"/tasks/{task.slug}/").status_code == 404
    client.force_login(personas.owner)
    assert client.get(f"/tasks/{task.slug}/").status_code == 200
