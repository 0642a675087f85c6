"""The Dynascore as Dynaboard defines it (Ma et al., NeurIPS 2021), with each viewer's weights. No Django here.

A leaderboard row has up to five figures: performance (the mean of the kind's main metric over the counted test
sets), throughput (examples per second, higher is better), memory (MB, lower is better), robustness and fairness
(shares of predictions that do not change under perturbation, higher is better). They are in different units, so
Dynaboard puts them in *units of performance* before weighting them: for each figure, the average marginal rate of
substitution (AMRS) says how much of it the listed models give up, on average, for one point of performance.

Following mlcommons/dynabench `backend/app/domain/services/base/score.py::calculate_dynascore`:

1. each figure is converted to "higher is better": ``direction * value + offset`` (memory's direction is -1 and its
   offset the machine's memory, so the figure is the memory left free; the others' offset is 0);
2. the models are sorted by performance; over consecutive pairs whose performance differs by more than
   ``DELTA_CUTOFF_PROPORTION`` of the best performance, ``AMRS(m) = mean(|delta m| / delta performance)``;
3. each converted figure is divided by its AMRS (a "term", in points of performance), the weights are normalised
   to sum to 1, and the Dynascore is the weighted sum of the terms. Performance is in percentage points (as Dynabench's accuracy is), so the Dynascore is too.

Where this differs from Dynabench, and why (docs/evaluation/dynaboard.md says the same):

- Missing figures. Dynabench has every figure for every model (one that lacks a figure gets NaN, then a Dynascore
  of 0). Here a prediction-file row has no throughput or memory, and robustness and fairness exist only once
  measured; a missing figure is never counted as 0 nor guessed from elsewhere. A row's Dynascore is over the
  figures it has, with the weights renormalised over them. Renormalising the raw terms would not do: the terms'
  levels are arbitrary (performance is about 85 points while a throughput term may be 2), so a row with only its
  performance would lead every model. So each term is taken as its distance from the listed rows' mean on that
  figure, the weighted mean of those distances is taken over the row's figures, and the board's level (the
  weighted mean of the figures' means) is added back:

      score(r) = sum_{m in S_r} w_m (t_rm - mean_m) / sum_{m in S_r} w_m  +  sum_{m in P} w_m mean_m / sum_{m in P} w_m

  where P is every figure with a weight and an AMRS, S_r those of P the row has. For a row with every figure
  (S_r = P) this is exactly Dynabench's weighted sum; a row with fewer is ranked as if it stood on the missing
  figures where it stands, on average, on its own.
  The AMRS of a figure is measured over the rows that have it (consecutive in performance order among them).
- A figure whose AMRS is 0 or cannot be measured (fewer than two rows with different performance have it; it does
  not vary) cannot be traded against performance: it is left out of every row's Dynascore, and the board says so.
  Dynabench divides by zero there and the NaN becomes a Dynascore of 0 for every model.
- Memory's offset: Dynabench uses the evaluation instance's memory; models here are measured on whatever machine
  evaluates them, so the offset is the largest memory among the listed models (the biggest model frees 0). Adding
  the same offset to every row that has the figure changes no ranking among them.
- With fewer than two distinct performances nothing can be measured: the Dynascore is the performance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

METRICS = ("performance", "throughput", "memory", "robustness", "fairness")
DIRECTION = {"performance": 1, "throughput": 1, "memory": -1, "robustness": 1, "fairness": 1}
DELTA_CUTOFF_PROPORTION = 0.0001  # Dynabench's delta_cutoff_proportion
MAX_WEIGHT = 1000.0  # a viewer's weight above this is refused (only the ratios matter)


class WeightsError(ValueError):
    """Viewer weights that cannot be used: `errors` maps each bad parameter to what was wrong with it."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors


def viewer_weights(params: Mapping[str, Any], default: Mapping[str, float]) -> dict[str, float] | None:
    """The weights a viewer asks for in `params` (query parameters named after the figures), a figure not named
    keeping `default`'s (the owner's) weight; None when no weight is named. WeightsError when a value is not a
    number from 0 to MAX_WEIGHT, or when every weight is 0."""
    named = [m for m in METRICS if m in params]
    if not named:
        return None
    errors: dict[str, str] = {}
    weights = {m: float(default.get(m, 0) or 0) for m in METRICS}
    for metric in named:
        raw = params.get(metric)
        raw = raw[-1] if isinstance(raw, list) else raw
        text = str(raw if raw is not None else "").strip()
        try:
            value = float(text)
        except ValueError:
            errors[metric] = f"must be a number from 0 to {MAX_WEIGHT:g}, not {text[:20]!r}"
            continue
        if not math.isfinite(value) or not 0 <= value <= MAX_WEIGHT:
            errors[metric] = f"must be a number from 0 to {MAX_WEIGHT:g}, not {text[:20]!r}"
            continue
        weights[metric] = value
    if not errors and not any(weights.values()):
        errors["weights"] = "at least one weight must be above 0"
    if errors:
        raise WeightsError(errors)
    return weights


