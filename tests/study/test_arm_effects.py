"""What a study arm changes for its writer (study.arms): every example carries its arm and language; an arm without
the assistant is refused it (409) and the page does not offer it; an arm without the model in the loop sees "saved"
only on the page and in every API answer while the example is still scored (its owners see the verdict); an arm
with its own ensemble is scored against it, and a batch only gathers examples of the same ensemble. Real tiny
models in process."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from annotation import jobs, scoring
from annotation.models import Example
from modelzoo.models import Ensemble, EnsembleMember
from modelzoo.serving import reset_backends
from modelzoo.testing import deploy_tiny_ensemble, tiny_model
from study.models import Arm, Participant, Study
from tasks import roles
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import ContextFactory, UserFactory

# on_commit must fire for the scoring job to run, so these tests commit for real.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="session")
def arm_models(tmp_path_factory):
    return tmp_path_factory.mktemp("arm-models")


@pytest.fixture(autouse=True)
def _setup(settings, arm_models):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MODEL_STORE = arm_models
    settings.MODEL_BACKEND = "inprocess"
    reset_backends()
    cache.clear()
    yield
    cache.clear()
    reset_backends()


def studied(*arm_fields: dict, config: dict | None = None):
    task, round_, context = make_task("sentiment", slug="armed", config=config)
    Study.objects.create(task=task, enabled=True, seed=1)
    made = [Arm.objects.create(task=task, key=f"a{i}", name=f"Arm {i}", position=i, **fields)
            for i, fields in enumerate(arm_fields)]
    return task, round_, context, made


def writer_in(task, arm: Arm, name: str = "writer"):
    """A writer already assigned to `arm` (the assignment itself is test_arms'); an API client for them."""
    user = UserFactory(username=name)
    roles.grant(user, roles.ANNOTATOR)
    last = Participant.objects.filter(task=task).count()
    Participant.objects.create(task=task, user=user, arm=arm, sequence=last, language="es")
    client = APIClient()
    client.force_authenticate(user)
    return user, client


def submit(client, task, context, text="What a wonderful, slow evening.", **extra):
    return client.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context, input={"text": text}, **extra),
                       format="json")


def owner_of(task):
    owner = UserFactory(username="owner")
    task.owners.add(owner)
    client = APIClient()
    client.force_authenticate(owner)
    return owner, client


# --- every example carries its arm and language -----------------------------------------------------


def test_a_submission_assigns_an_unassigned_writer_and_the_example_carries_arm_and_language():
    task, round_, context, (arm,) = studied({})
    deploy_tiny_ensemble(round_)
    user = UserFactory(username="fresh")
    roles.grant(user, roles.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(user)
    response = client.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json",
                           HTTP_ACCEPT_LANGUAGE="es")
    assert response.status_code == 201, response.content
    example = Example.objects.get(pk=response.data["id"])
    assert example.arm_id == arm.pk and example.language == "es"
    assert Participant.objects.get(user=user).arm_id == arm.pk


def test_outside_a_study_examples_carry_no_arm_but_their_language():
    task, round_, context = make_task("sentiment", slug="plain")
    deploy_tiny_ensemble(round_)
    user = UserFactory(username="plain")
    roles.grant(user, roles.ANNOTATOR)
    client = APIClient()
    client.force_authenticate(user)
    client.cookies["language"] = "ar"
    assert submit(client, task, context).status_code == 201
    example = Example.objects.get()
    assert example.arm_id is None and example.language == "ar"
    assert not Participant.objects.exists()


# --- the assistant off ------------------------------------------------------------------------------


ASSISTED = {"assistant": {"enabled": True, "provider": {"provider": "openai", "endpoint": "down", "timeout_s": 2}}}


