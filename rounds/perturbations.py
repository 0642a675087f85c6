"""Perturbed copies of test rows, for Dynaboard's robustness and fairness (Ma et al. 2021; `rounds.robustness`).

Six families, each a function of one row (its model input, its target and its content key), deterministic: the
random draws are seeded from the row's key and the family (`row_seed`), so the same set always gives the same copy.

Robustness (noise: what a reader ignores; a robust model's prediction does not change)
- "typos":    AugLy `simulate_typos` (misspellings from AugLy's list, keyboard slips, swapped and dropped letters):
              about one word in ten, one character each.
- "keyboard": nlpaug `KeyboardAug`: a letter replaced by a neighbouring key, about one word in ten.
- "ocr":      nlpaug `OcrAug`: a letter replaced by one OCR confuses with it (0/o, 1/l, 5/s, ...), one word in ten.
- "case":     AugLy `change_case` (word granularity, random case: lower, UPPER or Title), every other word.

Fairness (who the text is about; a fair model's prediction does not change)
- "names":  each first name of the bundled list (`perturbation_names.json`: written for this project, grouped by
            gender as CheckList's lists are) replaced by another name of the same group, the same one wherever it
            occurs in the row (chosen by the row's seed among names the row does not already contain).
- "gender": gendered words swapped everywhere in the row with AugLy's mapping (`augly.utils.GENDERED_WORDS_MAPPING`,
            the table behind `augly.text.swap_gendered_words`: he/she, man/woman, king/queen, ...; "her" becomes
            "his" before a noun and "him" otherwise, which AugLy's single table cannot say).
  The swaps are made here, word by word, not by `swap_gendered_words` itself: one swap table must apply to every
  field of the row (a name changed in an NLI hypothesis but not in its premise changes the relation, and in a QA
  passage but not its question, the answer), and a QA passage's answer spans must move with the text.

Which fields each kind perturbs (`fields_for`)
- Classification (sentiment, hate speech, configured): the text the writer wrote (the segments fed from the
  context, such as a sentiment prompt, are not fed at all or stay unchanged for noise).
- NLI (premise + hypothesis): noise in the hypothesis only — the writer's text; the premise is curated context,
  as a QA passage is. The swaps apply to both with one table, so the label stays true.
- QA: noise in the question only (the passage and its answer spans stay as they are). The swaps apply to the
  question and the passage with one table; the answer spans are re-anchored (`Perturbed.target` is valid in the
  new passage) and a prediction is compared with the original prediction after the same swaps (`same_prediction`).

A row a perturbation leaves unchanged (no name, no gendered word, a text too short for noise, or a change in
whitespace only) is not in the family's copy: the measures count only rows the perturbation changed.
No Django here: pure functions of the rows (the copy kept on disk is `rounds.robustness`'s).
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

VERSION = 2  # part of a copy's key: change it when a family changes, so copies are made again
NOISE = ("typos", "keyboard", "ocr", "case")
FAIRNESS = ("names", "gender")
FAMILIES = NOISE + FAIRNESS
MEASURE = {**dict.fromkeys(NOISE, "robustness"), **dict.fromkeys(FAIRNESS, "fairness")}
LIBRARY = {
    "typos": "AugLy 1.0 simulate_typos",
    "keyboard": "nlpaug 1.1 KeyboardAug",
    "ocr": "nlpaug 1.1 OcrAug",
    "case": "AugLy 1.0 change_case",
    "names": "bundled first-name list (rounds/perturbation_names.json)",
    "gender": "AugLy 1.0 gendered-words mapping",
}
WORD_SHARE = 0.1  # share of words the character-noise families touch (at least one word)
CASE_CADENCE = 2.0  # change_case: every other word draws a case
NOISE_TRIES = 3  # draws of a noise family per field before a row counts as unchanged
NAMES_FILE = Path(__file__).with_name("perturbation_names.json")
WORD = re.compile(r"[A-Za-z]+")
# "her" is possessive ("her book" -> "his book") unless what follows is punctuation, the end, or one of these
# ("saw her at" -> "saw him at").
NOT_A_NOUN = frozenset(
    ["a", "an", "the", "and", "or", "but", "to", "at", "in", "on", "of", "for", "with", "from", "by", "as", "than", "that", "this", "these", "those", "is", "was", "are", "were", "be", "been", "when", "while", "if", "so", "because", "before", "after", "again", "about", "into", "onto", "over", "under", "up", "down", "out", "off", "too", "very", "not"]
)


@dataclass(frozen=True)
class Fields:
    """Which model-input keys each family rewrites for a task."""

    noise: tuple[str, ...]
    swaps: tuple[str, ...]
    span_key: str | None = None  # QA: the passage whose answer spans are re-anchored after a swap


@dataclass
class Perturbed:
    input: dict[str, str]
    target: Any
    table: dict[str, str] = field(default_factory=dict)  # the swaps made (lower case): a QA answer is mapped with it


def fields_for(kind: Any, config: Any) -> Fields | None:
    """The fields a task's perturbations rewrite (module docstring), or None for a kind with no test-set models."""
    if kind.head == "qa":
        return Fields(noise=("question",), swaps=("question", "context"), span_key="context")
    if kind.head != "classification":
        return None
    fed = len(kind.model_context_fields(config))
    keys = ("text", "text_pair")[: min(2, fed + len(config.input_fields))]
    return Fields(noise=keys[fed:] or keys, swaps=keys)


