"""Ensemble aggregation strategies: one function per strategy, in a registry.

A strategy takes the members' predictions for one input (each a ClassPrediction or SpanPrediction, QA ones with
their `candidates`) and returns the ensemble's prediction in the same shape. Each head names its default
(`HeadSpec.default_strategy`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zoo.registry import Registry

Strategy = Callable[[list[dict[str, Any]]], dict[str, Any]]
STRATEGIES: Registry[Strategy] = Registry("aggregation strategy")


def get_strategy(name: str) -> Strategy:
    return STRATEGIES.lookup(name)


@STRATEGIES.register("mean_probs")
def mean_probs(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """Average the class probabilities; the label is the arg-max (ties: the first label in the members' order)."""
    if not predictions:
        raise ValueError("no member predictions to aggregate")
    labels = list(predictions[0]["probs"])
    probs = {label: sum(p["probs"].get(label, 0.0) for p in predictions) / len(predictions) for label in labels}
    best = max(labels, key=lambda label: probs[label])
    return {"label": best, "probs": probs}


@STRATEGIES.register("majority_vote")
def majority_vote(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """Most members' label; ties go to the higher mean probability."""
    mean = mean_probs(predictions)
    votes = {label: sum(p["label"] == label for p in predictions) for label in mean["probs"]}
    best = max(mean["probs"], key=lambda label: (votes[label], mean["probs"][label]))
    return {"label": best, "probs": mean["probs"]}


@STRATEGIES.register("best_mean_span")
def best_mean_span(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """The span (by character offsets) with the best mean score over members; a member that did not propose
    a span scores 0 for it."""
    if not predictions:
        raise ValueError("no member predictions to aggregate")
    totals: dict[tuple[int, int], float] = {}
    texts: dict[tuple[int, int], str] = {}
    for prediction in predictions:
        for c in prediction.get("candidates") or [prediction]:
            key = (c["start"], c["end"])
            totals[key] = totals.get(key, 0.0) + c["score"]
            texts[key] = c["text"]
    (start, end), total = max(totals.items(), key=lambda item: (item[1], -item[0][0]))
    return {"text": texts[(start, end)], "start": start, "end": end, "score": total / len(predictions)}
