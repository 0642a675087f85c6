"""A chat round as datasets (docs/chat/exports.md): what researchers download of a chat task.

Three JSON Lines files and a dataset card, built from the chat app's own records (never from `exports`, which
reads chat and sits above it; the classification datasets' splits and snapshots do not apply to conversations):

* **conversations** — one row per conversation in the chat-messages format Hugging Face chat templates read:
  `messages` alternate `user` and `assistant`, and the assistant's message of each turn is the answer the
  conversation went on with (`Message.chosen`: the only one on the slider scale, the writer's pick on the pairwise
  one). Per-turn metadata (`turns`) names the target behind each answer and carries the other answer of a pairwise
  turn, the ratings and the writer's preference.
* **preferences** — one row per decided pairwise turn in the conversational preference format of TRL's
  `DPOTrainer`: `prompt` (the messages up to and including the user's), `chosen` and `rejected` (one assistant
  message each). Ties and turns without two ready answers are left out (the card says how many). No system
  message is put in `prompt`: the two answers came from targets with different system prompts, so either one
  would misstate how the other was made; the card lists them.
* **red-team** — one row per answer a writer marked as failing: the conversation up to and including that answer
  (the earlier turns as the conversation went on, then the user's message and the failing answer, which may be the
  unchosen one of a pairwise turn), the category and reason the writer gave, every validator's judgement and the
  consensus.

People appear under a pseudonym stable within the task (`person_id`, the same salted HMAC as the classification
datasets' `annotator_id`); target names are shown in full (blinding is for writers, not for the data).
Only complete turns are exported: a turn whose answers are still pending or failed ends a conversation's messages.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch

from accounts import pseudonyms
from chat.models import Conversation, Failure, Judgement, Message, Rating
from tasks.kinds.chat import ChatSettings, slot_name
from tasks.models import Round, Task

SETTING_KEYS = ("provider", "model", "system_prompt", "temperature", "max_tokens", "seed")
CHUNK = 200  # conversations read per query batch


@dataclass(frozen=True)
class Dataset:
    name: str
    filename: str  # within a bundle, and after the round's prefix in a single download
    description: str


DATASETS: dict[str, Dataset] = {
    "conversations": Dataset("conversations", "conversations.jsonl",
                             "one row per conversation: `messages` in the chat-messages format, the answer the "
                             "conversation went on with per turn, and per-turn metadata"),
    "preferences": Dataset("preferences", "preferences.jsonl",
                           "one row per decided pairwise turn: `prompt`, `chosen`, `rejected` (TRL's "
                           "conversational preference format; ties left out)"),
    "red-team": Dataset("red-team", "red_team.jsonl",
                        "one row per answer marked as failing: the conversation up to it, its category and "
                        "reason, the validators' judgements and the consensus"),
}


class UnknownDataset(ValueError):
    pass


def get_dataset(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownDataset(f"unknown chat dataset {name[:40]!r}; choose one of: {', '.join(DATASETS)}, "
                             "or card, or bundle") from None


def person_id(task: Task, user_id: int) -> str:
    """The person's pseudonym in this task's downloads: the classification datasets' `annotator_id` rule
    (accounts.pseudonyms), so a person has one pseudonym per task in every download."""
    return pseudonyms.person_id(task.pk, user_id)


# --- one conversation, read once -------------------------------------------------------------------------------


@dataclass
class Turn:
    number: int
    user: Message | None = None
    answers: dict[int, Message] = field(default_factory=dict)  # slot -> assistant message

    def ready(self) -> list[Message]:
        return [m for _, m in sorted(self.answers.items()) if m.state == Message.State.READY]

    @property
    def chosen(self) -> Message | None:
        """The answer the conversation went on with: the flagged one, else the first ready slot (a pairwise turn
        not decided yet, or a tie: the model stores slot 0 as chosen then)."""
        ready = self.ready()
        return next((m for m in ready if m.chosen), ready[0] if ready else None)

    @property
    def complete(self) -> bool:
        return self.user is not None and self.chosen is not None


class Reader:
    """A conversation's turns, ratings and preferences, from prefetched rows (no query per message)."""

    def __init__(self, convo: Conversation):
        self.convo = convo
        self.turns: list[Turn] = []
        by_number: dict[int, Turn] = {}
        for message in convo.messages.all():
            turn = by_number.setdefault(message.turn, Turn(message.turn))
            if message.role == Message.Role.USER:
                turn.user = message
            elif message.slot is not None:
                turn.answers[message.slot] = message
        for number in sorted(by_number):
            if not by_number[number].complete:
                break  # a turn still pending or failed ends what can be exported
            self.turns.append(by_number[number])
        writer = convo.writer_id
        self.scores = {r.message_id: r.score for m in convo.messages.all() for r in m.ratings.all()
                       if r.rater_id == writer}
        self.preferences = {p.turn: p for p in convo.preferences.all() if p.rater_id == writer}

    def history(self, before: int) -> list[dict[str, str]]:
        """The messages of the complete turns before turn `before`, as the conversation went on."""
        out: list[dict[str, str]] = []
        for turn in self.turns:
            if turn.number >= before:
                break
            out += [{"role": "user", "content": turn.user.text}, {"role": "assistant", "content": turn.chosen.text}]
        return out

    def turn(self, number: int) -> Turn | None:
        return next((t for t in self.turns if t.number == number), None)

    def name(self, slot: int | None) -> str:
        targets = self.convo.targets or []
        return targets[slot] if slot is not None and slot < len(targets) else ""


