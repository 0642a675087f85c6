"""A chat round's datasets (chat.exports, chat.exports_api): the files load with Hugging Face `datasets`, their
fields are what the card and docs/chat/exports.md say, the preference pairs are in the conversational preference
format TRL's DPOTrainer reads, and who may download is the rule of exports.access.can_download."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client

from chat import exports
from chat.models import Conversation, Failure, Judgement, Message, Preference, Rating
from crowd import members
from exports import access as exports_access
from exports.models import DatasetSnapshot
from tasks import roles
from tests.factories import RoundFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

SETTINGS = {
    "helpful": {"provider": "local", "model": "SmolLM2-135M-Instruct", "system_prompt": "Answer briefly.",
                "temperature": 0.3, "max_tokens": 96, "seed": None},
    "playful": {"provider": "local", "model": "SmolLM2-135M-Instruct", "system_prompt": "Be playful.",
                "temperature": 1.0, "max_tokens": 96, "seed": 7},
}


def exchange(convo, turn: int, user: str, *answers: tuple[str, str], chosen: int = 0, state: str = "ready"):
    """One turn: the writer's message and one answer per (target, text), slot by slot."""
    Message.objects.create(conversation=convo, turn=turn, role="user", text=user)
    made = []
    for slot, (target, text) in enumerate(answers):
        made.append(Message.objects.create(conversation=convo, turn=turn, role="assistant", slot=slot, target=target,
                                           text=text, state=state, chosen=slot == chosen,
                                           model="SmolLM2-135M-Instruct"))
    return made


