"""The interface's languages (Django i18n; docs/study/translations.md): every page says its language and direction,
anyone may choose a language (the cookie Django's set_language sets, read by LocaleMiddleware on pages and API calls
alike), Arabic pages are right to left and mirrored, the page scripts read their strings from /jsi18n/, and the
compiled catalogues (.mo, committed) are exactly their sources (.po)."""

from __future__ import annotations

import ast
import gettext as gettext_module
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from annotation.models import Example
from tasks import roles
from tests.annotation.conftest import make_task, sentiment_body
from tests.factories import UserFactory

LOCALE = Path(settings.BASE_DIR) / "locale"
CATALOGUES = sorted(LOCALE.glob("*/LC_MESSAGES/*.po"))


@pytest.fixture
def writer(db):
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    return user


def html_tag(response) -> str:
    return re.search(r"<html[^>]*>", response.content.decode()).group(0)


# --- the page's language and direction ----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("cookie", "lang", "direction"), [(None, "en", "ltr"), ("es", "es", "ltr"), ("ar", "ar", "rtl")])
def test_every_page_says_its_language_and_direction(client, cookie, lang, direction):
    if cookie:
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = cookie
    tag = html_tag(client.get("/"))
    assert f'lang="{lang}' in tag and f'dir="{direction}"' in tag


@pytest.mark.django_db
def test_the_browser_language_counts_until_a_choice_is_made(client):
    assert 'dir="rtl"' in html_tag(client.get("/", HTTP_ACCEPT_LANGUAGE="ar,en;q=0.5"))
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert 'dir="ltr"' in html_tag(client.get("/", HTTP_ACCEPT_LANGUAGE="ar,en;q=0.5"))


@pytest.mark.django_db
def test_anyone_signed_in_or_not_chooses_the_language_and_stays_on_the_page(client):
    page = client.get("/").content.decode()
    assert 'action="/i18n/setlang/"' in page and 'name="language"' in page
    for code, _name in settings.LANGUAGES:
        assert f'<option value="{code}"' in page
    answer = client.post("/i18n/setlang/", {"language": "ar", "next": "/accounts/login/"})
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert answer.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ar"
    page = client.get("/accounts/login/")
    assert 'dir="rtl"' in html_tag(page)
    assert "تسجيل الدخول" in page.content.decode()  # "Log in" in the top bar
    # another site's address is not followed
    assert client.post("/i18n/setlang/", {"language": "es", "next": "https://elsewhere.example/"})["Location"] == "/"


@pytest.mark.django_db
def test_an_unknown_language_changes_nothing(client):
    answer = client.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    assert settings.LANGUAGE_COOKIE_NAME not in answer.cookies


# --- the participant's path in Arabic -------------------------------------------------------------------


@pytest.mark.django_db
def test_the_create_page_in_arabic(client, writer):
    task, _, _ = make_task("sentiment")
    client.force_login(writer)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ar"
    page = client.get(f"/tasks/{task.slug}/create/")
    text = page.content.decode()
    assert page.status_code == 200 and 'dir="rtl"' in html_tag(page)
    for arabic in ("مثالك", "إرسال", "التعليمات", "التصنيف الذي تقصده"):  # your example, submit, instructions, label
        assert arabic in text
    assert "/jsi18n/?v=ar" in text


@pytest.mark.django_db
def test_api_calls_from_the_page_run_in_the_chosen_language_and_the_example_records_it(writer):
    task, _, context = make_task("sentiment")
    api = APIClient()
    api.cookies[settings.LANGUAGE_COOKIE_NAME] = "ar"
    refused = api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert refused.status_code in (401, 403)
    assert re.search(r"[\u0600-\u06ff]", refused.json()["detail"]), refused.json()  # DRF's own Arabic message
    api.force_authenticate(writer)
    answer = api.post(f"/api/tasks/{task.slug}/examples/", sentiment_body(context), format="json")
    assert answer.status_code in (201, 202), answer.content
    assert Example.objects.get(pk=answer.data["id"]).language == "ar"