def test_an_arm_without_the_assistant_is_refused_it_and_its_page_does_not_offer_it(settings, client):
    settings.JOB_RUNNER = "inline"
    task, round_, context, (off, on) = studied({"assistant": False}, {"assistant": True}, config=ASSISTED)
    user, api = writer_in(task, off)
    refused = api.post(f"/api/tasks/{task.slug}/suggestions/", {"context_id": context.pk, "target": "positive"},
                       format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "assistant_off", refused.content
    assert "without the writing assistant" in refused.json()["detail"]
    client.force_login(user)
    page = client.get(f"/tasks/{task.slug}/create/")
    assert page.status_code == 200 and b'id="assistant"' not in page.content
    assert page.context["config"]["assistant"] is False
    other, _ = writer_in(task, on, "helped")
    client.force_login(other)
    helped = client.get(f"/tasks/{task.slug}/create/")
    assert b'id="assistant"' in helped.content and helped.context["config"]["assistant"] is True


# --- no model in the loop ---------------------------------------------------------------------------


def test_an_arm_without_the_model_sees_saved_only_while_the_example_is_scored(client):
    task, round_, context, (blind,) = studied({"model_in_loop": False})
    deploy_tiny_ensemble(round_)
    user, api = writer_in(task, blind)
    response = submit(api, task, context)
    assert response.status_code == 201, response.content
    data = response.data
    assert data["verdict_hidden"] is True
    assert data["fooled"] is None and data["ensemble_prediction"] is None and data["model_predictions"] == []
    assert data["explanation"] is None and data["model_versions"] == []
    example = Example.objects.get(pk=data["id"])
    assert example.scoring_state == "scored" and example.fooled is not None  # scored all the same: MER later
    assert example.arm_id == blind.pk and example.explanation_state == "unavailable"  # no map nobody sees
    for seen in (api.get(f"/api/examples/{example.pk}/"), api.post(f"/api/examples/{example.pk}/score/")):
        assert seen.status_code == 200 and seen.data["verdict_hidden"] is True and seen.data["fooled"] is None
    mine = api.get(f"/api/me/examples/?task={task.slug}").data["results"][0]
    assert mine["fooled"] is None and mine["model_prediction"] is None and mine["verdict_hidden"] is True
    refused = api.post(f"/api/tasks/{task.slug}/examples/?sandbox=1", sentiment_body(context), format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "no_model_in_loop"
    _, owner = owner_of(task)
    seen = owner.get(f"/api/examples/{example.pk}/").data
    assert seen["verdict_hidden"] is False and seen["fooled"] == example.fooled and len(seen["model_versions"]) == 2
    client.force_login(user)
    page = client.get(f"/tasks/{task.slug}/create/")
    assert page.context["config"]["model_in_loop"] is False
    assert page.context["figures"]["mer"] is None and page.context["figures"]["fooled"] == "—"
    listed = client.get(f"/me/examples/?task={task.slug}").content.decode()  # My examples says saved, no verdict
    assert "saved (no model in the loop in your study arm)" in listed and "not fooled" not in listed


def test_the_writers_figures_leave_out_the_verdicts_in_an_arm_without_the_model():
    task, round_, context, (blind,) = studied({"model_in_loop": False})
    deploy_tiny_ensemble(round_)
    _, api = writer_in(task, blind)
    assert submit(api, task, context).status_code == 201
    figures = api.get("/api/me/stats/", {"task": task.slug})
    assert figures.status_code == 200, figures.content
    assert figures.data["collected"] == 1 and figures.data["fooled"] is None and figures.data["mer"] is None


def test_an_arm_with_the_model_sees_the_verdict_as_usual():
    task, round_, context, (seeing,) = studied({"model_in_loop": True})
    deploy_tiny_ensemble(round_)
    _, api = writer_in(task, seeing)
    data = submit(api, task, context).data
    assert data["verdict_hidden"] is False and isinstance(data["fooled"], bool) and len(data["model_versions"]) == 2


# --- another target ensemble ------------------------------------------------------------------------


def other_ensemble(round_) -> Ensemble:
    """A second ensemble of the round, not the live one: one tiny model of another seed."""
    version = tiny_model(round_.task, seed=5)
    ensemble = Ensemble.objects.create(round=round_, strategy="mean_probs", active=False)
    EnsembleMember.objects.create(ensemble=ensemble, model_version=version, position=0)
    return ensemble


def test_an_arms_ensemble_scores_its_writers_examples():
    task, round_, context, _ = studied()
    live = deploy_tiny_ensemble(round_)
    own = other_ensemble(round_)
    _, owner = owner_of(task)
    made = owner.post(f"/api/tasks/{task.slug}/arms/", {"key": "target", "name": "Other target", "ensemble": own.pk},
                      format="json")
    assert made.status_code == 201, made.content
    plain = owner.post(f"/api/tasks/{task.slug}/arms/", {"key": "live", "name": "Live"}, format="json")
    _, targeted = writer_in(task, Arm.objects.get(pk=made.data["id"]), "targeted")
    _, usual = writer_in(task, Arm.objects.get(pk=plain.data["id"]), "usual")
    first = submit(targeted, task, context).data
    second = submit(usual, task, context, text="A second, different sentence.").data
    own_members = [m.model_version_id for m in own.memberships.all()]
    assert first["model_versions"] == own_members and len(first["model_predictions"]) == 1
    assert second["model_versions"] == [v.pk for v in live.ordered_members()]
    assert Example.objects.get(pk=first["id"]).model_versions == own_members  # the verdict records who answered


def test_a_batch_gathers_only_examples_of_the_same_ensemble(monkeypatch):
    task, round_, context, _ = studied()
    deploy_tiny_ensemble(round_)
    own = other_ensemble(round_)
    targeted = Arm.objects.create(task=task, key="t", name="T", ensemble=own)
    usual = Arm.objects.create(task=task, key="u", name="U")
    monkeypatch.setattr(jobs, "enqueue_scoring", lambda *args, **kwargs: None)  # left queued: the batch's to take
    ids = {}
    for name, arm in (("t1", targeted), ("u1", usual), ("t2", targeted), ("u2", usual)):
        _, api = writer_in(task, arm, name)
        shown = ContextFactory(task=task, round=round_, payload={"prompt": f"About {name}."})
        response = submit(api, task, shown, text=f"Writer {name} wrote this one.")
        assert response.status_code in (201, 202), response.content
        ids[name] = response.data["id"]
    first = Example.objects.get(pk=ids["t1"])
    taken = scoring.gathered(first, 10)
    assert [e.pk for e, _ in taken] == [ids["t2"]]
    scoring.unmark([e.pk for e, _ in taken])
    other = Example.objects.get(pk=ids["u1"])
    assert [e.pk for e, _ in scoring.gathered(other, 10)] == [ids["u2"]]


@pytest.mark.browser
def test_the_write_page_of_an_arm_without_the_model_says_saved_only(browser):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    task, round_, _, (blind,) = studied({"model_in_loop": False})
    deploy_tiny_ensemble(round_)
    user, _ = writer_in(task, blind)
    wait = WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,))
    browser.login(user)
    browser.go(f"/tasks/{task.slug}/create/")
    wait.until(lambda b: b.find_element(By.ID, "context").get_attribute("data-context-id"))
    assert not browser.find_element(By.ID, "sandbox").is_displayed()  # no verdicts to try out
    assert not browser.find_element(By.ID, "my-fooled").is_displayed()
    assert not browser.find_elements(By.ID, "assistant")
    browser.find_element(By.ID, "input-text").send_keys("The waiter was slow, and I loved every minute.")
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=positive]").click()
    browser.find_element(By.ID, "submit").click()
    wait.until(lambda b: "Saved" in b.find_element(By.ID, "verdict-state").text)
    assert "fooled" not in browser.find_element(By.ID, "verdict-state").text
    assert not browser.find_element(By.ID, "verdict-body").is_displayed()
    wait.until(lambda b: Example.objects.filter(scoring_state="scored").exists())  # scored all the same
    assert Example.objects.get().arm_id == blind.pk


