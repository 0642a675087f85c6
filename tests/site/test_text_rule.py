"""The text rule (dynabench_site.text): properties over generated text, then every path that stores user text.

Refused: surrogates, noncharacters, controls other than tab/LF/CR, bidirectional controls, more than
MAX_MARKS combining marks in a row, and text with no visible character; each refusal is a 400 naming the
field, and no message quotes more than QUOTE_CHARS characters of what was sent.
"""

from __future__ import annotations

import json

import pytest
from django import forms
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from annotation.models import Example
from dynabench_site import text as rule
from dynabench_site.errors import InvalidInput
from dynabench_site.text import (
    BIDI_CONTROLS,
    BIDI_MARKS,
    BLANK_LOOKING,
    MAX_MARKS,
    QUOTE_CHARS,
    check_text,
    text_problem,
)
from tasks import roles
from tests.annotation.conftest import QA_PASSAGE, make_task, nli_body, qa_body, sentiment_body
from tests.factories import UserFactory

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- generated text --------------------------------------------------------------------------------------------

ORDINARY_CATEGORIES = ["Lu", "Ll", "Lt", "Lo", "Nd", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "So"]
ordinary_char = st.characters(categories=ORDINARY_CATEGORIES, exclude_characters=BLANK_LOOKING)
scripts = st.sampled_from("abcXYZ019東京日本語中文한국어مرحباעבריתшалом.,!?…—😀👍🏽🎉€")
accent = st.sampled_from([chr(c) for c in range(0x0300, 0x0370)])
cluster = st.tuples(st.one_of(ordinary_char, scripts), st.lists(accent, max_size=3)).map(lambda t: t[0] + "".join(t[1]))
space = st.sampled_from([" ", "  ", "\n", "\t", "\r\n", "\u00a0"])
ordinary_text = st.lists(st.one_of(cluster, cluster, space), min_size=1, max_size=60).map("".join).filter(
    lambda s: any(not ch.isspace() for ch in s)
)

SURROGATES = [chr(c) for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF)]
NONCHARACTERS = ["\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"]
forbidden_char = st.sampled_from([*SURROGATES, *NONCHARACTERS, *BIDI_CONTROLS, "\x00", "\x07", "\x1b", "\x7f", "\x85"])

invisible_char = st.sampled_from(
    [" ", "\t", "\n", "\r", "\u00a0", "\u2003", "\u3000", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
     "\u0301", "\u0308", "\ufe0f", "\ufe00", "\U000e0100", "\u034f", *BLANK_LOOKING, *BIDI_MARKS]
)
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())


@PROPERTY
@given(ordinary_text)
def test_ordinary_text_is_accepted_unchanged(text):
    assert text_problem(text) is None
    assert check_text(text, "input.text") == text


@PROPERTY
@given(ordinary_text, forbidden_char, st.integers(min_value=0))
def test_a_forbidden_character_anywhere_is_refused_at_its_position(text, bad, where):
    where %= len(text) + 1
    sent = text[:where] + bad + text[where:]
    with pytest.raises(InvalidInput) as refused:
        check_text(sent, "input.text")
    assert refused.value.field == "input.text"
    assert f"U+{ord(bad):04X}" in refused.value.message
    assert f"at position {where}" in refused.value.message


@PROPERTY
@given(st.lists(invisible_char, max_size=40).map("".join))
def test_text_with_no_visible_character_is_refused(text):
    with pytest.raises(InvalidInput):
        check_text(text, "reason")


@PROPERTY
@given(st.one_of(st.text(alphabet=any_char, max_size=300), st.integers(), st.none(), st.lists(st.text(max_size=5))))
def test_check_text_raises_nothing_but_the_400_error(value):
    try:
        assert check_text(value, "name") == value
    except InvalidInput as exc:
        assert exc.status_code == 400 and exc.field == "name"


@PROPERTY
@given(st.text(alphabet=any_char, min_size=0, max_size=3000))
def test_no_message_quotes_the_text(text):
    problem = text_problem(text)
    assume(problem is not None)
    assert len(problem) <= 160
    quoted = [text[i : i + QUOTE_CHARS + 1] for i in range(0, max(len(text) - QUOTE_CHARS, 0), 97)]
    assert not any(chunk in problem for chunk in quoted)


@PROPERTY
@given(st.one_of(st.text(alphabet=any_char, max_size=5000), st.dictionaries(st.text(max_size=5), st.text(max_size=500))))
def test_quote_shows_at_most_80_characters_and_can_always_be_encoded(value):
    shown = rule.quote(value)
    assert len(shown) <= QUOTE_CHARS
    shown.encode("utf-8")


