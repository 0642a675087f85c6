"""The study end to end in Chromium (issue 42's "done means"): participants arrive from the crowd platform's signed
open link (Prolific's PROLIFIC_PID / STUDY_ID / SESSION_ID), choose their language, give consent, answer the
pre-survey (an ineligible one is stopped before any work and sent back without a completion code), are assigned an
arm at random (one with the model in the loop, one without: standard collection), write an example, answer the
post-survey and are sent to the platform's completion address with their code. One walk in Spanish, one in Arabic
(right to left, the layout mirrored), the ineligible one in Arabic. Then the owner reads the arms comparison on the
round's dashboard and a webhook's delivery log (a real local HTTP server receives the signed deliveries).

Pictures: var/screenshots/study-<lang>-<step>-1400.png, study-owner-arms-1400.png, study-owner-webhook-log-1400.png
(docs/gallery/ holds copies made by scripts/update_gallery.py)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from annotation.models import Example
from crowd import lifecycle, links
from crowd.models import Assignment
from notify import webhooks
from notify.models import Webhook
from study import arms, consent, surveys, texts
from study.models import Arm, Participant, Study, SurveyResponse
from tests.annotation.conftest import make_task
from tests.factories import ExampleFactory, UserFactory
from tests.site.screens import SHOTS, shot, sized, too_wide
from tests.site.walks import HEIGHT

pytestmark = [pytest.mark.browser, pytest.mark.integration]

WIDTH, PHONE = 1400, 420
COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"
SCREEN_OUT = "https://app.prolific.com/submissions/complete?cc=SCREENED"
CONSENT = ("# Taking part in this study\n\nWe study how people write examples that a model gets wrong. You will write "
           "one short review sentence. **Your answers are kept under a pseudonym**; you may withdraw at any time.")
PRE = [
    {"key": "adult", "kind": "single", "text": "Are you 18 or older?", "choices": ["yes", "no"],
     "eligibility": {"allowed": ["yes"]}},
    {"key": "reviews", "kind": "likert", "text": "How often do you write online reviews?",
     "choices": ["never", "rarely", "sometimes", "often"]},
]
POST = [
    {"key": "hard", "kind": "likert", "text": "How hard was it to write the example?",
     "choices": ["easy", "fair", "hard"]},
    {"key": "comments", "kind": "text", "text": "Anything you want to tell us?", "required": False},
]
TRANSLATIONS = {
    "es": {"consent": "# Participar en este estudio\n\nEstudiamos cómo escribe la gente ejemplos en los que un modelo se "
                      "equivoca. Escribirá una frase breve de reseña. **Sus respuestas se guardan bajo un seudónimo**; "
                      "puede retirarse cuando quiera.",
           "survey:pre:title": "Sobre usted", "survey:pre:intro": "Dos preguntas antes de empezar.",
           "question:pre:adult": "¿Tiene 18 años o más?", "question:pre:adult:choices": "sí\nno",
           "question:pre:reviews": "¿Con qué frecuencia escribe reseñas en línea?",
           "question:pre:reviews:choices": "nunca\nrara vez\na veces\na menudo",
           "survey:post:title": "Para terminar", "survey:post:intro": "Gracias. Dos preguntas más.",
           "question:post:hard": "¿Qué tan difícil fue escribir el ejemplo?",
           "question:post:hard:choices": "fácil\nregular\ndifícil",
           "question:post:comments": "¿Algo que quiera decirnos?",
           "label:positive": "positiva", "label:negative": "negativa", "label:neutral": "neutral",
           "instructions": "Escriba una frase cuyo sentimiento sea claro para una persona pero que el modelo se equivoque. "
                           "El contexto está ahí como inspiración; no tiene que usarlo.",
           "field:prompt": "Contexto", "field:text": "Texto"},
    "ar": {"consent": "# المشاركة في هذه الدراسة\n\nندرس كيف يكتب الناس أمثلة يخطئ فيها النموذج. ستكتب جملة قصيرة "
                      "من مراجعة. **تُحفظ إجاباتك باسم مستعار**، ويمكنك الانسحاب في أي وقت.",
           "survey:pre:title": "عنك", "survey:pre:intro": "سؤالان قبل البدء.",
           "question:pre:adult": "هل عمرك 18 سنة أو أكثر؟", "question:pre:adult:choices": "نعم\nلا",
           "question:pre:reviews": "كم مرة تكتب مراجعات على الإنترنت؟",
           "question:pre:reviews:choices": "أبدًا\nنادرًا\nأحيانًا\nغالبًا",
           "survey:post:title": "في الختام", "survey:post:intro": "شكرًا لك. سؤالان أخيران.",
           "question:post:hard": "ما مدى صعوبة كتابة المثال؟", "question:post:hard:choices": "سهل\nمتوسط\nصعب",
           "question:post:comments": "هل تود إخبارنا بشيء؟",
           "label:positive": "إيجابي", "label:negative": "سلبي", "label:neutral": "محايد",
           "instructions": "اكتب جملة يكون شعورها واضحًا للإنسان لكن النموذج يخطئ فيها. السياق موجود للإلهام؛ لست "
                           "مضطرًا لاستخدامه.",
           "field:prompt": "السياق", "field:text": "النص"},
}


class Receiver(BaseHTTPRequestHandler):
    """The owner's webhook endpoint: a real HTTP server that fails its first delivery (503), then accepts."""

    received: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
        self.send_response(503 if len(self.received) == 1 else 200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    Receiver.received = []
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def study_world(transactional_db, settings, tmp_path):
    from modelzoo.serving import reset_backends
    from modelzoo.testing import deploy_tiny_ensemble

    settings.MODEL_STORE, settings.MODEL_BACKEND = tmp_path, "inprocess"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.NOTIFY_ALLOW_PRIVATE, settings.NOTIFY_RETRY_BASE_SECONDS = True, 0
    reset_backends()
    cache.clear()
    task, round_, _context = make_task("sentiment", slug="studied")
    deploy_tiny_ensemble(round_, members=2)
    owner = UserFactory(username="study-owner")
    task.owners.add(owner)
    study = Study.objects.create(task=task, enabled=True, languages=["en", "es", "ar"])
    consent.publish(task, CONSENT, by=owner)
    surveys.replace_questions(surveys.configure(task, "pre", title="About you", intro="Two questions first."), PRE)
    surveys.replace_questions(surveys.configure(task, "post", title="Afterwards", intro="Thank you. Two more."),
                              POST)
    loop = arms.create_arm(task, {"key": "loop", "name": "Model in the loop", "model_in_loop": True})
    standard = arms.create_arm(task, {"key": "standard", "name": "Standard collection", "model_in_loop": False})
    # A seed whose schedule sends the first participant to the loop and the second to standard collection, so
    # that both arms' pages are walked (the schedule is the study's own: study.arms.pick).
    study.seed = next(seed for seed in range(1000)
                      if [arms.pick(Study(seed=seed), [loop, standard], n).key for n in (0, 1)] == ["loop", "standard"])
    study.save()
    for language, values in TRANSLATIONS.items():
        texts.save(task, language, values)
    batch = links.create_batch(task, owner, name="wave 1", source="prolific", workers="", hours=48,
                               examples_required=1, places=5, study_id="STUDY1", completion_url=COMPLETE,
                               screen_out_url=SCREEN_OUT)
    yield {"task": task, "round": round_, "owner": owner, "batch": batch, "loop": loop, "standard": standard}
    reset_backends()


def wait(browser, condition, timeout: float = 30):
    return WebDriverWait(browser, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def ready(browser, css: str) -> None:
    wait(browser, lambda d: d.execute_script("return document.readyState") == "complete"
         and d.find_elements(By.CSS_SELECTOR, css))


def choose_language(browser, language: str) -> None:
    Select(browser.find_element(By.ID, "language-choice")).select_by_value(language)
    browser.find_element(By.ID, "language-submit").click()
    wait(browser, lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("lang") == language)


def width(browser, pixels: int) -> None:
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": pixels, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})


def shots(browser, name: str) -> None:
    """The page at the walk's width, and again at a phone's, where it must fit (no sideways scrolling)."""
    shot(browser, name, WIDTH)
    width(browser, PHONE)
    try:
        assert too_wide(browser) is None, f"{name} at {PHONE} px: {too_wide(browser)}"
        shot(browser, name, PHONE)
    finally:
        width(browser, WIDTH)


def page_direction(browser) -> str:
    return browser.find_element(By.TAG_NAME, "html").get_attribute("dir") or "ltr"


def arrive(browser, batch, pid: str, language: str) -> None:
    """From the platform: the open link with its parameters, the language chosen on the first page, Start."""
    browser.delete_all_cookies()
    browser.go(f"{lifecycle.open_link_path(batch)}?PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=S-{pid}")
    ready(browser, "#open-start")
    choose_language(browser, language)
    ready(browser, "#open-start")
    assert page_direction(browser) == ("rtl" if language == "ar" else "ltr")
    assert TRANSLATIONS[language]["instructions"][:30] in browser.find_element(By.TAG_NAME, "main").text
    shots(browser, f"study-{language}-{pid}-join")
    browser.find_element(By.CSS_SELECTOR, "#open-start button[type=submit]").click()


def give_consent(browser, language: str, pid: str) -> None:
    ready(browser, "#consent-form")
    assert "/consent/" in browser.current_url
    shown = browser.find_element(By.TAG_NAME, "main").text
    assert TRANSLATIONS[language]["consent"].splitlines()[0].lstrip("# ") in shown  # the owner's translation
    shots(browser, f"study-{language}-{pid}-consent")
    browser.find_element(By.ID, "consent-agree").click()


def answer_pre_survey(browser, language: str, pid: str, adult: str) -> None:
    ready(browser, "#survey-form")
    assert TRANSLATIONS[language]["question:pre:adult"] in browser.find_element(By.ID, "survey-form").text
    browser.find_element(By.CSS_SELECTOR, f"input[name=adult][value={adult}]").click()
    browser.find_element(By.CSS_SELECTOR, "input[name=reviews][value=sometimes]").click()
    shots(browser, f"study-{language}-{pid}-pre-survey")
    browser.find_element(By.ID, "survey-submit").click()


def write_example(browser, language: str, pid: str, text: str, sees_verdict: bool) -> None:
    ready(browser, "#steps")  # back on the assignment page once the steps are taken
    browser.find_element(By.CSS_SELECTOR, "#step-write a").click()
    ready(browser, "#create-form")
    assert page_direction(browser) == ("rtl" if language == "ar" else "ltr")
    browser.find_element(By.ID, "input-text").send_keys(text)
    browser.find_element(By.CSS_SELECTOR, "input[name=target][value=negative]").click()
    browser.find_element(By.ID, "input-text").send_keys(Keys.CONTROL, Keys.ENTER)
    state = browser.find_element(By.ID, "verdict-state")
    if sees_verdict:
        wait(browser, lambda d: d.find_element(By.ID, "verdict-body").is_displayed())
    else:
        wait(browser, lambda d: state.text and "…" not in state.text)
        assert not browser.find_element(By.ID, "verdict-body").is_displayed()  # standard collection: no verdict
    shots(browser, f"study-{language}-{pid}-create")


def finish(browser, language: str, pid: str, assignment: Assignment) -> str:
    browser.go(f"/assignments/{assignment.pk}/")
    ready(browser, "#finish")
    browser.find_element(By.ID, "finish").click()
    ready(browser, "#survey-form")  # the post-survey comes before the code
    browser.find_element(By.CSS_SELECTOR, "input[name=hard][value=fair]").click()
    shots(browser, f"study-{language}-{pid}-post-survey")
    # The platform is another site: its address is blocked, so the browser stops on it and we read where it went.
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*prolific.com*"]})
    try:
        browser.find_element(By.ID, "survey-submit").click()
        wait(browser, lambda d: "prolific.com" in d.current_url)
        return browser.current_url
    finally:
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})


