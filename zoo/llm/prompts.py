"""Prompts for a small instruction-tuned model, and what is kept of its answers (pure text, no model).

- `opponent_prompt`: which label fits an example. The label words are said in the question and the answer is
  asked for right after a colon ("Label (negative or positive):"), so the model's first token is a label word's
  first token: `Provider.score` reads exactly that (zoo.llm.chat). Measured on 80 SST-2 *train* sentences with
  the packaged SmolLM2-135M: this completion-style line scored 0.64 (0.69 with an offset), an "Answer with one
  word" question 0.59 (never "positive"), a "Question/Answer" layout 0.41 (always "positive").
- `suggestion_prompt`: one new example with a given true label that a model would likely get wrong, about the
  shown context: the answer is started as a list of the round's verified fooling examples for the model to extend.
- `clean_candidates`: the 135M model often describes a text instead of writing one ("This review is…"), wraps it
  in quotes or a "Review:" label, runs on past max_tokens, or copies its examples: those are cut or dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_INSTRUCTIONS = 400  # characters of the task's instructions put in a prompt
MAX_SHOT_CHARS = 300


def label_word(label: str, overrides: Mapping[str, str] | None = None) -> str:
    """How a label is said to the model: an override, else the label with _ and - as spaces, in lower case."""
    if overrides and overrides.get(label):
        return str(overrides[label]).strip()
    return re.sub(r"[_-]+", " ", label).strip().lower()


def _instructions(text: str) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"[#*`>|]", " ", text or "")).strip()
    return text[:MAX_INSTRUCTIONS].rsplit(" ", 1)[0] + "…" if len(text) > MAX_INSTRUCTIONS else text


def _quoted(text: str) -> str:
    return '"' + re.sub(r"\s+", " ", str(text)).strip().replace('"', "'") + '"'


def opponent_prompt(instructions: str, labels: Sequence[str], model_input: Mapping[str, str],
                    label_words: Mapping[str, str] | None = None,
                    field_names: Sequence[str] = ("Text", "Second text")) -> tuple[str, str]:
    """(system, user) asking which label fits `model_input` ({"text"} or {"text", "text_pair"}). A QA input
    ({"question", "context"}) has no label to score: ValueError."""
    if "text" not in model_input:
        raise ValueError(f"a language model opponent scores labels; this input has no text to label "
                         f"({', '.join(sorted(model_input))}): extractive QA has no opponent")
    words = [label_word(label, label_words) for label in labels]
    guide = _instructions(instructions)
    system = "You classify texts for a dataset." + (f" The task: {guide}" if guide else "")
    lines = [f"{field_names[0]}: {_quoted(model_input['text'])}"]
    if model_input.get("text_pair"):
        lines.append(f"{field_names[1] if len(field_names) > 1 else 'Second text'}: {_quoted(model_input['text_pair'])}")
    choices = ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]
    lines.append(f"Label ({choices}):")
    return system, "\n".join(lines)


@dataclass(frozen=True)
class SuggestionPrompt:
    system: str
    user: str
    prefix: str  # the start of the answer: the examples as a list, and the opening of one more item
    stop: tuple[str, ...] = ('"', "\n")


def suggestion_prompt(instructions: str, context: Mapping[str, str] | None, intended_label: str,
                      label_words: Mapping[str, str] | None, examples: Sequence[Mapping[str, str]],
                      what: str = "text") -> SuggestionPrompt:
    """A request for one new `what` whose true label is `intended_label` and that a model would likely get wrong,
    about the shown `context`. The answer is started for the model as a list of `examples` ({"text", "label"}:
    the round's verified fooling examples with that label first) and the opening quote of one more item, so even a
    small model writes one sentence of the kind and closes the quote (measured with the 135M model: asked in plain
    words it mostly described or copied the topic; continuing the list it wrote a new sentence 11 times in 12)."""
    word = label_word(intended_label, label_words)
    guide = _instructions(instructions)
    system = ("You write short example texts for a dataset that tests language models." +
              (f" The task: {guide}" if guide else ""))
    shown = " ".join(str(v) for v in (context or {}).values() if str(v).strip())[: MAX_SHOT_CHARS * 2]
    about = f' The next one is about this: {_quoted(shown)}' if shown else ""
    user = (f"Write tricky {word} {what}s: a careful reader sees at once that the label is {word}, but the words "
            f"could fool a model (irony, contrast, understatement).{about}")
    same = [e for e in examples if label_word(e["label"], label_words) == word] or list(examples)
    items = [f"- {_quoted(e['text'][:MAX_SHOT_CHARS])}" for e in same[:4]]
    return SuggestionPrompt(system=system, user=user, prefix="\n".join([*items, '- "']))


_PREFIX = re.compile(r"^\s*(?:sure[,!.]?|okay[,!.]?|here(?:'s| is)[^:]*:|(?:new )?(?:text|review|sentence|example|"
                     r"hypothesis|answer|tweet|response)\s*(?:\d+)?\s*[:\-–])\s*", re.IGNORECASE)
_META = re.compile(r"^\s*(?:this|the|that|my|a|an)\s+(?:new\s+)?(?:review|text|sentence|example|statement|tweet|"
                   r"hypothesis)\b|^\s*(?:as an ai|i (?:cannot|can't|am unable))|^\s*(?:label|sentiment)\s*:",
                   re.IGNORECASE)
_LABEL_TAIL = re.compile(r"\s*(?:→|->|\(label[^)]*\)|label\s*:.*)$", re.IGNORECASE)


def _tidy(text: str) -> str:
    text = text.replace("\r", "").strip()
    text = re.split(r"\n\s*\n|\n", text, maxsplit=1)[0]  # the first line or paragraph
    for _ in range(2):
        text = _PREFIX.sub("", text).strip()
        text = text.strip().strip('"“”‘’\'`*').strip()
    text = _LABEL_TAIL.sub("", text).strip()
    if text and text[-1] not in ".!?\"')…":  # cut off by max_tokens: keep the whole sentences
        ends = [m.end() for m in re.finditer(r"[.!?…](?=\s|$)", text)]
        text = text[: ends[-1]] if ends else text
    return re.sub(r"\s+", " ", text).strip().strip('"“”')


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def clean_candidates(texts: Sequence[str], *, context: Mapping[str, str] | None = None,
                     examples: Sequence[str] = (), min_chars: int = 8, max_chars: int = 500) -> list[str]:
    """The usable candidates, in order: tidied, no descriptions of a text, no copies of the context or of the
    few-shot examples, no duplicates (case and punctuation ignored), at most `max_chars` each."""
    seen = {_key(str(v)) for v in (context or {}).values()} | {_key(e) for e in examples}
    kept = []
    for raw in texts:
        text = _tidy(str(raw or ""))[:max_chars].strip()
        if len(text) < min_chars or _META.search(text) or len(text.split()) < 3:
            continue
        key = _key(text)
        if not key or key in seen:
            continue
        seen.add(key)
        kept.append(text)
    return kept