@PROPERTY
@given(st.text(alphabet=any_char, max_size=200))
def test_repair_leaves_only_what_it_cannot_fix(text):
    fixed = rule.repair(text)
    problem = text_problem(fixed)
    assert problem is None or problem.startswith("has no visible character")
    if text_problem(text) is None:
        assert fixed == text


def test_mark_stacks_up_to_the_limit_pass_and_longer_ones_are_refused():
    assert text_problem("e" + "\u0301" * MAX_MARKS) is None
    assert text_problem("Tiếng Việt, हिन्दी, עִבְרִית, 1️⃣, 👨‍👩‍👧") is None
    problem = text_problem("ok z" + "\u0301" * 200)
    assert problem == f"stacks 200 combining marks on the character at position 3; at most {MAX_MARKS} are accepted"


def test_bidi_marks_are_accepted_but_embeddings_overrides_and_isolates_are_not():
    assert text_problem("שלום\u200f, world \u200e(1)") is None  # RLM / LRM settle a neighbour's direction only
    assert text_problem("\u200e\u200f\u061c").startswith("has no visible character")
    for control in BIDI_CONTROLS:  # LRE RLE PDF LRO RLO LRI RLI FSI PDI
        assert f"bidirectional control U+{ord(control):04X}" in text_problem(f"ab{control}cd")


def test_the_message_names_the_surrogate_and_its_position():
    with pytest.raises(InvalidInput) as refused:
        check_text("lone \ud800 surrogate", "input.text")
    assert f"{refused.value.field}: {refused.value.message}" == (
        "input.text: contains an unpaired surrogate (U+D800) at position 5"
    )


def test_json_values_are_checked_at_any_depth_naming_the_path():
    assert rule.check_json_texts({"a": ["fine", {"b": "ok"}]}, "context") == {"a": ["fine", {"b": "ok"}]}
    with pytest.raises(InvalidInput) as refused:
        rule.check_json_texts({"a": ["fine", {"b": "x\u202ey"}]}, "context")
    assert refused.value.field == "context.a.1.b"


def test_form_and_serializer_fields_apply_the_rule():
    class Form(forms.Form):
        name = forms.CharField(validators=[rule.validate_text])
        note = forms.CharField(required=False, validators=[rule.validate_text])

    form = Form({"name": "\u200b\u200b", "note": ""})
    assert not form.is_valid()
    assert form.errors["name"] == ["has no visible character (only spaces, invisible or combining characters)"]
    assert "note" not in form.errors  # an optional field may stay empty

    class Body(serializers.Serializer):
        name = rule.RuleCharField()

    body = Body(data={"name": "evil\u202etxt.exe"})
    assert not body.is_valid()
    assert "bidirectional control U+202E" in str(body.errors["name"][0])
    assert Body(data={"name": "Grüße aus Köln"}).is_valid()


# --- through the API: submissions ------------------------------------------------------------------------------


@pytest.fixture
def writer_api(db, api):
    user = UserFactory(username="writer")
    roles.grant(user, roles.ANNOTATOR)
    api.force_authenticate(user)
    api.user = user
    return api


def submit(client, task, body: dict | bytes):
    url = f"/api/tasks/{task.slug}/examples/"
    if isinstance(body, bytes):
        return client.post(url, body, content_type="application/json")
    return client.post(url, body, format="json")


def assert_refused(response, field: str, words: str) -> None:
    assert response.status_code == 400, response.content
    data = response.json()
    assert field in data["errors"], data
    assert data["detail"].startswith(f"{field}: "), data
    assert words in data["detail"], data
    assert len(data["detail"]) < 300
    assert not Example.objects.exists()


@pytest.mark.django_db
def test_a_lone_surrogate_sent_as_a_json_escape_is_refused(writer_api):
    task, _, context = make_task("sentiment")
    raw = f'{{"context_id": {context.pk}, "input": {{"text": "lone \\ud800 surrogate"}}, "target": "positive"}}'.encode()
    assert json.loads(raw)["input"]["text"] == "lone \ud800 surrogate"
    response = submit(writer_api, task, raw)
    assert_refused(response, "input.text", "input.text: contains an unpaired surrogate (U+D800) at position 5")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "words"),
    [("\u200b\u200d\u2060\ufeff", "has no visible character"),
     ("\u202e\u200b", "bidirectional control U+202E"),
     ("z" + "\u0301" * 200, "stacks 200 combining marks"),
     ("pay \u202egnp.exe now", "bidirectional control U+202E (right-to-left override) at position 4"),
     ("left \u2066isolate\u2069", "bidirectional control U+2066"),
     ("bad \ufffe char", "noncharacter U+FFFE at position 4"),
     ("c1 \x85 control", "control character U+0085 at position 3")],
)
def test_crafted_texts_are_refused_naming_the_field(writer_api, text, words):
    task, _, context = make_task("sentiment")
    assert_refused(submit(writer_api, task, sentiment_body(context, input={"text": text})), "input.text", words)