@pytest.mark.django_db
def test_the_script_catalogue_follows_the_language(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ar"
    arabic = client.get("/jsi18n/?v=ar")
    assert arabic.status_code == 200 and "max-age=3600" in arabic["Cache-Control"]
    assert json.dumps("لقد خدعت النموذج!") in arabic.content.decode()  # "You fooled the model!" (JSON-escaped)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert "You fooled the model!" not in client.get("/jsi18n/?v=en").content.decode()  # English: no catalogue


# --- the catalogues ---------------------------------------------------------------------------------------


def po_entries(path: Path) -> list[dict]:
    """A .po file's entries: msgctxt, msgid, msgid_plural, msgstr / msgstr[n], `refs` (the #: lines), `fuzzy`."""
    entries, entry, key = [], {"refs": ""}, None
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = line.strip()
        if not line:
            if "msgid" in entry:
                entries.append(entry)
            entry, key = {"refs": ""}, None
        elif line.startswith("#:"):
            entry["refs"] += line[2:]
        elif line.startswith("#,"):
            entry["fuzzy"] = "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            entry[key] += ast.literal_eval(line)
        else:
            key, _, value = line.partition(" ")
            entry[key] = ast.literal_eval(value)
    return entries


def translations(entry: dict) -> list[str]:
    return [v for k, v in entry.items() if k == "msgstr" or k.startswith("msgstr[")]


def read_po(path: Path) -> dict:
    """The entries msgfmt compiles from a .po file, as gettext's catalogue holds them: msgid -> msgstr (plural:
    (msgid, n) -> msgstr[n]; context: 'ctxt\\x04msgid'); fuzzy and untranslated entries left out."""
    catalogue = {}
    for e in po_entries(path):
        if e.get("fuzzy") and e["msgid"]:
            continue
        msgid = (e["msgctxt"] + "\x04" if "msgctxt" in e else "") + e["msgid"]
        if "msgid_plural" in e:
            forms = {int(k[7:-1]): v for k, v in e.items() if k.startswith("msgstr[")}
            if all(forms.values()):
                catalogue.update({(msgid, n): v for n, v in forms.items()})
        elif e.get("msgstr"):
            catalogue[msgid] = e["msgstr"]
    return catalogue


def read_mo(path: Path) -> dict:
    with path.open("rb") as handle:
        return dict(gettext_module.GNUTranslations(handle)._catalog)


def test_there_are_catalogues():
    assert {p.parent.parent.name for p in CATALOGUES} >= {"ar"}
    assert {p.name for p in LOCALE.glob("ar/LC_MESSAGES/*.po")} == {"django.po", "djangojs.po"}


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda p: str(p.relative_to(LOCALE)))
def test_each_compiled_catalogue_is_its_source(po):
    """A .po edited without compiling (or a stale .mo) fails here: run `manage.py compilemessages` and commit both."""
    mo = po.with_suffix(".mo")
    assert mo.is_file(), f"{mo} is missing: run manage.py compilemessages"
    expected, compiled = read_po(po), read_mo(mo)
    # the header as msgfmt writes it: without the date makemessages stamps on every run
    expected[""] = "".join(line for line in expected.get("", "").splitlines(True)
                           if not line.startswith("POT-Creation-Date:"))
    compiled[""] = compiled.get("", "")
    missing = sorted(str(k) for k in expected.keys() - compiled.keys())[:5]
    extra = sorted(str(k) for k in compiled.keys() - expected.keys())[:5]
    changed = sorted(str(k) for k in expected.keys() & compiled.keys() if expected[k] != compiled[k])[:5]
    assert not (missing or extra or changed), (f"{mo} is not {po} compiled (run manage.py compilemessages): "
                                               f"missing {missing}, extra {extra}, changed {changed}")