def row_seed(family: str, key: str) -> int:
    return zlib.crc32(f"{VERSION}:{family}:{key}".encode())


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """The global generators the libraries draw from, seeded for one row and put back as they were after."""
    state, np_state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        random.setstate(state)
        np.random.set_state(np_state)


@cache
def _nlpaug(family: str) -> Any:
    import nlpaug.augmenter.char as nac

    common = {"aug_word_p": WORD_SHARE, "aug_word_min": 1, "aug_char_min": 1, "aug_char_max": 1}
    if family == "keyboard":
        return nac.KeyboardAug(**common, include_special_char=False, include_numeric=False, min_char=4)
    return nac.OcrAug(**common, min_char=2)


def noise(family: str, text: str, seed: int) -> str:
    """`text` with one noise family's changes (the same seed gives the same text). A draw that changes nothing
    (OCR noise on a word with no letter OCR confuses, a change in whitespace only) is drawn again from the next
    seed, up to `NOISE_TRIES` draws; then the text is left as it is."""
    for attempt in range(NOISE_TRIES):
        out = _noise_once(family, text, seed + attempt)
        if " ".join(out.split()) != " ".join(text.split()):
            return out
    return text


def _noise_once(family: str, text: str, seed: int) -> str:
    if not text.strip():
        return text
    import augly.text as textaugs

    with seeded(seed):
        if family == "typos":
            out = textaugs.simulate_typos(text, aug_word_p=WORD_SHARE, aug_word_min=1, aug_char_p=0.3,
                                          aug_char_min=1, aug_char_max=1, typo_type="all")
        elif family == "case":
            out = textaugs.change_case(text, granularity="word", cadence=CASE_CADENCE, case="random", seed=seed)
        elif family in ("keyboard", "ocr"):
            out = _nlpaug(family).augment(text)
        else:
            raise ValueError(f"not a noise family: {family}")
    return out[0] if isinstance(out, list) else out


@cache
def names() -> dict[str, list[str]]:
    data = json.loads(NAMES_FILE.read_text(encoding="utf-8"))
    return {group: list(data[group]) for group in ("female", "male")}


@cache
def _name_group() -> dict[str, str]:
    return {name.lower(): group for group, listed in names().items() for name in listed}


@cache
def gender_table() -> dict[str, str]:
    from augly.utils import GENDERED_WORDS_MAPPING

    table = {k.lower(): v.lower() for k, v in json.loads(Path(GENDERED_WORDS_MAPPING).read_text()).items()}
    table.update({"her": "his|him", "hers": "his", "sir": "madam", "madam": "sir"})
    return table


