"""Each persona walks its main flow in Chromium, at 1400 px and at 420 px, on the demo as `make run` loads it
(with tiny models in the loop). A walk fails on a console error, a page wider than the window, or a request
to another site; it writes a picture of the persona's main page at both widths to var/screenshots/ (the
gallery in docs/gallery/ is a copy of a run of these)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from annotation import services as annotation
from tasks.models import Task
from tests.site.walks import WIDTHS, Walk, start_chromium, stop_chromium

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DEMO_PASSWORD = "dynabench-demo"
SHOTS = Path(django_settings.VAR_DIR) / "screenshots"


@pytest.fixture(scope="module")
def walker():
    driver = start_chromium()
    yield driver
    stop_chromium(driver)


@pytest.fixture(scope="module")
def walk_models(tmp_path_factory):
    return tmp_path_factory.mktemp("walk-models")


@pytest.fixture
def demo(transactional_db, settings, walk_models):
    """The demo of `make run`: its tasks, accounts, guidelines and quizzes; a tiny ensemble in each open round
    (scored on the test sets, as a deployed ensemble is), and a few examples by the demo annotator."""
    from modelzoo.serving import reset_backends
    from modelzoo.testing import deploy_tiny_ensemble
    from rounds.evaluation import evaluate_round_ensemble

    settings.MODEL_STORE, settings.MODEL_BACKEND = walk_models, "inprocess"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    reset_backends()
    cache.clear()  # sign-up and submission throttles start from zero
    call_command("load_demo", stdout=io.StringIO())
    for task in (t for t in Task.objects.all() if not t.kind_impl.generative):  # chat: language models answer
        deploy_tiny_ensemble(task.current_round, members=2)
        evaluate_round_ensemble(task.current_round, log=lambda _m: None)
    write_examples(Task.objects.get(slug="sentiment"), User.objects.get(username="annotator"))
    yield
    reset_backends()


def write_examples(task: Task, writer: User) -> None:
    texts = [("The soup was cold, yet I would go back tomorrow.", "positive"),
             ("Nothing about the evening worked, not even the lights.", "negative"),
             ("It was a restaurant. We ate there.", "neutral"),
             ("Great, another hour waiting for a table. Just great.", "negative")]
    for n, (text, label) in enumerate(texts):
        context = annotation.next_context(task, task.current_round)
        annotation.submit(writer, task, annotation.Submission(
            input={"text": text}, target=label, context_id=context.pk if context else None, idempotency_key=f"walk-{n}"))


# --- the walks -------------------------------------------------------------------------------------


def log_in(walk: Walk, username: str) -> None:
    walk.go("/accounts/login/", ready="#login-form")
    walk.find("#id_username").send_keys(username)
    walk.find("#id_password").send_keys(DEMO_PASSWORD)
    walk.find("#login-submit").click()
    walk.until(lambda d: "/accounts/login/" not in d.current_url and username in walk.text(".topbar"))
    walk.settle()
    walk.check("after logging in")


def anonymous(walk: Walk) -> None:
    walk.go("/", ready="#task-list")
    assert "MER" in walk.text("#glossary") and walk.find("#cta-signup")
    walk.shot("anonymous-home")
    walk.go("/tasks/nli/", ready="#rounds")
    walk.go("/tasks/sentiment/leaderboard/", ready="#leaderboard")
    assert "not evaluated" not in walk.text("#leaderboard")  # the in-loop models are scored at deployment
    walk.shot("anonymous-leaderboard")
    walk.go("/tasks/sentiment/dashboard/", ready=".charts svg.chart")
    walk.shot("anonymous-dashboard")
    walk.go("/api/docs/", ready=".swagger-ui .info")
    walk.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock"))
    walk.check("the Swagger UI, rendered", overflow=False)  # a third-party page: its own layout
    walk.go("/api/redoc/", ready="#redoc-container .api-content")
    walk.check("ReDoc, rendered", overflow=False)
    walk.go("/no-such-page/", ready="#error-heading", status=404)
    assert "does not exist" in walk.text("#error-heading") and walk.find(".topbar")


def new_signup(walk: Walk) -> None:
    walk.go("/accounts/signup/", ready="#signup-form")
    name = f"newcomer{walk.width}"
    walk.find("#id_username").send_keys(name)
    walk.find("#id_password1").send_keys("a-long-passphrase-42")
    walk.find("#id_password2").send_keys("a-long-passphrase-42")
    walk.find("#signup-submit").click()
    walk.until(lambda d: "/accounts/welcome/" in d.current_url)
    walk.settle("#next-steps")
    walk.check("the welcome page")
    assert name in walk.text(".topbar") and walk.driver.find_elements(By.CSS_SELECTOR, "[data-quiz=validator]")
    walk.shot("new-signup-welcome")
    walk.find("#welcome-tasks [data-task=sentiment] a[href$='/guidelines/']").click()
    walk.settle("#guidelines-ack")
    walk.check("the guidelines")
    walk.find("#guidelines-ack").click()
    walk.settle("#guidelines-done, .messages")
    walk.check("the guidelines, read")
    walk.go("/tasks/sentiment/quiz/validator/", ready="#quiz-form")
    walk.go("/tasks/sentiment/create/", ready="#create-form")
    assert walk.find("#input-text").is_enabled()  # guidelines read: the form does not wait for them
    walk.go(f"/people/{name}/", ready="#profile-badges")


def annotator(walk: Walk) -> None:
    log_in(walk, "annotator")
    walk.go("/tasks/sentiment/create/", ready="#create-form")
    box = walk.find("#input-text")
    assert walk.driver.switch_to.active_element == box  # ready to type
    box.send_keys(f"The staff smiled at {walk.width} people and ignored every one of them.")
    assert walk.text("#count-text").startswith(str(len(box.get_attribute("value"))))
    walk.find("input[name=target][value=negative]").click()
    walk.shot("annotator-create")
    box.send_keys(Keys.CONTROL, Keys.ENTER)
    walk.until(lambda d: "fooled" in walk.text("#verdict-state"))
    walk.check("the verdict")
    walk.shot("annotator-verdict")
    walk.go("/me/examples/", ready="#my-examples")
    assert "Not yet decided" not in walk.text("#my-examples")  # each row says where it stands in validation
    walk.go("/tasks/qa/create/", ready="#create-form")


def validator(walk: Walk) -> None:
    log_in(walk, "validator")
    walk.go("/tasks/sentiment/validate/", ready="#status")
    walk.until(lambda d: "Loading" not in walk.text("#status"))  # an item, or a word on why there is none
    walk.check("the validation queue")
    assert walk.find("#validator-guidance").is_displayed()  # how to judge, not only the writers' instructions
    walk.shot("validator-validate")
    if walk.find("#item").is_displayed():  # 2 (Incorrect): the label choices come into view, the first focused
        walk.find("#vote-incorrect").click()
        walk.until(lambda d: walk.find("#label-panel").is_displayed())
        assert walk.driver.switch_to.active_element == walk.find("#label-choices button")
    walk.go("/tasks/sentiment/", ready="#task-actions")


def expert(walk: Walk) -> None:
    log_in(walk, "expert")
    walk.go("/tasks/sentiment/expert/", ready="h1")
    walk.shot("expert-queue")
    walk.go("/tasks/sentiment/validate/", ready="#status")


def owner(walk: Walk) -> None:
    log_in(walk, "owner")
    walk.go("/console/", ready="#owned-tasks")
    walk.go("/tasks/sentiment/console/", ready="#console-overview")
    walk.shot("owner-console")
    walk.go("/tasks/sentiment/console/settings/", ready="#settings-form")
    walk.shot("owner-settings")
    walk.go("/tasks/sentiment/console/import/", ready="#import-form")
    walk.go("/tasks/sentiment/console/rounds/", ready="#close-round")
    walk.find("#start-round-open").click()
    walk.until(lambda d: walk.find("#close-preview").is_displayed())
    assert "Train" in walk.text("#will-train")
    walk.check("the close-round confirmation")
    walk.shot("owner-close-round")
    walk.go("/tasks/sentiment/console/crowd/", ready="#crowd-rules")
    walk.go("/tasks/sentiment/console/health/", ready="#task-health")


def researcher(walk: Walk) -> None:
    log_in(walk, "researcher")
    walk.go("/tasks/sentiment/", ready="#downloads")
    assert not walk.driver.find_elements(By.ID, "task-nav-console")  # no link that leads to a 403
    walk.shot("researcher-task")
    walk.go("/tasks/sentiment/leaderboard/", ready="#leaderboard")
    walk.go("/tasks/sentiment/models/upload/", ready="#upload-form")


def admin(walk: Walk) -> None:
    log_in(walk, "admin")
    walk.go("/console/", ready="#owned-tasks")
    walk.shot("admin-console")
    walk.go("/console/tasks/new/", ready="#task-create-form")
    walk.go("/tasks/qa/console/settings/", ready="#settings-form")


FLOWS: dict[str, Callable[[Walk], None]] = {
    "anonymous": anonymous, "new-signup": new_signup, "annotator": annotator, "validator": validator,
    "expert": expert, "owner": owner, "researcher": researcher, "admin": admin,
}


@pytest.mark.parametrize("persona", list(FLOWS))
def test_persona_walks_its_main_flow_at_both_widths(persona, demo, walker, live_server):
    walker.delete_all_cookies()
    problems: list[str] = []
    for width in WIDTHS:
        walk = Walk(walker, live_server.url, persona, width, SHOTS)
        try:
            FLOWS[persona](walk)
        finally:
            walk.close()
        problems += walk.problems
    assert not problems, "\n".join(problems)
