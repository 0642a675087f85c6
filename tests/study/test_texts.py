"""The owner's translations of a task's texts (study.texts, study.text_views): looked up in the reader's language,
out-of-date translations of versioned texts not shown, every value checked before anything is stored, the owner's
pages, and participants reading the translated texts on the task, guidelines and create pages."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.utils import translation

from dynabench_site.errors import InvalidInput
from study import texts
from study.models import Consent, Question, Survey, TextTranslation
from tasks import guidelines, roles
from tests.annotation.conftest import make_task
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def task():
    task, _, _ = make_task("sentiment")
    return task


@pytest.fixture
def owner(task):
    user = UserFactory(username="owner")
    task.owners.add(user)
    return user


@pytest.fixture
def survey(task):
    survey = Survey.objects.create(task=task, phase="pre", title="Before we start", intro="A few questions.")
    Question.objects.create(survey=survey, key="english", kind="single", text="How well do you read English?",
                            choices=["natively", "fluently", "a little"])
    Question.objects.create(survey=survey, key="age", kind="number", text="How old are you?")
    return survey


# --- lookups ---------------------------------------------------------------------------------------------


def test_a_text_reads_in_the_active_language_else_as_written(task):
    texts.save(task, "ar", {"instructions": "اكتب جملة."})
    assert texts.text(task, "instructions", "Write a sentence.", "ar") == "اكتب جملة."
    assert texts.text(task, "instructions", "Write a sentence.", "es") == "Write a sentence."  # not translated
    assert texts.text(task, "instructions", "Write a sentence.", "en") == "Write a sentence."  # the source
    with translation.override("ar"):
        assert texts.text(task, "instructions", "Write a sentence.") == "اكتب جملة."
    with translation.override("en-us"):
        assert texts.text(task, "instructions", "Write a sentence.") == "Write a sentence."


def test_language_codes_are_the_sites():
    assert texts.language_code("ar-EG") == "ar"
    assert texts.language_code("fr") == texts.source_language() == "en"
    assert texts.is_rtl("ar") and not texts.is_rtl("es")
    assert set(texts.target_languages()) == {c for c, _ in settings.LANGUAGES} - {"en"}


def test_labels_keep_their_value_and_change_their_name(task):
    texts.save(task, "ar", {"label:positive": "إيجابي"})
    names = texts.label_names(task, language="ar")
    assert names["positive"] == "إيجابي" and names["negative"] == "negative"


def test_a_translation_of_older_guidelines_is_not_shown_until_translated_again(task):
    guidelines.publish(task, "Be kind.")
    texts.save(task, "ar", {"guidelines": "كن لطيفًا."})
    assert texts.text(task, "guidelines", "Be kind.", "ar") == "كن لطيفًا."
    guidelines.publish(task, "Be kind and precise.")
    TextTranslation.objects.filter(field="guidelines").update(updated_at=task.guidelines.get(version=1).created_at)
    assert texts.text(task, "guidelines", "Be kind and precise.", "ar") == "Be kind and precise."
    assert texts.progress(task, "ar")["stale"] == ["guidelines"]
    texts.save(task, "ar", {"guidelines": "كن لطيفًا."})  # saved again as it is: the owner says it is current
    assert texts.text(task, "guidelines", "Be kind and precise.", "ar") == "كن لطيفًا."


def test_a_consent_translation_belongs_to_the_current_version(task):
    first = Consent.objects.create(task=task, version=1, text="I agree.")
    texts.save(task, "ar", {"consent": "أوافق."})
    assert texts.consent_text(first, "ar") == "أوافق."
    second = Consent.objects.create(task=task, version=2, text="I agree to the new terms.")
    assert texts.consent_text(first, "ar") == "I agree."  # an older version reads as written
    assert texts.consent_text(second, "ar") == "I agree to the new terms."  # translated before it existed


def test_surveys_read_in_the_language_and_answers_stay_the_choices(task, survey):
    texts.save(task, "ar", {"survey:pre:title": "قبل أن نبدأ", "question:pre:english": "ما مدى إجادتك قراءة الإنجليزية؟",
                            "question:pre:english:choices": "لغتي الأم\nبطلاقة\nقليلًا"})
    shown = texts.survey_texts(survey, "ar")
    assert shown["title"] == "قبل أن نبدأ" and shown["intro"] == "A few questions."
    assert shown["questions"]["english"]["choices"] == ["لغتي الأم", "بطلاقة", "قليلًا"]
    assert shown["questions"]["age"] == {"text": "How old are you?", "choices": []}
    assert texts.question_choices(survey.questions.get(key="english"), "ar")[2] == "قليلًا"
    assert json.loads(TextTranslation.objects.get(field="question:pre:english:choices").text)[0] == "لغتي الأم"
    assert survey.questions.get(key="english").choices == ["natively", "fluently", "a little"]


# --- what is stored ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("values", "field", "says"), [
    ({"nonsense": "x"}, "nonsense", "not a text of this task"),
    ({"instructions": "a\u202eb"}, "instructions", "bidirectional"),
    ({"label:positive": "سطر\nآخر"}, "label:positive", "one line"),
    ({"label:positive": "ب" * 101}, "label:positive", "limit is 100"),
    ({"question:pre:english:choices": "أ\nب"}, "question:pre:english:choices", "exactly 3"),
])
def test_a_bad_translation_is_refused_and_nothing_is_stored(task, survey, values, field, says):
    with pytest.raises(InvalidInput) as refused:
        texts.save(task, "ar", {"instructions": "اكتب.", **values})
    assert refused.value.field == field and says in refused.value.message
    assert not TextTranslation.objects.exists()


def test_only_the_sites_other_languages_are_translated(task):
    for language in ("en", "fr", ""):
        with pytest.raises(InvalidInput):
            texts.save(task, language, {"instructions": "x"})


def test_an_empty_translation_removes_it(task):
    texts.save(task, "ar", {"instructions": "اكتب."})
    assert texts.save(task, "ar", {"instructions": "  "}) == {"saved": 0, "removed": 1}
    assert not TextTranslation.objects.exists()


# --- the owner's pages ---------------------------------------------------------------------------------


def test_the_owner_translates_on_the_page(client, task, owner, survey):
    client.force_login(owner)
    overview = client.get(f"/tasks/{task.slug}/texts/").content.decode()
    assert f"/tasks/{task.slug}/texts/ar/" in overview and f"/tasks/{task.slug}/texts/es/" in overview
    page = client.get(f"/tasks/{task.slug}/texts/ar/").content.decode()
    for field in ("instructions", "label:positive", "field:prompt", "survey:pre:title", "question:pre:english:choices"):
        assert f'name="{field}"' in page
    answer = client.post(f"/tasks/{task.slug}/texts/ar/", {"label:positive": "إيجابي", "instructions": ""})
    assert answer.status_code == 302
    assert texts.label_names(task, language="ar")["positive"] == "إيجابي"
    assert "إيجابي" in client.get(f"/tasks/{task.slug}/texts/ar/").content.decode()


def test_a_refused_form_comes_back_with_what_was_typed(client, task, owner, survey):
    client.force_login(owner)
    answer = client.post(f"/tasks/{task.slug}/texts/ar/", {"label:positive": "إيجابي",
                                                            "question:pre:english:choices": "واحد"})
    page = answer.content.decode()
    assert answer.status_code == 400 and "exactly 3" in page and "إيجابي" in page
    assert not TextTranslation.objects.exists()


def test_only_owners_and_admins_translate_and_only_into_the_sites_languages(client, task, owner):
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    client.force_login(writer)
    assert client.get(f"/tasks/{task.slug}/texts/ar/").status_code == 403
    assert client.post(f"/tasks/{task.slug}/texts/ar/", {"instructions": "x"}).status_code == 403
    client.force_login(owner)
    assert client.get(f"/tasks/{task.slug}/texts/fr/").status_code == 404
    assert client.get(f"/tasks/{task.slug}/texts/en/").status_code == 404


# --- what participants see ---------------------------------------------------------------------------------


def test_participants_read_the_translated_texts_on_their_pages(client, task):
    guidelines.publish(task, "Be kind.")
    texts.save(task, "ar", {"instructions": "اكتب جملة تخدع النموذج.", "guidelines": "كن لطيفًا.",
                            "label:positive": "إيجابي"})
    writer = UserFactory(username="writer")
    roles.grant(writer, roles.ANNOTATOR)
    client.force_login(writer)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ar"
    detail = client.get(f"/tasks/{task.slug}/").content.decode()
    assert "اكتب جملة تخدع النموذج." in detail and "إيجابي" in detail
    assert "كن لطيفًا." in client.get(f"/tasks/{task.slug}/guidelines/").content.decode()
    create = client.get(f"/tasks/{task.slug}/create/").content.decode()
    assert "اكتب جملة تخدع النموذج." in create and "كن لطيفًا." in create
    assert '"positive": "\\u0625\\u064a\\u062c\\u0627\\u0628\\u064a"' in create  # label-names for create.js
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert "كن لطيفًا." not in client.get(f"/tasks/{task.slug}/guidelines/").content.decode()