def conversations_of(round: Round) -> Iterator[Conversation]:
    """The round's conversations with everything a row needs, in batches (bounded memory on large rounds)."""
    messages = Message.objects.order_by("turn", "role", "slot").prefetch_related(
        Prefetch("ratings", queryset=Rating.objects.all()),
        Prefetch("failure", queryset=Failure.objects.prefetch_related(
            Prefetch("judgements", queryset=Judgement.objects.order_by("pk")))))
    queryset = (Conversation.objects.filter(round=round).order_by("pk")
                .prefetch_related(Prefetch("messages", queryset=messages), "preferences"))
    return queryset.iterator(chunk_size=CHUNK)


def settings_rows(convo: Conversation) -> list[dict[str, Any]]:
    """The targets' settings when the conversation began, one row per target in slot order (every key present)."""
    kept = convo.target_settings or {}
    return [{"name": name, **{key: (kept.get(name) or {}).get(key) for key in SETTING_KEYS}}
            for name in convo.targets or []]


# --- the three datasets ---------------------------------------------------------------------------------------


def conversation_rows(round: Round) -> Iterator[dict[str, Any]]:
    task = round.task
    for convo in conversations_of(round):
        reader = Reader(convo)
        if not reader.turns:
            continue
        yield conversation_row(task, round, reader)


def conversation_row(task: Task, round: Round, reader: Reader) -> dict[str, Any]:
    convo = reader.convo
    turns, ratings, failures = [], [], []
    for turn in reader.turns:
        chosen = turn.chosen
        others = [m for m in turn.ready() if m.pk != chosen.pk]
        other = others[0] if others else None
        preference = reader.preferences.get(turn.number)
        turns.append({
            "turn": turn.number,
            "target": chosen.target or reader.name(chosen.slot),
            "slot": slot_name(chosen.slot),
            "model": chosen.model,
            "rating": reader.scores.get(chosen.pk),
            "other": None if other is None else {
                "target": other.target or reader.name(other.slot), "slot": slot_name(other.slot),
                "model": other.model, "content": other.text, "rating": reader.scores.get(other.pk)},
            "preference": None if preference is None else (
                "tie" if preference.winner_slot is None else reader.name(preference.winner_slot)),
            "preference_reason": preference.reason if preference else "",
        })
        for message in turn.answers.values():
            if message.pk in reader.scores:
                ratings.append({"turn": turn.number, "target": message.target or reader.name(message.slot),
                                "score": reader.scores[message.pk]})
            failure = _failure(message)
            if failure is not None:
                failures.append({"turn": turn.number, "target": message.target or reader.name(message.slot),
                                 "category": failure.category, "consensus": failure.consensus})
    messages = reader.history(reader.turns[-1].number + 1)
    return {
        "id": f"{task.slug}-r{round.number}-c{convo.pk}",
        "task": task.slug,
        "round": round.number,
        "conversation_id": convo.pk,
        "writer_id": person_id(task, convo.writer_id),
        "scale": convo.scale,
        "blinded": convo.blinded,
        "state": convo.state,
        "targets": list(convo.targets or []),
        "target": convo.targets[0] if convo.scale == Conversation.Scale.SLIDER and convo.targets else None,
        "messages": messages,
        "turns": turns,
        "ratings": ratings,
        "failures": failures,
        "target_settings": settings_rows(convo),
        "created_at": convo.created_at.isoformat(),
    }


