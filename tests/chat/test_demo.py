"""The demo chat task (`make run`: SQLite, jobs inline): `load_demo` loads it with two targets a person can tell
apart, its recorded conversations (chat.demo) in round 1, and it runs offline on the packaged model."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from chat import exports
from chat.models import Conversation, Failure, Message, Preference
from tasks import guidelines, roles
from tasks.management.commands.load_demo import DEMO_DIR
from tasks.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("load_demo", stdout=io.StringIO())
    return Task.objects.get(slug="chat")


def test_the_demo_chat_task_has_two_distinguishable_local_targets(demo):
    chat = demo.typed_config.chat
    helpful, playful = chat.target("helpful"), chat.target("playful")
    assert helpful.provider.provider == playful.provider.provider == "local"  # offline: the packaged model
    assert (helpful.temperature, playful.temperature) == (0.3, 1.0)
    assert "briefly" in helpful.system_prompt and "playful" in playful.system_prompt
    assert chat.scale == "pairwise" and chat.blinded and chat.assignment == "balanced"
    assert demo.current_round.number == 1 and demo.kind_impl.generative


def test_load_demo_stores_the_recorded_conversations_once(demo):
    convos = Conversation.objects.filter(round__task=demo)
    assert convos.count() == 3 and {c.writer.username for c in convos} == {"annotator"}
    assert Message.objects.filter(conversation__in=convos, role="assistant", usage__recorded="demo").count() == 6
    assert Preference.objects.filter(conversation__in=convos).count() == 3
    assert Failure.objects.filter(message__conversation__in=convos, consensus="unvalidated").count() == 3
    settings_ = convos.first().target_settings
    assert settings_["playful"]["temperature"] == 1.0 and settings_["helpful"]["model"].startswith("SmolLM2")
    assert (settings_["helpful"]["seed"], settings_["helpful"]["max_tokens"]) == (1, 96)  # as recorded
    call_command("load_demo", stdout=io.StringIO())  # idempotent
    assert Conversation.objects.filter(round__task=demo).count() == 3


def test_the_demo_accounts_may_chat_judge_and_download_at_once(demo):
    people = {u.username: u for u in User.objects.all()}
    assert roles.has_role(people["annotator"], roles.ANNOTATOR, demo)
    assert roles.has_role(people["validator"], roles.VALIDATOR, demo)
    assert roles.has_role(people["researcher"], roles.RESEARCHER, demo)
    assert guidelines.pending(people["annotator"], demo) is None


def test_the_demo_round_downloads_with_its_preference_pairs_and_failures(demo):
    round_ = demo.current_round
    pairs = list(exports.preference_rows(round_))
    assert len(pairs) == 2  # three judged turns, one a tie
    assert {p["chosen_target"] for p in pairs} == {"helpful"}
    red_team = list(exports.red_team_rows(round_))
    assert [r["category"] for r in red_team] == ["wrong", "wrong", "wrong"]
    assert "helpful" in exports.card(round_) and "playful" in exports.card(round_)


def test_the_recorded_answers_are_said_to_be_recordings():
    data = json.loads((DEMO_DIR / "chat.json").read_text(encoding="utf-8"))
    assert "Provider.converse" in data["recorded"]["how"] and "SmolLM2" in data["recorded"]["model"]


@pytest.mark.integration
def test_the_two_demo_targets_answer_differently_through_the_packaged_model(demo):
    """Real model, offline: the brief target at temperature 0.3 and the playful one at 1.0 give answers a person
    can tell apart on plain prompts (the playful one is longer on every prompt; docs/chat/exports.md, "Demo")."""
    from modelzoo.llm import provider_for

    chat = demo.typed_config.chat
    lengths = {}
    for name in ("helpful", "playful"):
        target = chat.target(name)
        provider = provider_for(target.provider)
        lengths[name] = [len(provider.converse([{"role": "user", "content": prompt}], system=target.system_prompt,
                                                max_tokens=target.max_tokens, temperature=target.temperature,
                                                seed=1).texts[0].split())
                         for prompt in ("What is the capital of Australia?", "Is 9 a prime number?")]
    assert all(p > h for h, p in zip(lengths["helpful"], lengths["playful"], strict=True)), lengths
