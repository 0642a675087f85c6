"""The arena (docs/chat/arena.md): which of a chat task's target models writers prefer, how they rate them, and how
often each one's answers are confirmed failures.

The maths part (everything above `board`) is pure functions of plain values, no Django, so the recovery
benchmark (bench/bench_arena_recovery.py) and the unit tests call it directly:

- Bradley–Terry strengths from pairwise outcomes. A tie counts half a win to each side (as Chatbot Arena does;
  the Davidson / Rao–Kupper extensions add a tie parameter that a few hundred comparisons cannot pin down). The
  strengths maximise the BT log-likelihood under a weak Gaussian prior on each logit (sd `PRIOR_SD`), so a model
  that won every comparison keeps a finite strength, and a model with few comparisons is pulled towards the
  average. Fitted with scipy's L-BFGS on that penalised logistic likelihood (the objective sklearn's
  LogisticRegression minimises, but scipy is a dependency of the site and sklearn only arrives with
  sentence-transformers); the gradient is exact, so a fit of 20 models takes milliseconds.
- 95 % intervals of each strength and of each model's rank: a percentile bootstrap over the comparisons
  (`RESAMPLES` resamples, seed `SEED`: the same comparisons always give the same intervals).
- The win-rate matrix: how often the row's model beat the column's, with the counts.
- The mean slider rating of each model with its 95 % t-interval (clipped to the 0–100 scale).
- Each model's confirmed-failure rate per category (confirmed failures of that category / that model's answers)
  with Wilson's interval (modelzoo.intervals.wilson, the interval the leaderboard uses).
- How many comparisons a ranking needs (`comparisons_needed`): where the recovery benchmark's Spearman
  correlation between the recovered and the true ranks reaches 0.9.

`board(task)` reads the chat app's records and puts them through these functions for the page and the API.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats
from scipy.special import expit

from modelzoo.intervals import wilson

PRIOR_SD = 2.0  # logits: a model 2 sd above average beats it 98 % of the time; weak against tens of comparisons
RESAMPLES = 200
SEED = 0
ELO_PER_LOGIT = 400 / math.log(10)  # the arena score: 1000 + 400 * log10(odds), as Elo and Chatbot Arena show it
ELO_BASE = 1000.0
GOAL_SPEARMAN = 0.9

# Comparisons for Spearman >= 0.9 between recovered and true ranks, by number of models, with the true logits
# evenly spaced over [-1, 1] (best beats worst 88 % of the time), pairs drawn uniformly, 20 % ties: the smallest
# count on the benchmark's grid whose mean over 100 seeds reaches 0.9, `bench/bench_arena_recovery.py --sweep --seeds 100`
# (docs/benchmarks/arena.md). Models closer than that need more; about twice as many make 90 % of runs reach 0.9.
NEEDED: dict[int, int] = {2: 15, 3: 25, 4: 50, 6: 140, 8: 200, 12: 400, 16: 560, 20: 800}


@dataclass(frozen=True)
class Comparison:
    """One pairwise judgement: `outcome` 1.0 when `a` won, 0.0 when `b` won, 0.5 for a tie."""

    a: str
    b: str
    outcome: float


def comparisons_needed(models: int) -> int:
    """About how many comparisons a ranking of `models` models needs (see NEEDED), rounded up to a ten."""
    if models < 2:
        return 0
    known = sorted(NEEDED)
    if models in NEEDED:
        return NEEDED[models]
    if models > known[-1]:  # beyond the measured range: grow as the last measured step did (about K^1.5)
        top = known[-1]
        return int(math.ceil(NEEDED[top] * (models / top) ** 1.5 / 10) * 10)
    below = max(k for k in known if k < models)
    above = min(k for k in known if k > models)
    share = (models - below) / (above - below)
    return int(math.ceil((NEEDED[below] + share * (NEEDED[above] - NEEDED[below])) / 10) * 10)


def _encode(models: Sequence[str], comparisons: Iterable[Comparison]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = {name: i for i, name in enumerate(models)}
    unknown = {name for c in comparisons for name in (c.a, c.b)} - set(index)
    if unknown:
        raise ValueError(f"comparisons name models not in the list: {', '.join(sorted(unknown))}")
    rows = [(index[c.a], index[c.b], c.outcome) for c in comparisons if c.a != c.b]
    if not rows:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    a, b, outcome = zip(*rows, strict=True)
    return np.array(a), np.array(b), np.array(outcome, dtype=float)


def _wins(k: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """W[i, j]: i's wins over j (a tie half a win each); N[i, j]: their comparisons (symmetric)."""
    wins, counts = np.zeros((k, k)), np.zeros((k, k))
    np.add.at(wins, (a, b), outcome)
    np.add.at(wins, (b, a), 1.0 - outcome)
    np.add.at(counts, (a, b), 1.0)
    np.add.at(counts, (b, a), 1.0)
    return wins, counts