def _failure(message: Message) -> Failure | None:
    try:
        return message.failure
    except Failure.DoesNotExist:
        return None


@dataclass
class PreferenceCounts:
    pairs: int = 0
    ties: int = 0
    undecided: int = 0  # pairwise turns the writer has not judged yet
    incomplete: int = 0  # a winner named, but one of the two answers is not ready


def preference_rows(round: Round, counts: PreferenceCounts | None = None) -> Iterator[dict[str, Any]]:
    """TRL's conversational preference rows: {"prompt": [messages], "chosen": [assistant], "rejected": [assistant]}
    (https://huggingface.co/docs/trl/dataset_formats, "Preference"). Ties are left out: a tie says neither answer
    is preferred, which DPO cannot learn from."""
    counts = counts if counts is not None else PreferenceCounts()
    task = round.task
    for convo in conversations_of(round):
        if convo.scale != Conversation.Scale.PAIRWISE:
            continue
        reader = Reader(convo)
        for turn in reader.turns:
            preference = reader.preferences.get(turn.number)
            if preference is None:
                counts.undecided += 1
                continue
            if preference.winner_slot is None:
                counts.ties += 1
                continue
            ready = {m.slot: m for m in turn.ready()}
            winner = ready.get(preference.winner_slot)
            losers = [m for slot, m in ready.items() if slot != preference.winner_slot]
            if winner is None or not losers:
                counts.incomplete += 1
                continue
            loser = losers[0]
            counts.pairs += 1
            yield {
                "id": f"{task.slug}-r{round.number}-c{convo.pk}-t{turn.number}",
                "conversation_id": convo.pk,
                "turn": turn.number,
                "prompt": [*reader.history(turn.number), {"role": "user", "content": turn.user.text}],
                "chosen": [{"role": "assistant", "content": winner.text}],
                "rejected": [{"role": "assistant", "content": loser.text}],
                "chosen_target": winner.target or reader.name(winner.slot),
                "rejected_target": loser.target or reader.name(loser.slot),
                "chosen_model": winner.model,
                "rejected_model": loser.model,
                "reason": preference.reason,
                "writer_id": person_id(task, convo.writer_id),
            }


def red_team_rows(round: Round) -> Iterator[dict[str, Any]]:
    task = round.task
    for convo in conversations_of(round):
        reader = Reader(convo)
        marked = [m for turn in reader.turns for m in turn.answers.values() if _failure(m) is not None]
        if not marked:
            continue
        for message in sorted(marked, key=lambda m: (m.turn, m.slot)):
            failure, turn = _failure(message), reader.turn(message.turn)
            yield {
                "id": f"{task.slug}-r{round.number}-f{failure.pk}",
                "failure_id": failure.pk,
                "conversation_id": convo.pk,
                "turn": message.turn,
                "target": message.target or reader.name(message.slot),
                "slot": slot_name(message.slot),
                "model": message.model,
                "chosen": message.chosen,
                "messages": [*reader.history(message.turn), {"role": "user", "content": turn.user.text},
                             {"role": "assistant", "content": message.text}],
                "category": failure.category,
                "reason": failure.reason,
                "author_id": person_id(task, failure.author_id),
                "writer_rating": reader.scores.get(message.pk),
                "judgements": [{"judge_id": person_id(task, j.judge_id), "verdict": j.verdict,
                                "category": j.category, "rating": j.rating, "reason": j.reason, "expert": j.expert}
                               for j in failure.judgements.all()],
                "consensus": failure.consensus,
                "decided_category": failure.decided_category,
                "decided_by_expert": failure.decided_by_expert,
                "created_at": failure.created_at.isoformat(),
                "decided_at": failure.decided_at.isoformat() if failure.decided_at else None,
            }