def test_a_study_submission_stays_within_the_writers_query_budget(monkeypatch):
    """The arm's lookup is the access cache's (study.arms.standing): once warm, a submission in a study costs what
    one outside a study costs (tests/annotation/test_query_budget.py: ≤ 6 with an idempotency key)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts import tokens

    task, round_, context, (arm,) = studied({})
    deploy_tiny_ensemble(round_)
    user, _ = writer_in(task, arm)
    _, raw = tokens.issue(user, "budget")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    monkeypatch.setattr(jobs, "enqueue_scoring", lambda *args, **kwargs: None)  # a worker's queries, not the web's
    assert submit(client, task, context, "A first, warming sentence.").status_code == 202  # fills the cache
    with CaptureQueriesContext(connection) as captured:
        response = submit(client, task, context, "The soup was cold and late.", idempotency_key="k-1")
    queries = [q["sql"] for q in captured.captured_queries
               if not q["sql"].upper().startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT"))]
    assert response.status_code == 202 and Example.objects.get(pk=response.data["id"]).arm_id == arm.pk
    assert len(queries) <= 6, "\n".join(q[:150] for q in queries)


def test_an_arms_own_ensemble_is_served_again_when_the_model_server_starts():
    """`manage.py torchserve_register` (modelzoo.registration.register_open_rounds) registers the open rounds'
    ensembles and every active arm's own one, each once; an inactive arm's ensemble, or a study switched off, not."""
    from modelzoo import registration
    from modelzoo.serving import get_backend

    task, round_, _context, (plain, own_arm, idle_arm) = studied({}, {}, {"active": False})
    live = deploy_tiny_ensemble(round_)
    own, idle = other_ensemble(round_), other_ensemble(round_)
    Arm.objects.filter(pk=own_arm.pk).update(ensemble=own)
    Arm.objects.filter(pk=idle_arm.pk).update(ensemble=idle)
    assert {e.pk for e in registration.served_ensembles()} == {live.pk, own.pk}
    done, failed = registration.register_open_rounds(get_backend())
    assert failed == [] and len(done) == 2
    Study.objects.filter(task=task).update(enabled=False)
    assert {e.pk for e in registration.served_ensembles()} == {live.pk}