@pytest.fixture
def chat_round(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    task = TaskFactory(slug="chat", name="Chat demo", kind="chat")
    owner = UserFactory(username="chat-owner")
    task.owners.add(owner)
    round_ = RoundFactory(task=task, number=1)
    writer, judge, judge2 = UserFactory(username="alice-writes"), UserFactory(username="judge"), UserFactory(username="j2")

    slider = Conversation.objects.create(round=round_, writer=writer, scale="slider", targets=["helpful"],
                                         target_settings={"helpful": SETTINGS["helpful"]})
    (capital,) = exchange(slider, 0, "What is the capital of Australia?", ("helpful", "Sydney."))
    (second,) = exchange(slider, 1, "Are you sure?", ("helpful", "Yes, Sydney is the capital."))
    exchange(slider, 2, "Hello?", ("helpful", ""), state="failed")  # an answer that never came: not exported
    Rating.objects.create(message=capital, rater=writer, score=5)
    Rating.objects.create(message=second, rater=writer, score=0)
    failure = Failure.objects.create(message=capital, author=writer, category="wrong",
                                     reason="The capital is Canberra.", consensus="confirmed")
    Judgement.objects.create(failure=failure, judge=judge, verdict="confirmed", category="wrong", rating=5,
                             reason="Canberra.")
    Judgement.objects.create(failure=failure, judge=judge2, verdict="confirmed", category="wrong", rating=10)

    pairwise = Conversation.objects.create(round=round_, writer=writer, scale="pairwise",
                                           targets=["playful", "helpful"], target_settings=SETTINGS)
    a, b = exchange(pairwise, 0, "Name a prime number.", ("playful", "Ooh, 9! Totally prime!"), ("helpful", "7."),
                    chosen=1)
    Preference.objects.create(conversation=pairwise, turn=0, rater=writer, winner_slot=1, reason="9 is not prime")
    Failure.objects.create(message=a, author=writer, category="wrong", reason="9 = 3 x 3.")
    exchange(pairwise, 1, "And an even one?", ("playful", "2, the oddest even prime!"), ("helpful", "2."))
    Preference.objects.create(conversation=pairwise, turn=1, rater=writer, winner_slot=None)  # a tie
    exchange(pairwise, 2, "Thanks!", ("playful", "Anytime, friend!"), ("helpful", "You're welcome."))
    Preference.objects.create(conversation=pairwise, turn=2, rater=writer, winner_slot=0)

    empty = Conversation.objects.create(round=round_, writer=judge, scale="slider", targets=["playful"])
    Message.objects.create(conversation=empty, turn=0, role="user", text="Still waiting")
    Message.objects.create(conversation=empty, turn=0, role="assistant", slot=0, target="playful", state="pending")
    return {"task": task, "round": round_, "owner": owner, "writer": writer, "slider": slider, "pairwise": pairwise,
            "failure": failure, "b": b}


@pytest.fixture
def hf_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return tmp_path / "hf-cache"


def load(round_, name: str, folder, cache):
    from datasets import load_dataset

    path = folder / exports.DATASETS[name].filename
    path.write_bytes(b"".join(exports.jsonl(exports.rows(round_, name))))
    return load_dataset("json", data_files=str(path), cache_dir=str(cache))["train"]


def test_conversations_load_as_chat_messages_with_the_chosen_answer_per_turn(chat_round, tmp_path, hf_offline):
    data = load(chat_round["round"], "conversations", tmp_path, hf_offline)
    assert data.num_rows == 2  # the conversation whose only answer is still pending has no complete turn
    slider, pairwise = sorted(data, key=lambda r: r["conversation_id"])
    assert slider["messages"] == [
        {"role": "user", "content": "What is the capital of Australia?"}, {"role": "assistant", "content": "Sydney."},
        {"role": "user", "content": "Are you sure?"},
        {"role": "assistant", "content": "Yes, Sydney is the capital."}]  # the failed third turn is left out
    assert slider["target"] == "helpful" and slider["scale"] == "slider" and slider["id"] == \
        f"chat-r1-c{chat_round['slider'].pk}"
    assert [r["score"] for r in slider["ratings"]] == [5, 0]
    assert slider["failures"] == [{"turn": 0, "target": "helpful", "category": "wrong", "consensus": "confirmed"}]
    assert slider["turns"][0]["other"] is None and slider["turns"][0]["rating"] == 5
    assert slider["writer_id"].startswith("a_") and "alice" not in json.dumps(slider)

    assert pairwise["target"] is None and pairwise["targets"] == ["playful", "helpful"]
    assert [m["content"] for m in pairwise["messages"] if m["role"] == "assistant"] == \
        ["7.", "2, the oddest even prime!", "Anytime, friend!"]  # turn 0: slot 1 chosen; the tie: slot 0
    first = pairwise["turns"][0]
    assert (first["target"], first["slot"], first["preference"]) == ("helpful", "Model B", "helpful")
    assert first["other"]["content"] == "Ooh, 9! Totally prime!" and first["other"]["target"] == "playful"
    assert pairwise["turns"][1]["preference"] == "tie"
    settings_row = {row["name"]: row for row in pairwise["target_settings"]}
    assert settings_row["playful"]["temperature"] == 1.0 and settings_row["playful"]["seed"] == 7
    assert settings_row["helpful"]["system_prompt"] == "Answer briefly."


def is_conversational_preference(row: dict) -> bool:
    """TRL's conversational preference type (https://huggingface.co/docs/trl/dataset_formats, "Preference",
    conversational column): `prompt` a list of {"role", "content"} messages ending with the user's, `chosen` and
    `rejected` lists of assistant messages. TRL's own `is_conversational` looks for a list of dicts with "role"
    and "content" under the first of these keys; DPOTrainer then applies the tokenizer's chat template."""
    def messages(value) -> bool:
        return isinstance(value, list) and value and all(
            isinstance(m, dict) and set(m) >= {"role", "content"} and isinstance(m["content"], str) for m in value)

    prompt, chosen, rejected = row["prompt"], row["chosen"], row["rejected"]
    roles_ = [m["role"] for m in prompt]
    alternate = all(role == ("user" if i % 2 == 0 else "assistant") for i, role in enumerate(roles_))
    return (messages(prompt) and messages(chosen) and messages(rejected) and alternate and roles_[-1] == "user"
            and {m["role"] for m in chosen + rejected} == {"assistant"})


def test_preference_pairs_are_trls_conversational_preference_rows_without_ties(chat_round, tmp_path, hf_offline):
    data = load(chat_round["round"], "preferences", tmp_path, hf_offline)
    assert data.num_rows == 2  # turns 0 and 2; the tie of turn 1 is left out
    assert {"prompt", "chosen", "rejected"} <= set(data.column_names)
    rows = sorted(data, key=lambda r: r["turn"])
    assert all(is_conversational_preference(row) for row in rows)
    first, last = rows
    assert first["prompt"] == [{"role": "user", "content": "Name a prime number."}]
    assert first["chosen"] == [{"role": "assistant", "content": "7."}]
    assert first["rejected"] == [{"role": "assistant", "content": "Ooh, 9! Totally prime!"}]
    assert (first["chosen_target"], first["rejected_target"], first["reason"]) == ("helpful", "playful",
                                                                                   "9 is not prime")
    # the prompt of a later turn is the conversation as it went on (the picks), ending with the user's message
    assert [m["content"] for m in last["prompt"]] == ["Name a prime number.", "7.", "And an even one?",
                                                      "2, the oddest even prime!", "Thanks!"]
    assert last["chosen"][0]["content"] == "Anytime, friend!" and last["chosen_target"] == "playful"
    counts = exports.PreferenceCounts()
    assert len(list(exports.preference_rows(chat_round["round"], counts))) == 2
    assert (counts.pairs, counts.ties, counts.undecided, counts.incomplete) == (2, 1, 0, 0)


def test_red_team_rows_hold_the_conversation_up_to_the_failure_and_its_judgements(chat_round, tmp_path, hf_offline):
    data = load(chat_round["round"], "red-team", tmp_path, hf_offline)
    assert data.num_rows == 2
    confirmed, open_ = sorted(data, key=lambda r: r["conversation_id"])
    assert confirmed["messages"] == [{"role": "user", "content": "What is the capital of Australia?"},
                                     {"role": "assistant", "content": "Sydney."}]
    assert (confirmed["category"], confirmed["reason"], confirmed["consensus"]) == (
        "wrong", "The capital is Canberra.", "confirmed")
    assert [j["verdict"] for j in confirmed["judgements"]] == ["confirmed", "confirmed"]
    assert [j["rating"] for j in confirmed["judgements"]] == [5, 10] and confirmed["writer_rating"] == 5
    assert confirmed["judgements"][0]["judge_id"].startswith("a_")
    # the unchosen answer of a pairwise turn can fail too: the conversation ends with it, not with the pick
    assert open_["messages"][-1] == {"role": "assistant", "content": "Ooh, 9! Totally prime!"}
    assert open_["chosen"] is False and open_["target"] == "playful" and open_["slot"] == "Model A"
    assert open_["consensus"] == "unvalidated" and open_["judgements"] == []


def test_the_card_names_the_models_their_settings_and_the_protocol(chat_round):
    text = exports.card(chat_round["round"])
    assert "| `helpful` | local | SmolLM2-135M-Instruct | Answer briefly. | 0.3 | 96 |" in text
    assert "| `playful` | local | SmolLM2-135M-Instruct | Be playful. | 1.0 | 96 | 7 | yes |" in text
    assert "Blinding: on." in text and "Assignment: balanced" in text and "Scale: slider" in text
    assert "1 tie(s)" in text and "| `preferences.jsonl` | 2 |" in text and "| `red_team.jsonl` | 2 |" in text
    assert "`needless_refusal`" in text and 'load_dataset("json"' in text


def test_the_bundle_holds_the_three_files_and_the_card(chat_round, client):
    client.force_login(chat_round["owner"])
    response = client.get("/api/tasks/chat/rounds/1/chat/bundle/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert sorted(archive.namelist()) == ["README.md", "chat-round1-conversations.jsonl",
                                          "chat-round1-preferences.jsonl", "chat-round1-red_team.jsonl"]
    card = archive.read("README.md").decode()
    assert "| `conversations.jsonl` | 2 (5 turns) |" in card and "| `preferences.jsonl` | 2 |" in card
    pairs = [json.loads(line) for line in archive.read("chat-round1-preferences.jsonl").splitlines()]
    assert len(pairs) == 2


def test_each_dataset_downloads_as_json_lines_with_a_file_name(chat_round, client):
    client.force_login(chat_round["owner"])
    response = client.get("/api/tasks/chat/rounds/1/chat/red-team/")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/jsonl")
    assert 'filename="chat-round1-red_team.jsonl"' in response["Content-Disposition"]
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [r["category"] for r in rows] == ["wrong", "wrong"]
    card = client.get("/api/tasks/chat/rounds/1/chat/card/")
    assert card.status_code == 200 and card["Content-Type"].startswith("text/markdown")
    assert card.content.decode().startswith("# Chat demo: chat round 1")


@pytest.mark.parametrize("path, message", [
    ("/api/tasks/chat/rounds/1/chat/ratings/", "unknown chat dataset 'ratings'; choose one of: conversations, "
                                               "preferences, red-team, or card, or bundle"),
    ("/api/tasks/chat/rounds/9/chat/conversations/", "task 'chat' has no round '9'; its rounds: 1"),
    ("/api/tasks/chat/rounds/one/chat/conversations/", "task 'chat' has no round"),
    ("/api/tasks/sentiment/rounds/1/chat/conversations/", "is a sentiment task, not a chat task"),
])
def test_a_bad_request_says_what_is_wrong(chat_round, client, path, message):
    RoundFactory(task=TaskFactory(slug="sentiment", kind="sentiment"), number=1)
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    response = client.get(path)
    assert response.status_code == 400
    assert message in json.dumps(response.json())


def test_who_may_download_is_the_rule_of_exports_access(chat_round):
    """Persona by persona, the chat downloads answer as a researchers' snapshot of the same task would."""
    task = chat_round["task"]
    snapshot = DatasetSnapshot(task=task, round=chat_round["round"], audience=DatasetSnapshot.Audience.RESEARCHERS)
    researcher, outsider, suspended = UserFactory(username="res"), UserFactory(username="out"), UserFactory(
        username="sus")
    roles.grant(researcher, roles.RESEARCHER)
    roles.grant(suspended, roles.RESEARCHER)
    members.suspend(task, "sus", by=chat_round["owner"], reason="spam")
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    people = {"owner": chat_round["owner"], "researcher": researcher, "outsider": outsider, "writer":
              chat_round["writer"], "admin": admin, "suspended": suspended}
    got, rule = {}, {}
    for name, user in people.items():
        client = Client()
        client.force_login(user)
        got[name] = client.get("/api/tasks/chat/rounds/1/chat/card/").status_code
        rule[name] = 200 if exports_access.can_download(user, snapshot) else 403
    assert got == rule
    assert got["researcher"] == got["owner"] == got["admin"] == 200 and got["outsider"] == got["writer"] == 403
    assert Client().get("/api/tasks/chat/rounds/1/chat/card/").status_code == 401  # signed out: log in


def test_a_hidden_chat_task_does_not_exist_for_researchers(chat_round):
    task = chat_round["task"]
    task.visibility = "hidden"
    task.save()
    researcher = UserFactory(username="res")
    roles.grant(researcher, roles.RESEARCHER)
    client = Client()
    client.force_login(researcher)
    assert client.get("/api/tasks/chat/rounds/1/chat/conversations/").status_code == 404
    client.force_login(chat_round["owner"])
    assert client.get("/api/tasks/chat/rounds/1/chat/conversations/").status_code == 200


def test_the_queries_do_not_grow_with_the_conversations(chat_round, django_assert_max_num_queries):
    """Each dataset reads the round in batches with everything prefetched: the same few queries for 3 conversations
    as for 40 (no query per conversation, message or judgement)."""
    round_ = chat_round["round"]
    writer = chat_round["writer"]
    for n in range(40):
        convo = Conversation.objects.create(round=round_, writer=writer, scale="pairwise", targets=["playful", "helpful"],
                                            target_settings=SETTINGS)
        a, _ = exchange(convo, 0, f"Question {n}?", ("playful", "Maybe!"), ("helpful", "No."), chosen=1)
        Preference.objects.create(conversation=convo, turn=0, rater=writer, winner_slot=1)
        failure = Failure.objects.create(message=a, author=writer, category="wrong", reason="Vague.")
        Judgement.objects.create(failure=failure, judge=chat_round["owner"], verdict="confirmed")
    for name in exports.DATASETS:
        with django_assert_max_num_queries(8):
            assert len(list(exports.rows(round_, name))) >= 40


@pytest.mark.integration
def test_a_large_round_exports_in_bounded_time_and_memory(chat_round, tmp_path):
    """2,000 pairwise conversations of 3 turns (18,000 messages): the bundle is written in one pass of each file
    (docs/chat/exports.md, "Figures": run with -s to see the time)."""
    import time
    import tracemalloc

    round_, writer = chat_round["round"], chat_round["writer"]
    convos = Conversation.objects.bulk_create(
        Conversation(round=round_, writer=writer, scale="pairwise", targets=["playful", "helpful"],
                     target_settings=SETTINGS) for _ in range(2000))
    messages, preferences = [], []
    for convo in convos:
        for turn in range(3):
            messages.append(Message(conversation=convo, turn=turn, role="user", text=f"Question {turn} " * 10))
            messages += [Message(conversation=convo, turn=turn, role="assistant", slot=slot, target=target,
                                 text=f"An answer from {target}. " * 8, state="ready", chosen=slot == 1)
                         for slot, target in enumerate(convo.targets)]
            preferences.append(Preference(conversation=convo, turn=turn, rater=writer, winner_slot=turn % 2))
    Message.objects.bulk_create(messages, batch_size=2000)
    Preference.objects.bulk_create(preferences, batch_size=2000)
    started = time.perf_counter()
    with open(tmp_path / "bundle.zip", "wb") as sink:
        exports.write_bundle(round_, sink)
    seconds = time.perf_counter() - started
    tracemalloc.start()  # a second pass measures memory (tracing slows it down)
    with open(tmp_path / "again.zip", "wb") as sink:
        exports.write_bundle(round_, sink)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    archive = zipfile.ZipFile(tmp_path / "bundle.zip")
    pairs = archive.read("chat-round1-preferences.jsonl").splitlines()
    assert len(pairs) == 6000 + 2  # and the fixture's two
    print(f"\n2,002 conversations, {len(messages) + 15} messages: bundle in {seconds:.1f} s, "
          f"{(tmp_path / 'bundle.zip').stat().st_size / 2**20:.1f} MiB zipped, peak Python memory {peak:.0f} MiB")
    assert seconds < 120 and peak < 200