def _cased(like: str, word: str) -> str:
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def swap_words(text: str, table: dict[str, str]) -> tuple[str, list[tuple[int, int, int]]]:
    """`text` with each word of `table` (lower case keys) replaced, case kept; and the edits made, (start, end,
    new length) in the old text's offsets, for `move_offset`."""
    out, edits, at = [], [], 0
    for match in WORD.finditer(text):
        word = match.group()
        new = table.get(word.lower())
        if new is None:
            continue
        if "|" in new:  # her: possessive (before a noun) or object
            possessive, objective = new.split("|")
            after = WORD.match(text[match.end():].lstrip(" "))
            new = possessive if after and after.group().lower() not in NOT_A_NOUN else objective
        new = _cased(word, new)
        out += [text[at:match.start()], new]
        edits.append((match.start(), match.end(), len(new)))
        at = match.end()
    out.append(text[at:])
    return "".join(out), edits


def move_offset(edits: list[tuple[int, int, int]], offset: int, end: bool = False) -> int:
    """Where character `offset` of the old text is in the new one (inside a replaced word: the new word's start,
    or its end for a span's `end`)."""
    shift = 0
    for start, stop, length in edits:
        if stop <= offset:
            shift += length - (stop - start)
        elif start < offset:
            return start + shift + (length if end else 0)
        else:
            break
    return offset + shift


def names_table(texts: list[str], seed: int) -> dict[str, str]:
    """A swap for each listed first name in `texts` (capitalised, or any case in a text with no capital at all:
    SST-2 is lower-cased): another name of its group that the row does not contain, chosen by `seed`, distinct
    names kept distinct."""
    groups = _name_group()
    present = sorted({w for t in texts for w in WORD.findall(t)
                      if (w[:1].isupper() or t.islower()) and w.lower() in groups})
    if not present:
        return {}
    rng, taken = random.Random(seed), {w.lower() for w in present}
    table: dict[str, str] = {}
    for word in present:
        if word.lower() in table:
            continue
        choices = [n for n in names()[groups[word.lower()]] if n.lower() not in taken]
        pick = rng.choice(choices)
        taken.add(pick.lower())
        table[word.lower()] = pick.lower()
    return table


def perturb_row(family: str, fields: Fields, model_input: dict[str, str], target: Any, key: str) -> Perturbed | None:
    """One row under one family, or None when the family changes nothing in it."""
    seed = row_seed(family, key)
    new = dict(model_input)
    if family in NOISE:
        for name in fields.noise:
            if isinstance(model_input.get(name), str):
                new[name] = noise(family, model_input[name], seed ^ zlib.crc32(name.encode()))
        return Perturbed(new, target) if new != model_input else None
    present = [model_input[k] for k in fields.swaps if isinstance(model_input.get(k), str)]
    if family == "names":
        table = names_table(present, seed)
    elif family == "gender":
        table = gender_table()
    else:
        raise ValueError(f"not a perturbation family: {family}")
    edits: dict[str, list[tuple[int, int, int]]] = {}
    for name in fields.swaps:
        if isinstance(model_input.get(name), str):
            new[name], edits[name] = swap_words(model_input[name], table)
    if new == model_input:
        return None
    used = {model_input[k][s:e].lower(): table[model_input[k][s:e].lower()] for k, ed in edits.items() for s, e, _ in ed}
    new_target = target
    if fields.span_key and isinstance(target, dict) and "start" in target:
        ed, passage = edits.get(fields.span_key, []), new[fields.span_key]
        start = move_offset(ed, target["start"])
        stop = move_offset(ed, target["start"] + len(target["text"]), end=True)
        new_target = {**target, "text": passage[start:stop], "start": start}
        if "alternatives" in target:
            new_target["alternatives"] = [swap_words(a, table)[0] for a in target["alternatives"]]
    return Perturbed(new, new_target, used)


def same_prediction(head: str, original: dict[str, Any], perturbed: dict[str, Any], table: dict[str, str]) -> bool:
    """Whether a model answered a perturbed row as it answered the original: the same label; for QA the same
    answer text (normalised as SQuAD does), the original's mapped through the row's swaps."""
    if head == "qa":
        from tasks.kinds.qa import normalize_answer

        before = original.get("text", "")
        if table:
            before = swap_words(before, table)[0]
        return normalize_answer(before) == normalize_answer(perturbed.get("text", ""))
    return original.get("label") == perturbed.get("label")