def fit_strengths(wins: np.ndarray, prior_sd: float = PRIOR_SD) -> np.ndarray:
    """The BT logits (mean 0) maximising sum_ij W_ij log sigmoid(t_i - t_j) - sum_i t_i^2 / (2 prior_sd^2)."""
    k = len(wins)
    if k == 0:
        return np.zeros(0)
    precision = 1.0 / prior_sd**2

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        diff = theta[:, None] - theta[None, :]
        nll = float((wins * np.logaddexp(0.0, -diff)).sum()) + 0.5 * precision * float(theta @ theta)
        pull = wins * expit(-diff)  # d(-nll)/d(diff_ij)
        grad = -(pull.sum(axis=1) - pull.sum(axis=0)) + precision * theta
        return nll, grad

    result = optimize.minimize(loss, np.zeros(k), jac=True, method="L-BFGS-B", options={"gtol": 1e-8})
    return result.x - result.x.mean()  # the likelihood ignores a shift; the prior already centres it


def _ranks(strengths: np.ndarray) -> np.ndarray:
    """1 for the strongest; equal strengths share the better rank."""
    return stats.rankdata(-np.round(strengths, 9), method="min").astype(int)


def bradley_terry(models: Sequence[str], comparisons: Sequence[Comparison], resamples: int = RESAMPLES,
                  seed: int = SEED, prior_sd: float = PRIOR_SD) -> dict[str, dict[str, Any]]:
    """{model: {strength, low, high, rank, rank_low, rank_high, score, score_low, score_high}}: the BT logit
    (mean 0 over `models`) with its bootstrap 95 % interval, its rank (1 is the strongest) with the interval of
    its rank over the resamples, and the same strength on the arena (Elo-like) scale. `resamples=0`: no
    intervals (the benchmark's fast path)."""
    k = len(models)
    a, b, outcome = _encode(models, comparisons)
    point = fit_strengths(_wins(k, a, b, outcome)[0], prior_sd)
    ranks = _ranks(point)
    draws = np.zeros((0, k))
    if resamples and len(a):
        rng = np.random.default_rng(seed)
        draws = np.array([fit_strengths(_wins(k, a[idx], b[idx], outcome[idx])[0], prior_sd)
                          for idx in (rng.integers(0, len(a), size=len(a)) for _ in range(resamples))])
    out: dict[str, dict[str, Any]] = {}
    draw_ranks = np.array([_ranks(row) for row in draws]) if len(draws) else np.zeros((0, k))
    for i, name in enumerate(models):
        low = high = rank_low = rank_high = None
        if len(draws):
            low, high = (float(v) for v in np.percentile(draws[:, i], [2.5, 97.5]))
            rank_low, rank_high = (int(v) for v in np.percentile(draw_ranks[:, i], [2.5, 97.5], method="nearest"))
        out[name] = {"strength": float(point[i]), "low": low, "high": high, "rank": int(ranks[i]),
                     "rank_low": rank_low, "rank_high": rank_high, "score": to_score(point[i]),
                     "score_low": to_score(low), "score_high": to_score(high)}
    return out


def to_score(logit: float | None) -> float | None:
    """A BT logit on the arena scale (1000 is the average model; +400 means 10 to 1 odds)."""
    return None if logit is None else round(ELO_BASE + ELO_PER_LOGIT * float(logit), 1)


def win_matrix(models: Sequence[str], comparisons: Sequence[Comparison]) -> list[list[dict[str, Any] | None]]:
    """cells[i][j]: how often models[i] (the row) beat models[j] (the column): {wins, ties, n, rate}, wins counting
    a tie half; None where they never met (and on the diagonal)."""
    k = len(models)
    a, b, outcome = _encode(models, comparisons)
    wins, counts = _wins(k, a, b, outcome)
    ties = np.zeros((k, k))
    tied = outcome == 0.5
    np.add.at(ties, (a[tied], b[tied]), 1.0)
    ties = ties + ties.T
    return [[None if i == j or not counts[i, j] else
             {"wins": float(wins[i, j]), "ties": int(ties[i, j]), "n": int(counts[i, j]),
              "rate": float(wins[i, j] / counts[i, j])} for j in range(k)] for i in range(k)]