def test_participants_walk_the_study_in_spanish_and_arabic_and_the_owner_reads_the_arms(browser, study_world,
                                                                                        receiver):
    task, batch = study_world["task"], study_world["batch"]
    with sized(browser, WIDTH):
        # --- Spanish: model in the loop ------------------------------------------------------------------
        arrive(browser, batch, "P-ES", "es")
        give_consent(browser, "es", "P-ES")
        answer_pre_survey(browser, "es", "P-ES", adult="yes")
        write_example(browser, "es", "P-ES", "La comida llegó fría, pero el camarero fue encantador.", True)
        es = Assignment.objects.get(batch=batch, worker_id="P-ES")
        landed = finish(browser, "es", "P-ES", es)
        assert parse_qs(urlsplit(landed).query)["cc"] == [es.completion_code]

        # --- Arabic, right to left: standard collection (no model in the loop) -----------------------------
        arrive(browser, batch, "P-AR", "ar")
        give_consent(browser, "ar", "P-AR")
        answer_pre_survey(browser, "ar", "P-AR", adult="yes")
        write_example(browser, "ar", "P-AR", "الخدمة كانت بطيئة جدًا لكن الطعام لذيذ.", False)
        create_box = browser.find_element(By.ID, "input-text").rect
        assert create_box["x"] + create_box["width"] > WIDTH * 0.5  # the form sits on the right: mirrored
        ar = Assignment.objects.get(batch=batch, worker_id="P-AR")
        landed = finish(browser, "ar", "P-AR", ar)
        assert parse_qs(urlsplit(landed).query)["cc"] == [ar.completion_code]

        # --- Arabic, not eligible: stopped before any work, sent back without a code ------------------------
        arrive(browser, batch, "P-NO", "ar")
        give_consent(browser, "ar", "P-NO")
        answer_pre_survey(browser, "ar", "P-NO", adult="no")
        wait(browser, lambda d: "/study/stop/" in d.current_url)
        ready(browser, "main")
        assert too_wide(browser) is None  # the mirrored page fits its window
        shots(browser, "study-ar-P-NO-ineligible")
        browser.go(f"/tasks/{task.slug}/create/")  # no way to the work: the gate sends them back to the stop page
        ready(browser, "main")
        assert "/study/stop/" in browser.current_url

    # What was recorded: each participant's arm (never changed), language, answers; each example its arm and language.
    people = {p.user.worker_account.worker_id: p for p in Participant.objects.filter(task=task).select_related("arm", "user")}
    assert people["P-ES"].arm.key == "loop" and people["P-AR"].arm.key == "standard"
    assert people["P-NO"].arm is None and people["P-NO"].eligible is False
    assert (people["P-ES"].language, people["P-AR"].language) == ("es", "ar")
    written = {e.author.worker_account.worker_id: e for e in Example.objects.filter(round__task=task)}
    assert set(written) == {"P-ES", "P-AR"}  # nothing by the ineligible one
    assert (written["P-ES"].arm.key, written["P-ES"].language) == ("loop", "es")
    assert (written["P-AR"].arm.key, written["P-AR"].language) == ("standard", "ar")
    assert SurveyResponse.objects.filter(survey__phase="post").count() == 2
    states = dict(Assignment.objects.filter(batch=batch).values_list("worker_id", "state"))
    assert states["P-ES"] == states["P-AR"] == Assignment.State.COMPLETED

    # --- the owner: the arms comparison (with more participants' examples) and a webhook's delivery log -----
    for n in range(24):
        arm = study_world["loop"] if n % 2 == 0 else study_world["standard"]
        writer = UserFactory(username=f"simulated-{n}")
        Participant.objects.create(task=task, user=writer, arm=arm, sequence=100 + n, language="en")
        for k in range(3):  # the loop arm fools more often, and takes longer; validators confirm most of it
            fooled = (n + k) % 2 == 0 if arm.key == "loop" else (n + k) % 4 == 1
            decided = (Example.Consensus.VERIFIED if k < 2 else Example.Consensus.REJECTED) if fooled else \
                Example.Consensus.UNVALIDATED
            ExampleFactory(round=study_world["round"], author=writer, arm=arm, language="en",
                           input={"text": f"simulated writer {n}, example {k}"}, fooled=fooled, consensus=decided,
                           time_spent_ms=40_000 + 5_000 * ((n * 7 + k) % 9) + (15_000 if arm.key == "loop" else 0))
    hook = webhooks.add(task, f"http://127.0.0.1:{receiver.server_port}/hooks", ["round_closed", "round_opened"],
                        by=study_world["owner"])
    with sized(browser, WIDTH):
        browser.delete_all_cookies()
        browser.login(study_world["owner"])
        browser.go(f"/tasks/{task.slug}/dashboard/")
        ready(browser, "#arms-comparison")
        table = browser.find_element(By.ID, "arms-table").text
        assert "Model in the loop" in table and "Standard collection" in table
        section = browser.find_element(By.ID, "arms-comparison")
        browser.execute_script("arguments[0].scrollIntoView()", section)
        SHOTS.mkdir(parents=True, exist_ok=True)
        section.screenshot(str(SHOTS / f"study-owner-arms-{WIDTH}.png"))  # the section alone
        for _ in range(2):  # a test event twice from the console: the first delivery fails (503), the second lands
            browser.go(f"/tasks/{task.slug}/console/notifications/")
            ready(browser, "form[action$='/test/'] button")
            browser.find_element(By.CSS_SELECTOR, "form[action$='/test/'] button").click()
            ready(browser, "main")
        wait(browser, lambda d: len(Receiver.received) >= 2, timeout=60)
        browser.go(f"/tasks/{task.slug}/console/notifications/webhooks/{hook.pk}/")
        ready(browser, "main")
        shots(browser, "study-owner-webhook-log")
    first = Receiver.received[0]
    signed = webhooks.sign(Webhook.objects.get(pk=hook.pk).secret, first["headers"]["webhook-id"],
                           int(first["headers"]["webhook-timestamp"]), first["body"].decode())
    assert signed in first["headers"]["webhook-signature"].split()  # the Standard Webhooks signature checks out
    assert json.loads(first["body"])["type"]
