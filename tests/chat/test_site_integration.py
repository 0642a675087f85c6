"""A chat task is a first-class task of the site: its task page and home card lead to its conversation page, its
judging page and its arena (not the create and validate pages); the leaderboard, dashboard and model upload pages
send it to the arena; closing its round closes it without training (with a note in each skipped step); the
classification datasets' API refuses it and points to its own downloads; the model warm-up and the demo models
leave it alone. Nothing crashes for any persona."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client

from chat.models import Conversation, Message
from modelzoo import warmup
from modelzoo.models import Ensemble, ModelVersion
from rounds.models import PipelineRun
from tasks import guidelines, roles
from tasks.models import Round
from tests.factories import RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.JOB_RUNNER = "inline"  # the round's pipeline runs in the request (the unit tests' runner)
    task = TaskFactory(slug="talk", name="Talk to the models", kind="chat")
    classic = TaskFactory(slug="feelings", name="Feelings", kind="sentiment")
    owner, annotator, validator, researcher = (UserFactory(username=n) for n in
                                               ("owner", "annotator", "validator", "researcher"))
    for t in (task, classic):
        t.owners.add(owner)
        RoundFactory(task=t, number=1)
    roles.grant(annotator, roles.ANNOTATOR)
    roles.grant(validator, roles.VALIDATOR)
    roles.grant(researcher, roles.RESEARCHER)
    convo = Conversation.objects.create(round=task.current_round, writer=annotator, scale="slider",
                                        targets=["helpful"], target_settings={})
    Message.objects.create(conversation=convo, turn=0, role="user", text="Hi")
    Message.objects.create(conversation=convo, turn=0, role="assistant", slot=0, target="helpful", text="Hello!",
                           chosen=True)
    people = {"owner": owner, "annotator": annotator, "validator": validator, "researcher": researcher}
    return {"task": task, "classic": classic, **people}


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def hrefs(html: str, within: str | None = None) -> set[str]:
    if within is not None:
        match = re.search(within, html, re.S)
        assert match, f"no {within!r} on the page"
        html = match.group(0)
    return set(re.findall(r'href="([^"]+)"', html))


def card_of(html: str, slug: str) -> str:
    match = re.search(rf'<li class="card task-card" data-task="{slug}">.*?</li>\n', html, re.S)
    assert match, f"no card for {slug}"
    return match.group(0)


@pytest.mark.parametrize("persona", [None, "annotator", "validator", "researcher", "owner"])
def test_the_task_page_links_a_chat_task_to_its_conversations_judging_and_arena(site, persona):
    response = client_for(site.get(persona)).get("/tasks/talk/")
    assert response.status_code == 200
    html = response.content.decode()
    links = hrefs(html)
    assert "/tasks/talk/arena/" in links
    assert not any(link.startswith(("/tasks/talk/create", "/tasks/talk/validate", "/tasks/talk/leaderboard",
                                    "/tasks/talk/dashboard", "/tasks/talk/models/upload")) for link in links)
    assert ("/tasks/talk/chat/" in links) == (persona == "annotator")
    assert ("/tasks/talk/chat/judge/" in links) == (persona in ("validator", "owner"))
    downloads = "/api/tasks/talk/rounds/1/chat/conversations/"
    assert (downloads in links) == (persona in ("researcher", "owner"))
    assert "Fooled the model" not in html  # the classification figures are not a chat task's


def test_a_classification_task_page_keeps_its_links(site):
    links = hrefs(client_for(site["annotator"]).get("/tasks/feelings/").content.decode())
    assert "/tasks/feelings/create/" in links and "/tasks/feelings/leaderboard/" in links
    assert "/tasks/feelings/arena/" not in links


def test_the_home_card_of_a_chat_task_leads_to_its_pages(site):
    html = client_for(site["annotator"]).get("/").content.decode()
    chat_card, classic_card = card_of(html, "talk"), card_of(html, "feelings")
    assert {"/tasks/talk/chat/", "/tasks/talk/arena/", "/tasks/talk/"} <= hrefs(chat_card)
    assert "MER" not in chat_card and "no model yet" not in chat_card
    assert "/tasks/feelings/create/" in hrefs(classic_card)
    judge = card_of(client_for(site["validator"]).get("/").content.decode(), "talk")
    assert "/tasks/talk/chat/judge/" in hrefs(judge)
    signed_out = client_for(None).get("/")
    assert signed_out.status_code == 200 and "/tasks/talk/arena/" in hrefs(card_of(signed_out.content.decode(), "talk"))


@pytest.mark.parametrize("page", ["leaderboard", "dashboard"])
def test_the_leaderboard_and_dashboard_of_a_chat_task_send_to_its_arena(site, page):
    for persona in (None, "researcher", "owner"):
        response = client_for(site.get(persona)).get(f"/tasks/talk/{page}/")
        assert response.status_code == 302 and response["Location"] == "/tasks/talk/arena/"
    assert client_for(None).get(f"/tasks/feelings/{page}/").status_code == 200


def test_the_nav_of_a_chat_task_shows_the_arena(site):
    html = client_for(site["researcher"]).get("/tasks/talk/").content.decode()
    nav = hrefs(html, r'<nav class="rounds-nav".*?</nav>')
    assert "/tasks/talk/arena/" in nav and "/tasks/talk/leaderboard/" not in nav
    assert "/tasks/talk/models/upload/" not in nav


def test_a_model_upload_for_a_chat_task_is_sent_to_the_arena_with_why(site):
    response = client_for(site["researcher"]).get("/tasks/talk/models/upload/", follow=False)
    assert response.status_code == 302 and response["Location"] == "/tasks/talk/arena/"


def test_the_console_says_closing_a_chat_round_trains_nothing(site):
    html = client_for(site["owner"]).get("/tasks/talk/console/rounds/").content.decode()
    assert 'id="will-not-train"' in html and 'id="will-train"' not in html
    assert "retrain_without_new_data" not in html
    assert 'id="will-train"' in client_for(site["owner"]).get("/tasks/feelings/console/rounds/").content.decode()


def test_closing_a_chat_round_closes_it_and_opens_the_next_without_training(site):
    task = site["task"]
    response = client_for(site["owner"]).post("/tasks/talk/console/rounds/", {"description": "second"})
    assert response.status_code == 302
    run = PipelineRun.objects.get(task=task)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.DONE, run.error
    assert task.rounds.get(number=1).status == Round.Status.CLOSED
    assert task.current_round.number == 2
    assert not ModelVersion.objects.filter(task=task).exists() and not Ensemble.objects.filter(round__task=task)
    steps = {s.name: s for s in run.steps.all()}
    for name in ("retrain", "evaluate", "compare", "seed", "deploy"):
        assert steps[name].result.get("skipped") == "generative", name
        assert "language models" in steps[name].log and "nothing is" in steps[name].log
    assert "retrained: round 2 keeps the same targets" in steps["retrain"].log
    job = client_for(site["owner"]).get(f"/console/jobs/{run.pk}/")
    assert job.status_code == 200 and "nothing is retrained" in job.content.decode()
    # the conversations of round 1 stay downloadable
    researcher = client_for(site["researcher"])
    assert researcher.get("/api/tasks/talk/rounds/1/chat/conversations/").status_code == 200


@pytest.mark.parametrize("path", ["/api/tasks/talk/rounds/1/dataset/?version=live",
                                  "/api/tasks/talk/rounds/1/bundle/?version=live",
                                  "/api/tasks/talk/rounds/1/dataset/"])
def test_the_classification_datasets_api_refuses_a_chat_round_and_names_its_downloads(site, path):
    response = client_for(site["owner"]).get(path)
    assert response.status_code == 400
    assert "/api/tasks/talk/rounds/1/chat/<dataset>/" in response.json()["detail"]


def test_publishing_a_chat_round_as_a_snapshot_is_refused_with_the_reason(site):
    api = client_for(site["owner"])
    response = api.post("/api/tasks/talk/rounds/1/snapshots/", {}, content_type="application/json")
    assert response.status_code == 400 and "no snapshots to publish" in response.json()["detail"]
    page = api.post("/tasks/talk/rounds/1/publish/", {"audience": "researchers"}, follow=True)
    assert page.status_code == 200 and "no snapshots to publish" in page.content.decode()


def test_every_page_of_a_chat_task_answers_without_a_crash(site):
    guidelines.publish(site["task"], "Be kind.", by=site["owner"])
    pages = ["/", "/tasks/talk/", "/tasks/talk/console/", "/tasks/talk/console/rounds/", "/tasks/talk/console/health/",
             "/tasks/talk/console/datasets/", "/tasks/talk/console/settings/", "/api/tasks/talk/",
             "/api/tasks/talk/leaderboard/", "/api/tasks/talk/dashboard/", "/api/tasks/talk/datasets/",
             "/api/tasks/talk/rounds/"]
    for persona in (None, "annotator", "validator", "researcher", "owner"):
        for path in pages:
            status = client_for(site.get(persona)).get(path).status_code
            assert status < 500, f"{persona} {path}: {status}"


def test_the_warm_up_and_the_demo_models_leave_a_chat_task_alone(site):
    assert [t.slug for t in warmup.open_tasks()] == ["feelings"]
    assert warmup.warm_process([site["task"]]) == {}  # no head to warm, no opponent
    out = io.StringIO()
    call_command("demo_models", "--tasks", "talk", "--no-progress", stdout=out)
    assert "talk: a chat task answers with the language models of its settings; no encoder models to train" in \
        out.getvalue()
    assert not ModelVersion.objects.filter(task=site["task"]).exists()


def test_the_welcome_page_leads_a_new_account_to_a_chat_tasks_conversations(site):
    newcomer = UserFactory(username="newcomer")
    roles.grant(newcomer, *roles.SIGNUP_ROLES)
    html = client_for(newcomer).get("/accounts/welcome/").content.decode()
    links = hrefs(html, r'<li class="card task-card" data-task="talk">.*?</li>')
    assert "/tasks/talk/chat/" in links and not any("/create/" in link or "/validate/" in link for link in links)