@pytest.mark.django_db
def test_ordinary_text_of_many_scripts_is_stored_as_sent(writer_api):
    task, _, context = make_task("sentiment")
    text = "Ça m'a plu 😀 — 東京, مرحبا, שלום, Tiếng Việt, e\u0301\u0302"
    response = submit(writer_api, task, sentiment_body(context, input={"text": text}))
    assert response.status_code in (201, 202), response.content
    assert Example.objects.get().input == {"text": text}


@pytest.mark.django_db
def test_nli_hypothesis_and_qa_question_and_answer_follow_the_rule(writer_api):
    nli, _, premise = make_task("nli")
    assert_refused(submit(writer_api, nli, nli_body(premise, input={"hypothesis": "\u3164"})), "input.hypothesis",
                   "has no visible character")
    qa, _, passage = make_task("qa")
    body = qa_body(passage, input={"question": "When\u2067?"})
    assert_refused(submit(writer_api, qa, body), "input.question", "bidirectional control U+2067")
    body = qa_body(passage, target={"text": "1889", "start": QA_PASSAGE.index("1889"), "alternatives": ["18\u202e89"]})
    assert_refused(submit(writer_api, qa, body), "target.alternatives", "bidirectional control U+202E")


@pytest.mark.django_db
def test_a_one_megabyte_target_answers_a_short_message(writer_api):
    task, _, context = make_task("sentiment")
    response = submit(writer_api, task, sentiment_body(context, target="x" * 1_000_000))
    assert_refused(response, "target", "unknown label 'xxxx")
    assert "…" in response.json()["detail"]
    qa, _, passage = make_task("qa")
    response = submit(writer_api, qa, qa_body(passage, target={"text": "y" * 1_000_000, "start": 0}))
    assert_refused(response, "target.text", "is 1000000 characters long")


# --- through the API and pages: the other texts people write ---------------------------------------------------


@pytest.fixture
def scored_example(db, writer_api):
    from tests.factories import ExampleFactory

    task, round, _ = make_task("sentiment")
    example = ExampleFactory(round=round, author=writer_api.user, consensus=Example.Consensus.REJECTED)
    return task, example


