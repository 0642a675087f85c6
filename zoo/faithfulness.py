"""How true an explanation is: ERASER-style comprehensiveness of the word map, per sentence.

For each sentence: delete the k words the map credits most for the ensemble's answer, and k random words
(a seeded generator); the map "wins" when deleting its words lowers the ensemble's probability of that answer
more. Used by the faithfulness test (tests/modelzoo/test_explain_faithfulness.py) and the model-zoo benchmark.
Django-free; classification heads (the answer is a label).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zoo.explain import DEFAULT_METHOD, explain_ensemble


@dataclass
class Comprehensiveness:
    wins: float  # share of sentences where the top-k deletion lowered the answer's probability more
    mean_top: float  # mean drop in probability, top-k credited words deleted
    mean_random: float  # mean drop, k random words deleted
    rows: list[dict[str, Any]]


def ensemble_probability(predictors: Sequence[Any], text: str, label: str) -> float:
    return sum(p.predict([{"text": text}])[0]["probs"][label] for p in predictors) / len(predictors)


def comprehensiveness(predictors: Sequence[Any], sentences: Sequence[str], k: int = 3, seed: int = 0,
                      method: str = DEFAULT_METHOD) -> Comprehensiveness:
    rng = random.Random(seed)
    rows = []
    for sentence in sentences:
        words = sentence.split()
        result = explain_ensemble(list(predictors), {"text": sentence}, method)
        if [w["word"] for w in result["words"]] != words:
            raise ValueError(f"the map's words are not the sentence's whitespace words: {sentence!r}")
        label = result["target"]
        base = ensemble_probability(predictors, sentence, label)
        top = set(sorted(range(len(words)), key=lambda i: -result["words"][i]["score"])[:k])
        chance = set(rng.sample(range(len(words)), k))

        def without(dropped: set[int], words: list[str] = words, label: str = label) -> float:
            return ensemble_probability(predictors, " ".join(w for i, w in enumerate(words) if i not in dropped), label)

        rows.append({"sentence": sentence, "label": label, "top": base - without(top), "random": base - without(chance)})
    n = max(len(rows), 1)
    return Comprehensiveness(sum(r["top"] > r["random"] for r in rows) / n, sum(r["top"] for r in rows) / n,
                             sum(r["random"] for r in rows) / n, rows)


def held_out_sentences(rows: Sequence[dict[str, Any]], n: int = 40, min_words: int = 8, max_words: int = 30) -> list[str]:
    """The first `n` SST-2-style rows ({"sentence": ...}) of min..max whitespace words, in file order."""
    return [r["sentence"] for r in rows if min_words <= len(r["sentence"].split()) <= max_words][:n]
