"""Prompts for a small instruction-tuned model, and what is kept of its answers (pure text, no model).

- `opponent_prompt`: which label fits an example. The label words are said in the question and the answer is
  asked for right after a colon ("Label (negative or positive):"), so the model's first token is a label word's
  first token: `Provider.score` reads exactly that (zoo.llm.chat). Measured on 80 SST-2 *train* sentences with
  the packaged SmolLM2-135M: this completion-style line scored 0.64 (0.69 with an offset), an "Answer with one
  word" question 0.59 (never "positive"), a "Question/Answer" layout 0.41 (always "positive").
- `suggestion_prompt`: one new example with a given true label that a model would likely get wrong, about the
  shown context: the answer is started as pairs (an example's context, its labelled text) and one more pair opened
  for the shown context and label. People's texts enter it as data only (`safe_text`).
- `clean_candidates`: the 135M model often describes a text instead of writing one ("This review is…"), wraps it
  in quotes or a "Review:" label, runs on past max_tokens, or copies its examples or the context: those are cut or
  dropped; markup, links, control and format characters never reach a page (`plain_text`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    prefix: str  # the start of the answer: the examples as pairs, and the opening of one more for the context
    stop: tuple[str, ...] = ('"', "\n")


# --- what goes into a prompt from people's texts ---------------------------------------------------------------
# Few-shot examples are other writers' verified texts and the task's items: they reach every writer's prompt, so
# they are read as data, never as instructions. `safe_text` drops markup, links, addresses, control and format
# characters, and (for examples) any line that reads as an instruction to the model, and a whole text that changes
# who speaks (a chat-template token, a "System:" line); what is left is one line, cut at a word, its double quotes
# made single (the prompt quotes with double quotes).
_BLOCK = re.compile(r"<(script|style)\b[^>]{0,200}>.*?(?:</\1\s*>|$)", re.IGNORECASE | re.DOTALL)  # code, not text
_TAG = re.compile(r"<[^<>\n]{0,200}>|<\|[^|]{0,40}\|>")  # HTML/XML tags, chat-template tokens (<|im_start|>)
_MD_LINK = re.compile(r"!?\[([^\]\n]{0,200})\]\([^)\n]{0,500}\)")  # [text](address) -> text
_URL = re.compile(r"(?:\b[a-z][a-z0-9+.-]{1,15}://|\bwww\.)\S+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b|"
                  r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|ai|dev|info|biz|xyz|ru|cn|co|me|ly|gg)(?:/\S*)?\b",
                  re.IGNORECASE)
_MARKDOWN = re.compile(r"[`*_#>|~]{2,}|^\s*(?:#{1,6}|>|[-*+]|\d+[.)])\s+|`|(?<!\w)[*_]+(?=\w)|(?<=\w)[*_]+(?!\w)",
                       re.MULTILINE)
# A line that speaks to the model instead of being an example: a role or an order at its start, or an override
# anywhere ("… ignore the previous instructions …").
_ORDER = re.compile(
    r"^\W*(?:ignore|disregard|forget|override|instructions?|prompt|rules?|you\s+are\s+(?:now|an?\s+(?:ai|assistant|"
    r"language\s+model|chatbot|bot))|you\s+must|act\s+as|pretend|roleplay|from\s+now\s+on|new\s+(?:task|"
    r"instructions?|rules?)|respond|reply|answer\s+with|output|print|repeat|write|say|return|do\s+not|don't)\b|"
    r"\b(?:ignore|disregard|forget|override)\s+(?:\w+\s+){0,3}(?:instructions?|prompts?|rules?|above|previous|"
    r"prior|earlier)\b|\b(?:system|developer)\s+(?:prompt|message)\b", re.IGNORECASE)
# A text that changes who speaks (a chat-template token, a line opening with a role) is an injection as a whole:
# what follows the role is the attacker's, so none of it is used.
_ROLE = re.compile(r"<\|[^|]{0,40}\|>|^\W*(?:system|assistant|user|developer|human|ai)\s*(?::|$)",
                   re.IGNORECASE | re.MULTILINE)


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Cn") and ch not in "\n\t"


def plain_text(text: str) -> str:
    """`text` without markup, control and format characters (zero-width, bidirectional), in NFC: what a model's
    answer may put on a page, and what a person's text may put in a prompt. Lines are kept."""
    text = unicodedata.normalize("NFC", str(text or ""))
    text = _MD_LINK.sub(r"\1", _TAG.sub(" ", _BLOCK.sub(" ", text)))
    text = "".join(" " if ch == "\t" else ch for ch in text if not _invisible(ch))
    return _MARKDOWN.sub(" ", text)