@pytest.mark.parametrize(
    ("action", "field", "body"),
    [("flag", "reason", {"reason": "spam\u202e"}),
     ("explanation", "writer_explanation", {"writer_explanation": "\u200b \u200b"}),
     ("appeal", "reason", {"reason": "x" + "\u0336" * 50})],
)
def test_flag_explanation_and_appeal_reasons_follow_the_rule(writer_api, scored_example, action, field, body):
    _, example = scored_example
    response = writer_api.post(f"/api/examples/{example.pk}/{action}/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith(f"{field}: ")
    example.refresh_from_db()
    assert not example.flagged and example.writer_explanation == "" and example.appealed_at is None


@pytest.mark.django_db
def test_a_validators_reason_follows_the_rule(api):
    from tests.factories import ExampleFactory

    task, round, _ = make_task("sentiment")
    example = ExampleFactory(round=round)
    validator = UserFactory(username="checker")
    roles.grant(validator, roles.VALIDATOR)
    api.force_authenticate(validator)
    response = api.post(f"/api/examples/{example.pk}/validations/", {"verdict": "flagged", "reason": "\u2066\u2069"},
                        format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith("reason: contains the bidirectional control U+2066")


@pytest.mark.django_db
def test_token_names_follow_the_rule(api):
    user = UserFactory(username="tokenmaker")
    api.force_authenticate(user)
    response = api.post("/api/tokens/", {"name": "lap" + "\u0489" * 20}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith("name: stacks 20 combining marks")


@pytest.mark.django_db
def test_a_round_note_follows_the_rule(client_for, task, open_round):
    response = client_for("owner").post(f"/api/tasks/{task.slug}/rounds/", {"description": "note \u202e"}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith("description: contains the bidirectional control U+202E")
    from rounds.models import PipelineRun

    assert not PipelineRun.objects.exists()


@pytest.mark.django_db
def test_an_upload_name_follows_the_rule(client_for, task):
    response = client_for("researcher").post(f"/api/tasks/{task.slug}/models/", {"name": "\u200b"})
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith("name: has no visible character")


@pytest.mark.django_db
def test_guidelines_follow_the_rule(task):
    from tasks import guidelines

    with pytest.raises(InvalidInput) as refused:
        guidelines.publish(task, "Write \u202eclearly")
    assert refused.value.field == "text"
    assert not task.guidelines.exists()


@pytest.mark.django_db
def test_quiz_questions_follow_the_rule(task):
    from crowd import quizzes
    from crowd.models import Quiz

    quiz = quizzes.ensure_quiz(task, Quiz.Role.ANNOTATOR)
    with pytest.raises(InvalidInput) as refused:
        quizzes.add_item(quiz, context={"prompt": "fine"}, input={"text": "\u200b"}, answer="positive")
    assert refused.value.field == "input.text"
    with pytest.raises(InvalidInput) as refused:
        quizzes.add_item(quiz, context={"prompt": "fine"}, input={"text": "good"}, answer="positive",
                         explanation="\u202ewhy")
    assert refused.value.field == "explanation"
    assert not quiz.items.exists()


@pytest.mark.django_db
def test_a_suspension_reason_follows_the_rule(task, personas):
    from crowd import members

    with pytest.raises(InvalidInput) as refused:
        members.suspend(task, personas.annotator.username, personas.owner, "\u200b\u200b")
    assert refused.value.field == "reason"


@pytest.mark.django_db
def test_task_settings_name_and_instructions_follow_the_rule(task, personas):
    from tasks.config_form import ConfigForm
    from tasks.forms import GuidelinesForm, SettingsForm, SignupForm, TaskCreateForm

    form = SettingsForm({"name": "Sentiment\u202e", "instructions": "\u200b", "config": "{}"}, task=task)
    assert not form.is_valid()
    assert "bidirectional control" in form.errors["name"][0] and "no visible" in form.errors["instructions"][0]
    create = TaskCreateForm({"slug": "new-task", "name": "\u3164", "kind": "sentiment", "visibility": "public"})
    assert not create.is_valid() and "no visible" in create.errors["name"][0]
    assert "no visible" in GuidelinesForm({"text": "\u200b"}).errors["text"][0]
    config = ConfigForm({"name": "\u202e"}, task=task)
    assert not config.is_valid() and "bidirectional control" in config.errors["name"][0]
    signup = SignupForm({"username": "ann\u202e", "password1": "a-long-pass-phrase", "password2": "a-long-pass-phrase"})
    assert not signup.is_valid() and "username" in signup.errors


@pytest.mark.django_db
def test_crowd_and_upload_forms_follow_the_rule(task):
    from crowd.forms import BatchForm
    from rounds.forms import UploadForm

    batch = BatchForm({"name": "batch\u202e", "source": "prolific", "workers": "w1\nw2\u2068", "hours": 24,
                       "examples_required": 3})
    assert not batch.is_valid() and {"name", "workers"} <= set(batch.errors)
    upload = UploadForm({"name": "model", "description": "z" + "\u0301" * 9})
    assert not upload.is_valid() and "stacks 9 combining marks" in upload.errors["description"][0]


# --- imported data ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_imported_rows_follow_the_rule_and_name_their_line(task):
    from tasks.importing import ImportFailed, ImportSpec, import_lines
    from tasks.models import Context, LabeledItem

    contexts = [(1, json.dumps({"prompt": "A fine prompt."})), (2, json.dumps({"prompt": "Bad \u202e prompt"}))]
    with pytest.raises(ImportFailed) as failed:
        import_lines(task, contexts, ImportSpec(target="contexts"))
    assert [str(e) for e in failed.value.report.errors] == [
        "line 2: prompt: contains the bidirectional control U+202E (right-to-left override) at position 4; "
        "bidirectional controls are not accepted"
    ]
    assert not Context.objects.exists()
    rows = [(1, json.dumps({"text": "good", "label": "positive"})), (2, json.dumps({"text": "\u200b", "label": "positive"})),
            (3, json.dumps({"text": "fine", "label": "x\ud800"}))]
    report = import_lines(task, rows, ImportSpec(target="pool", skip_errors=True))
    assert [str(e).split(":")[:2] for e in report.errors] == [["line 2", " input.text"], ["line 3", " target"]]
    assert "\\ud800" in str(report.errors[1])  # quoted with the surrogate escaped
    assert LabeledItem.objects.count() == 1


@pytest.mark.django_db
def test_every_text_in_the_settings_json_follows_the_rule(task):
    """The JSON box of the settings form: a label or the instructions inside it are user text too."""
    from tasks.forms import SettingsForm

    form = SettingsForm({"name": "Sentiment", "instructions": "Write one sentence.",
                         "config": json.dumps({"labels": ["positive", "neg\u202eative"]})}, task=task)
    assert not form.is_valid()
    assert "config.labels.1" in str(form.errors) and "bidirectional control" in str(form.errors)