@pytest.mark.skipif(not shutil.which("msgfmt"), reason="msgfmt (gettext) checks the placeholders where installed")
@pytest.mark.parametrize("po", CATALOGUES, ids=lambda p: str(p.relative_to(LOCALE)))
def test_translations_keep_their_placeholders(po, tmp_path):
    """msgfmt --check: every %(name)s / %s of a string is in its translation, and the plural forms are right."""
    done = subprocess.run(["msgfmt", "--check", "-o", str(tmp_path / "out.mo"), str(po)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


PARTICIPANT_FILES = ("frontend/templates/base.html", "frontend/templates/annotation/create.html",
                     "frontend/templates/tasks/guidelines.html", "frontend/templates/tasks/_guidelines_panel.html",
                     "frontend/static/js/create.js", "frontend/static/js/guidelines.js", "frontend/static/js/api.js",
                     "frontend/templates/error.html", "frontend/templates/study/consent.html",
                     "frontend/templates/study/survey.html", "frontend/templates/study/withdraw.html",
                     "frontend/templates/study/stop.html", "frontend/templates/crowd/link_refused.html",
                     "frontend/templates/crowd/open_link.html", "frontend/templates/crowd/assignment.html",
                     "frontend/templates/crowd/leave.html", "frontend/templates/crowd/_end_rule.html",
                     "frontend/templates/modelzoo/_training_notice.html", "study/gate.py", "study/consent.py",
                     "study/surveys.py", "crowd/links.py", "crowd/lifecycle.py")


def test_the_arabic_participant_path_is_translated():
    """Every string of the participant's pages (the layout, sign-in by worker link, consent, surveys, withdrawal, the
    guidelines, the create page and its scripts, the assignment and completion pages, the error pages) has a current
    Arabic translation (none missing, none fuzzy)."""
    missing = [e["msgid"] for po in LOCALE.glob("ar/LC_MESSAGES/*.po") for e in po_entries(po)
               if any(f in e["refs"] for f in PARTICIPANT_FILES)
               and (e.get("fuzzy") or not all(translations(e)))]
    assert not missing, f"{len(missing)} untranslated: {missing[:10]}"


# --- in a real browser: the create page in Arabic, mirrored --------------------------------------------------


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_create_page_in_arabic_is_mirrored_in_the_browser(browser, writer):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from study import texts
    from tests.annotation.test_create_page import wait
    from tests.site.screens import shot, sized

    task, _, _ = make_task("sentiment")
    texts.save(task, "ar", {"label:positive": "إيجابي", "label:negative": "سلبي", "label:neutral": "محايد",
                            "field:prompt": "الموجِّه",
                            "field:text": "النص", "instructions": "اكتب جملة يخطئ النموذج في تصنيف مشاعرها."})
    browser.login(writer)
    browser.go(f"/tasks/{task.slug}/create/")
    wait(browser).until(lambda b: b.find_element(By.ID, "create-form"))
    # the participant chooses Arabic in the top bar and comes back to the same page
    Select(browser.find_element(By.ID, "language-choice")).select_by_value("ar")
    browser.find_element(By.ID, "language-submit").click()
    wait(browser).until(lambda b: b.execute_script("return document.documentElement.dir") == "rtl")
    wait(browser).until(lambda b: b.find_element(By.ID, "context").get_attribute("data-context-id"))
    assert browser.current_url.endswith(f"/tasks/{task.slug}/create/")
    assert browser.execute_script("return document.documentElement.lang") == "ar"
    rect = lambda selector: browser.execute_script(  # noqa: E731
        "return document.querySelector(arguments[0]).getBoundingClientRect().toJSON()", selector)
    width = browser.execute_script("return document.documentElement.clientWidth")
    # mirrored: the brand at the right of the top bar, the writing column right of the figures' column, the
    # label's radio button right of its name, the labels' order from the right
    assert rect(".brand")["right"] > width - 60
    assert rect(".create-main")["left"] > rect(".create-side")["right"]
    assert rect("#labels input[value=positive]")["left"] > rect("#labels .label-name")["right"]
    first, second = browser.find_elements(By.CSS_SELECTOR, "#labels .label-choice")[:2]
    assert first.rect["x"] > second.rect["x"]
    assert browser.execute_script("return getComputedStyle(document.querySelector('#create-form')).direction") == "rtl"
    # what people write keeps its own direction (dir=auto): the English context reads left to right
    assert browser.execute_script("return getComputedStyle(document.querySelector('.context-text')).direction") == "ltr"
    # the owner's texts in Arabic; the interface strings (server and script) in Arabic
    labels = browser.find_element(By.ID, "labels").text
    assert "إيجابي" in labels and "سلبي" in labels and "positive" not in labels
    assert "يخطئ النموذج" in browser.find_element(By.CSS_SELECTOR, "details.instructions").text
    assert browser.find_element(By.ID, "submit-label").text == "إرسال"
    browser.find_element(By.ID, "input-text").send_keys("كان الطعام رائعًا والخدمة بطيئة.")
    browser.find_element(By.ID, "submit").click()  # no label chosen: create.js says so, through gettext
    wait(browser).until(lambda b: b.find_element(By.ID, "form-error").text)
    assert browser.find_element(By.ID, "form-error").text == "اختر التصنيف الذي تقصده."
    browser.find_element(By.CSS_SELECTOR, "#labels input[value=positive]").click()
    for width in (1400, 420):
        with sized(browser, width):
            shot(browser, "study-create-ar", width)  # docs/gallery/study-create-ar-*.png