def safe_text(text: str, limit: int = MAX_SHOT_CHARS, drop_orders: bool = True) -> str:
    """A person's text as a prompt may quote it (the module's rule above); "" when nothing is left."""
    if drop_orders and _ROLE.search(str(text or "")):
        return ""
    lines = [_URL.sub(" ", line) for line in plain_text(text).splitlines()]
    if drop_orders:
        lines = [line for line in lines if not _ORDER.search(line)]
    text = re.sub(r"\s+", " ", " ".join(lines)).strip().replace('"', "'")
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    return text if re.search(r"\w", text) else ""


def _title(word: str) -> str:
    return word[:1].upper() + word[1:]


def suggestion_prompt(instructions: str, context: Mapping[str, str] | None, intended_label: str,
                      label_words: Mapping[str, str] | None, examples: Sequence[Mapping[str, Any]],
                      what: str = "text") -> SuggestionPrompt:
    """A request for one new `what` whose true label is `intended_label`, about the shown `context`, that a model
    would likely get wrong. The answer is started for the model as pairs, each example's context and then its
    labelled text (`examples`: {"text", "label", "context"?}, the context a {field: text} mapping or a text), and
    one more pair opened for the shown context and the intended label, so the model writes about *this* context:
    measured with the 135M model on the sentiment demo's 30 contexts, 83 % of its suggestions named a content word
    of the context this way, against 6 % when the context was only said in the request and the examples were a
    plain list (docs/benchmarks/llm.md).

    Everything that varies per request (the context, the label) comes last, after the examples (label-independent,
    in the order given): a model server that caches prompt prefixes (llama.cpp does, per slot) reads the long
    common part once and only the last lines for each request. The examples and the context are read as data
    (`safe_text`); an example with nothing left is left out."""
    word = label_word(intended_label, label_words)
    guide = safe_text(instructions, limit=MAX_INSTRUCTIONS, drop_orders=False)
    names = [name for name in (context or {})] or ["context"]
    about = names[0].replace("_", " ")
    system = ("You write short example texts for a dataset that tests language models." +
              (f" The task: {guide}" if guide else ""))
    tricky = ("A careful reader sees the label at once, but the words could fool a model (irony, contrast, "
              "understatement).")
    user = (f"Write one {what} about the given {about} with the given label. {tricky} Each {what} is about its "
            f"own {about}: it names what the {about} is about." if context else
            f"Write one {what} with the given label. {tricky}")
    blocks = []
    for example in examples:
        text = safe_text(str(example.get("text", "")))
        if not text:
            continue
        lines = _context_lines(example.get("context"), names, drop_orders=True)
        blocks.append("\n".join([*lines, f'{_title(label_word(str(example["label"]), label_words))} {what}: "{text}"']))
    shown = _context_lines(context, names, drop_orders=False, limit=MAX_SHOT_CHARS * 2)
    blocks.append("\n".join([*shown, f'{_title(word)} {what}: "']))
    return SuggestionPrompt(system=system, user=user, prefix="\n\n".join(blocks))


def _context_lines(context: Mapping[str, Any] | str | None, names: Sequence[str], drop_orders: bool,
                   limit: int = MAX_SHOT_CHARS) -> list[str]:
    """A context as the prompt shows it: one `Name: "text"` line per field (a bare text under the first name)."""
    if context is None:
        return []
    fields = {names[0]: context} if isinstance(context, str) else dict(context)
    lines = []
    for name, value in fields.items():
        text = safe_text(str(value), limit=limit, drop_orders=drop_orders)
        if text:
            lines.append(f'{_title(str(name).replace("_", " "))}: "{text}"')
    return lines


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
    """The usable candidates, in order: tidied and plain (`plain_text`: no markup, control or format characters),
    no descriptions of a text, no links, no copies of the context (nor the context with a few words added) or of
    the few-shot examples, no duplicates (case and punctuation ignored), at most `max_chars` each (cut at a word)."""
    shown = [_key(str(v)) for v in (context or {}).values() if _key(str(v))]
    seen = set(shown) | {_key(e) for e in examples}
    kept = []
    for raw in texts:
        text = _tidy(re.sub(r"[^\S\n]+", " ", plain_text(str(raw or ""))))
        if len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0].rstrip(" ,;:")
        if len(text) < min_chars or _META.search(text) or len(text.split()) < 3 or _URL.search(text):
            continue
        key = _key(text)
        if not key or key in seen or any(len(c.split()) >= 4 and c in key for c in shown):
            continue
        seen.add(key)
        kept.append(text)
    return kept