def record(models: Sequence[str], comparisons: Sequence[Comparison]) -> dict[str, dict[str, int]]:
    """{model: {comparisons, wins, losses, ties}} (whole wins and losses; ties apart)."""
    out = {name: {"comparisons": 0, "wins": 0, "losses": 0, "ties": 0} for name in models}
    for c in comparisons:
        if c.a == c.b:
            continue
        for name, won in ((c.a, c.outcome), (c.b, 1.0 - c.outcome)):
            row = out[name]
            row["comparisons"] += 1
            row["wins" if won == 1.0 else "losses" if won == 0.0 else "ties"] += 1
    return out


def mean_interval(scores: Sequence[float], low_bound: float = 0.0, high_bound: float = 100.0) -> dict[str, Any] | None:
    """{mean, low, high, n}: the mean with its 95 % t-interval, clipped to the scale; no interval from one score."""
    n = len(scores)
    if not n:
        return None
    values = np.asarray(scores, dtype=float)
    mean = float(values.mean())
    low = high = None
    if n > 1:
        half = float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))
        low, high = max(low_bound, mean - half), min(high_bound, mean + half)
    return {"mean": mean, "low": low, "high": high, "n": n}


def failure_rates(answers: dict[str, int], confirmed: dict[tuple[str, str], int],
                  categories: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """{model: {category: {count, answers, rate, low, high}}}: confirmed failures of that category over the model's
    answers, with Wilson's 95 % interval (None for a model with no answers)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for model, n in answers.items():
        out[model] = {}
        for category in categories:
            count = confirmed.get((model, category), 0)
            low, high = wilson(count, n) if n else (None, None)
            out[model][category] = {"count": count, "answers": n, "rate": count / n if n else None,
                                    "low": low, "high": high}
    return out


def fingerprint(models: Sequence[str], comparisons: Sequence[Comparison]) -> str:
    """A key for the fit of exactly these comparisons (the page caches the bootstrap under it)."""
    text = "|".join(models) + "#" + ";".join(f"{c.a},{c.b},{c.outcome}" for c in comparisons)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# --- Reading a task's records (Django from here on) -----------------------------------------------------------

SUMMARY_CHARS = 90
CACHE_SECONDS = 3600


def _summary(prompt: str) -> str:
    prompt = " ".join(prompt.split())
    return prompt if len(prompt) <= SUMMARY_CHARS else prompt[:SUMMARY_CHARS - 1].rstrip() + "…"


def _settings(stored: dict[str, Any], configured: Any) -> dict[str, Any]:
    """What a target was: provider, model, system prompt (and its summary), temperature — as the latest
    conversation recorded it, else as the task configures it now."""
    provider = stored.get("provider")
    model = stored.get("model", "")
    if isinstance(provider, dict):  # the provider's settings object rather than its name
        model = model or provider.get("model", "")
        provider = provider.get("provider")
    if configured is not None:
        provider = provider or configured.provider.provider
        model = model or configured.provider.model
    prompt = stored.get("system_prompt", configured.system_prompt if configured is not None else "")
    temperature = stored.get("temperature", configured.temperature if configured is not None else None)
    return {"provider": provider or "", "model": model or "", "system_prompt": prompt or "",
            "system_prompt_summary": _summary(prompt or ""), "temperature": temperature}


def _cached_fit(models: list[str], comparisons: list[Comparison]) -> dict[str, dict[str, Any]]:
    """The bootstrap (a few hundred fits) once per set of comparisons: the cache keys it by their fingerprint, so a
    new choice is a new key and nothing goes stale. With the cache down, the fit is computed each time."""
    from django.core.cache import cache

    key = "chat-arena:" + fingerprint(models, comparisons)
    try:
        fit = cache.get(key)
    except Exception:  # noqa: BLE001 - the cache is down: compute, cache nothing
        return bradley_terry(models, comparisons)
    if fit is None:
        fit = bradley_terry(models, comparisons)
        with contextlib.suppress(Exception):  # the cache went down meanwhile: the next request fits again
            cache.set(key, fit, CACHE_SECONDS)
    return fit


def board(task, round_=None) -> dict[str, Any]:
    """The arena of a chat task (all its rounds, or `round_` alone), as the page and the API show it."""
    from chat.models import Conversation, Failure, Message, Preference, Rating

    config = task.typed_config.chat
    conversations = Conversation.objects.filter(round__task=task)
    if round_ is not None:
        conversations = conversations.filter(round=round_)
    names: list[str] = [t.name for t in config.targets]
    stored: dict[str, dict[str, Any]] = {}
    targets_of: dict[int, list[str]] = {}
    for pk, targets, settings in conversations.order_by("id").values_list("id", "targets", "target_settings"):
        targets_of[pk] = list(targets or [])
        for name in targets_of[pk]:
            if name not in names:
                names.append(name)
        for name, values in (settings or {}).items():
            if isinstance(values, dict):
                stored[name] = values

    answers = Message.objects.filter(conversation__in=conversations, role=Message.Role.ASSISTANT,
                                     state=Message.State.READY)
    ready: dict[tuple[int, int], dict[int, str]] = defaultdict(dict)
    answered: dict[str, int] = dict.fromkeys(names, 0)
    for convo, turn, slot, target in answers.values_list("conversation_id", "turn", "slot", "target"):
        name = target or (targets_of[convo][slot] if slot is not None and slot < len(targets_of[convo]) else "")
        if not name:
            continue
        ready[(convo, turn)][slot] = name
        answered[name] = answered.get(name, 0) + 1
        if name not in names:
            names.append(name)

    comparisons: list[Comparison] = []
    for convo, turn, winner in (Preference.objects.filter(conversation__in=conversations).order_by("id")
                                .values_list("conversation_id", "turn", "winner_slot")):
        shown = ready.get((convo, turn), {})
        if len(shown) != 2:  # a choice between two ready answers, nothing else, is a comparison
            continue
        (slot_a, a), (slot_b, b) = sorted(shown.items())
        if winner is not None and winner not in shown:
            continue
        comparisons.append(Comparison(a, b, 0.5 if winner is None else 1.0 if winner == slot_a else 0.0))

    arena_models = [n for n in names if answered.get(n) or any(n in (c.a, c.b) for c in comparisons)
                    or n in {t.name for t in config.targets}]
    compared = [n for n in arena_models if any(n in (c.a, c.b) for c in comparisons)]
    needed = comparisons_needed(len(arena_models))  # every model of the arena is to be ranked
    enough = len(compared) >= 2 and len(comparisons) >= needed
    fit: dict[str, dict[str, Any]] = {}
    if enough:
        fit = _cached_fit(compared, comparisons)

    scores: dict[str, list[int]] = defaultdict(list)
    for target, score in (Rating.objects.filter(message__in=answers).values_list("message__target", "score")):
        scores[target].append(score)
    confirmed: dict[tuple[str, str], int] = defaultdict(int)
    for target, category, decided in Failure.objects.filter(
            message__in=answers, consensus=Failure.Consensus.CONFIRMED).values_list(
            "message__target", "category", "decided_category"):
        confirmed[(target, decided or category)] += 1
    categories = config.categories()
    seen = {category for _, category in confirmed}
    categories += [(name, name) for name in sorted(seen - {c for c, _ in categories})]  # a category since removed
    rates = failure_rates({n: answered.get(n, 0) for n in arena_models}, confirmed, [c for c, _ in categories])
    wins = record(arena_models, comparisons)

    configured = {t.name: t for t in config.targets}
    rows = []
    for name in arena_models:
        rows.append({"name": name, "settings": _settings(stored.get(name, {}), configured.get(name)),
                     "in_task": name in configured, "answers": answered.get(name, 0), **wins[name],
                     "ranking": fit.get(name), "rating": mean_interval(scores.get(name, [])),
                     "failures": rates[name]})
    if fit:
        rows.sort(key=lambda r: (r["ranking"] is None, -(r["ranking"] or {}).get("strength", 0.0), r["name"]))
    matrix_models = [r["name"] for r in rows if r["comparisons"]]
    return {
        "task": task.slug, "scale": config.scale, "blinded": config.blinded,
        "round": round_.number if round_ is not None else None,
        "comparisons": len(comparisons), "compared_models": len(compared), "needed": needed, "enough": enough,
        "models": rows,
        "matrix": {"models": matrix_models, "cells": win_matrix(matrix_models, comparisons)},
        "categories": [{"name": name, "label": label} for name, label in categories],
        "method": {"model": "Bradley-Terry, a tie half a win to each", "prior_sd": PRIOR_SD,
                   "resamples": RESAMPLES, "seed": SEED, "goal_spearman": GOAL_SPEARMAN},
    }