def converted(figures: Mapping[str, float | None], offsets: Mapping[str, float]) -> dict[str, float]:
    """The figures a row has, each turned "higher is better" (``direction * value + offset``)."""
    return {m: DIRECTION[m] * float(figures[m]) + offsets.get(m, 0.0)
            for m in METRICS if figures.get(m) is not None}


def offsets_for(rows: list[Mapping[str, float | None]]) -> dict[str, float]:
    """Memory's offset: the largest memory listed (Dynabench: the evaluation machine's); 0 for the others."""
    memories = [float(r["memory"]) for r in rows if r.get("memory") is not None]
    return {m: 0.0 for m in METRICS} | {"memory": max(memories, default=0.0)}


def amrs(rows: list[Mapping[str, float]]) -> dict[str, float | None]:
    """The average marginal rate of substitution of each figure against performance over converted `rows`:
    among the rows that have the figure, sorted by performance, the mean of |delta figure| / delta performance over
    consecutive pairs whose performance differs by more than DELTA_CUTOFF_PROPORTION of the best. None when no
    such pair exists; 0 when the figure never changes."""
    scored = [r for r in rows if r.get("performance") is not None]
    if not scored:
        return {m: None for m in METRICS}
    threshold = max(r["performance"] for r in scored) * DELTA_CUTOFF_PROPORTION
    rates: dict[str, float | None] = {}
    for metric in METRICS:
        having = sorted((r for r in scored if r.get(metric) is not None), key=lambda r: r["performance"])
        ratios = [abs(b[metric] - a[metric]) / (b["performance"] - a["performance"])
                  for a, b in zip(having, having[1:], strict=False)
                  if abs(b["performance"] - a["performance"]) > abs(threshold)]
        rates[metric] = sum(ratios) / len(ratios) if ratios else None
    return rates


def normalised(row: Mapping[str, float], rates: Mapping[str, float | None]) -> dict[str, float]:
    """A converted row in units of performance: each figure divided by its AMRS; a figure without a usable AMRS
    is left out (performance, whose AMRS is 1 by construction, is kept when nothing can be measured)."""
    terms = {}
    for metric, value in row.items():
        rate = rates.get(metric)
        if metric == "performance":
            terms[metric] = value
        elif rate:
            terms[metric] = value / abs(rate)
    return terms


def score(terms: Mapping[str, float], weights: Mapping[str, float], means: Mapping[str, float]) -> float | None:
    """The Dynascore of one row (module docstring): its terms' distances from `means` averaged with the weights
    renormalised over the figures it has, plus the board's level; None when it has no weighted figure."""
    weighted = {m: float(weights.get(m, 0) or 0) for m in means if (weights.get(m, 0) or 0) > 0}
    own = {m: w for m, w in weighted.items() if m in terms}
    if not own:
        return None
    level = sum(w * means[m] for m, w in weighted.items()) / sum(weighted.values())
    return sum(w * (terms[m] - means[m]) for m, w in own.items()) / sum(own.values()) + level


def dynascores(rows: list[Mapping[str, float | None]], weights: Mapping[str, float]) -> dict[str, Any]:
    """Dynascores of rows of raw figures (performance in percentage points; None where a row lacks a figure):
    ``{"scores": [...], "terms": [...], "amrs": {...}, "means": {...}, "offsets": {...}, "left_out": {...}}``.
    A figure left out for every row (no usable AMRS) is named in `left_out` with the reason."""
    offsets = offsets_for(rows)
    conv = [converted(r, offsets) for r in rows]
    rates = amrs(conv)
    rates["performance"] = 1.0 if rates.get("performance") else rates.get("performance")
    terms = [normalised(c, rates) for c in conv]
    left_out = {}
    for metric in METRICS[1:]:
        having = sum(1 for c in conv if metric in c)
        if not having:
            left_out[metric] = _("no listed model has it")
        elif rates.get(metric) is None:
            left_out[metric] = _("fewer than two listed models with different performance have it")
        elif rates[metric] == 0:
            left_out[metric] = _("it is the same for every listed model that has it")
    means = {}
    for metric in METRICS:
        values = [t[metric] for t in terms if metric in t]
        if values:
            means[metric] = sum(values) / len(values)
    return {"scores": [score(t, weights, means) for t in terms], "terms": terms, "amrs": rates, "means": means,
            "offsets": offsets, "left_out": left_out}


def ranks(scores: list[float | None], keys: list[Any]) -> list[int | None]:
    """1-based ranks by Dynascore (highest first; ties in the order of `keys`); None for a row without one."""
    order = sorted((i for i, s in enumerate(scores) if s is not None), key=lambda i: (-scores[i], keys[i]))
    result: list[int | None] = [None] * len(scores)
    for rank, index in enumerate(order, start=1):
        result[index] = rank
    return result