def rows(round: Round, name: str, counts: PreferenceCounts | None = None) -> Iterator[dict[str, Any]]:
    dataset = get_dataset(name).name
    if dataset == "conversations":
        return conversation_rows(round)
    if dataset == "preferences":
        return preference_rows(round, counts)
    return red_team_rows(round)


def jsonl(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    for record in records:
        yield (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


# --- the dataset card -----------------------------------------------------------------------------------------


def models_used(round: Round) -> list[dict[str, Any]]:
    """Each target's settings as conversations recorded them (one row per distinct setting of a name), and the
    task's current targets that no conversation met yet (marked `used: False`)."""
    seen: dict[str, dict[str, Any]] = {}
    for convo in Conversation.objects.filter(round=round).only("targets", "target_settings").iterator():
        for row in settings_rows(convo):
            seen.setdefault(json.dumps(row, sort_keys=True, default=str), {**row, "used": True})
    configured = chat_settings(round.task)
    names = {row["name"] for row in seen.values()}
    for target in configured.targets:
        if target.name not in names:
            seen[target.name] = {"name": target.name, "provider": target.provider.provider,
                                 "model": target.provider.model or "", "system_prompt": target.system_prompt,
                                 "temperature": target.temperature, "max_tokens": target.max_tokens,
                                 "seed": target.seed, "used": False}
    return sorted(seen.values(), key=lambda r: (not r["used"], r["name"]))


def chat_settings(task: Task) -> ChatSettings:
    return task.typed_config.chat


@dataclass
class CardFigures:
    conversations: int = 0
    turns: int = 0
    preferences: PreferenceCounts = field(default_factory=PreferenceCounts)
    failures: int = 0
    consensus: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)
    first: str | None = None
    last: str | None = None


def figures(round: Round) -> CardFigures:
    out = CardFigures()
    for row in conversation_rows(round):
        out.conversations += 1
        out.turns += len(row["turns"])
        out.first = min(out.first or row["created_at"], row["created_at"])
        out.last = max(out.last or row["created_at"], row["created_at"])
    for _ in preference_rows(round, out.preferences):
        pass
    for row in red_team_rows(round):
        out.failures += 1
        out.consensus[row["consensus"]] += 1
        out.categories[row["category"]] += 1
    return out


def _cell(value: Any) -> str:
    text = "—" if value in (None, "") else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def card(round: Round, shown: CardFigures | None = None) -> str:
    """The dataset card (Markdown): what each file holds, which models answered under which settings, and the
    protocol (blinding, assignment, scale) that produced the data."""
    task, protocol = round.task, chat_settings(round.task)
    shown = shown or figures(round)
    prefs = shown.preferences
    slug = f"{task.slug}-round{round.number}"
    lines = [
        f"# {task.name}: chat round {round.number}",
        "",
        f"Conversations of writers with language models on the task `{task.slug}` (round {round.number}, "
        f"{round.get_status_display().lower()}), their ratings, preferences, and the answers they marked as failing, "
        "with the validators' judgements.",
        "",
        "## Files",
        "",
        "| file | rows | what a row is |",
        "|---|---|---|",
        f"| `{DATASETS['conversations'].filename}` | {shown.conversations} ({shown.turns} turns) | "
        f"{DATASETS['conversations'].description} |",
        f"| `{DATASETS['preferences'].filename}` | {prefs.pairs} | {DATASETS['preferences'].description} |",
        f"| `{DATASETS['red-team'].filename}` | {shown.failures} | {DATASETS['red-team'].description} |",
        "",
        f"Preference pairs left out: {prefs.ties} tie(s) (neither answer preferred: nothing for DPO to learn), "
        f"{prefs.undecided} pairwise turn(s) not judged yet, {prefs.incomplete} with one answer missing.",
        "",
        "Marked failures by consensus: " + (", ".join(f"{k} {v}" for k, v in sorted(shown.consensus.items()))
                                            or "none yet") + ".",
        "",
        "## Models",
        "",
        "Writers saw the targets as " + ("\"Model A\", \"Model B\", … (blinded); " if protocol.blinded else
                                         "their names (not blinded); ")
        + "the files name them. Settings are those recorded when each conversation began.",
        "",
        "| target | provider | model | system prompt | temperature | max_tokens | seed | in this round |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in models_used(round):
        lines.append(f"| `{row['name']}` | {_cell(row['provider'])} | {_cell(row['model'])} | "
                     f"{_cell(row['system_prompt'])} | {_cell(row['temperature'])} | {_cell(row['max_tokens'])} | "
                     f"{_cell(row['seed'])} | {'yes' if row['used'] else 'no (configured, not met yet)'} |")
    scale = ("slider: one target per conversation, each answer rated 0-100" if protocol.scale == "slider" else
             "pairwise: two targets answer each message side by side; the writer picks the better one or a tie, and "
             "the conversation goes on with the pick (slot 0 on a tie)")
    assignment = ("balanced: each writer meets the targets they met least so far" if protocol.assignment == "balanced"
                  else "random: targets drawn uniformly at random per conversation")
    categories = ", ".join(f"`{name}`" for name, _ in protocol.categories())
    lines += [
        "",
        "## Protocol",
        "",
        f"- Blinding: {'on' if protocol.blinded else 'off'}.",
        f"- Assignment: {assignment}.",
        f"- Scale: {scale}.",
        f"- At most {protocol.max_turns} messages per conversation, {protocol.max_message_chars} characters each; "
        f"the model sees the last {protocol.history_turns} exchanges.",
        f"- Failure categories: {categories}. A marked answer is judged by validators; `consensus` is their decision "
        "(or an expert's override).",
        "- Only complete turns are exported (a turn whose answers are pending or failed ends a conversation).",
        "- People are pseudonymous (`writer_id`, `author_id`, `judge_id`: stable within this task only).",
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        f'conversations = load_dataset("json", data_files="{slug}-{DATASETS["conversations"].filename}")["train"]',
        f'pairs = load_dataset("json", data_files="{slug}-{DATASETS["preferences"].filename}")["train"]  '
        "# DPOTrainer(train_dataset=pairs)",
        f'red_team = load_dataset("json", data_files="{slug}-{DATASETS["red-team"].filename}")["train"]',
        "```",
        "",
        f"Conversations from {shown.first or '—'} to {shown.last or '—'}.",
        "",
    ]
    return "\n".join(lines)


# --- a bundle -------------------------------------------------------------------------------------------------


def write_bundle(round: Round, sink) -> None:
    """A zip of the three files and the card (README.md), written to `sink` (a file opened for writing)."""
    prefix = f"{round.task.slug}-round{round.number}"
    shown = CardFigures()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, dataset in DATASETS.items():
            with bundle.open(f"{prefix}-{dataset.filename}", "w") as member:
                for chunk in jsonl(_counting(rows(round, name, shown.preferences), name, shown)):
                    member.write(chunk)
        bundle.writestr("README.md", card(round, shown))


def _counting(records: Iterator[dict[str, Any]], name: str, shown: CardFigures) -> Iterator[dict[str, Any]]:
    """Gather the card's figures while the files are written (no second pass)."""
    for record in records:
        if name == "conversations":
            shown.conversations += 1
            shown.turns += len(record["turns"])
            shown.first = min(shown.first or record["created_at"], record["created_at"])
            shown.last = max(shown.last or record["created_at"], record["created_at"])
        elif name == "red-team":
            shown.failures += 1
            shown.consensus[record["consensus"]] += 1
            shown.categories[record["category"]] += 1
        yield record


def bundle_bytes(round: Round) -> bytes:
    buffer = io.BytesIO()
    write_bundle(round, buffer)
    return buffer.getvalue()
