"""Reliability-weighted labels: Dawid-Skene over a task's crowd votes, next to the plain consensus.

Each validator gets a confusion matrix (how often they say each outcome when another one is true), learnt
with EM together with each example's most probable outcome; a careless validator's votes then weigh less
than a careful one's, instead of counting one each. Outcomes are the consensus ones (correct, flagged, or
incorrect with one corrected label). Gold items anchor it: their outcome is known, validators' answers on
them are votes, and the first estimate of every validator comes from the gold items alone (without that,
two careless validators who always agree would outvote a careful one, as in a plain majority). The result
is stored per example (`ReliabilityLabel`) and exported next to the consensus label; it is redone only
when the task's counted votes or gold answers changed (`refresh`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

from annotation.models import Example
from tasks.models import Task
from validation.consensus import CORRECT, FLAGGED, INCORRECT, outcome_key
from validation.models import GoldAnswer, GoldItem, ReliabilityLabel, ReliabilityRun, Validation

Vote = tuple[int, int, str]  # (example id, validator id, outcome key)


@dataclass(frozen=True)
class Estimate:
    outcomes: dict[int, tuple[str, float]]  # example id -> (outcome key, probability)
    accuracy: dict[int, float]  # validator id -> estimated probability of a right vote


def dawid_skene(votes: Sequence[Vote], known: dict[int, str] | None = None, iterations: int = 50,
                tol: float = 1e-6, smoothing: float = 0.01) -> Estimate:
    """The most probable outcome of each item and each worker's accuracy (Dawid & Skene 1979, EM from the
    majority vote). `known`: items whose outcome is known (gold), held fixed; when there are any, the
    workers' first confusion matrices come from them alone. `smoothing` keeps a worker seen once from
    getting a certain confusion matrix."""
    if not votes:
        return Estimate({}, {})
    known = known or {}
    items, workers = sorted({v[0] for v in votes}), sorted({v[1] for v in votes})
    classes = sorted({v[2] for v in votes} | {k for i, k in known.items() if i in set(items)})
    ii = np.searchsorted(items, [v[0] for v in votes])
    jj = np.searchsorted(workers, [v[1] for v in votes])
    kk = np.array([classes.index(v[2]) for v in votes])
    fixed = {n: classes.index(known[item]) for n, item in enumerate(items) if item in known}
    posterior = np.zeros((len(items), len(classes)))
    np.add.at(posterior, (ii, kk), 1.0)
    posterior = _clamp(posterior / posterior.sum(axis=1, keepdims=True), fixed)
    weight = np.zeros(len(items)) if fixed else np.ones(len(items))
    weight[list(fixed)] = 1.0
    for _ in range(iterations):
        prior, confusion = _m_step(posterior, weight, ii, jj, kk, len(workers), smoothing)
        weight = np.ones(len(items))  # gold alone only for the first estimate of the workers
        updated = _clamp(_e_step(prior, confusion, ii, jj, kk, len(items)), fixed)
        done = np.abs(updated - posterior).max() < tol
        posterior = updated
        if done:
            break
    best = posterior.argmax(axis=1)
    outcomes = {item: (classes[best[n]], round(float(posterior[n, best[n]]), 4)) for n, item in enumerate(items)}
    accuracy = (prior[None, :] * np.einsum("jkk->jk", confusion)).sum(axis=1)
    return Estimate(outcomes, {w: round(float(accuracy[n]), 4) for n, w in enumerate(workers)})


def _clamp(posterior, fixed: dict[int, int]):
    for row, k in fixed.items():
        posterior[row] = 0.0
        posterior[row, k] = 1.0
    return posterior


def _m_step(posterior, weight, ii, jj, kk, n_workers: int, smoothing: float):
    prior = posterior.mean(axis=0) + 1e-12
    confusion = np.full((n_workers, posterior.shape[1], posterior.shape[1]), smoothing)
    np.add.at(confusion, (jj, slice(None), kk), posterior[ii] * weight[ii, None])  # [worker, true, said] += P(true)
    confusion /= confusion.sum(axis=2, keepdims=True)
    return prior / prior.sum(), confusion


def _e_step(prior, confusion, ii, jj, kk, n_items: int):
    log_post = np.tile(np.log(prior), (n_items, 1))
    np.add.at(log_post, ii, np.log(confusion[jj, :, kk]))
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    return post / post.sum(axis=1, keepdims=True)


# --- stored per task ---------------------------------------------------------------------------------


def crowd_votes(task: Task):
    return Validation.objects.filter(example__round__task=task, mode=Validation.Mode.CROWD, counted=True)


def votes_key(task: Task) -> str:
    """Changes whenever a counted crowd vote or a gold answer of the task is added, or a vote stops counting."""
    found = crowd_votes(task).aggregate(n=Count("id"), last=Max("id"), total=Sum("id"))
    gold = GoldAnswer.objects.filter(task=task).aggregate(n=Count("id"), last=Max("id"))
    return hashlib.sha256(json.dumps([found, gold], sort_keys=True, default=str).encode()).hexdigest()


def task_votes(task: Task) -> tuple[list[Vote], dict[int, str]]:
    """The task's counted crowd votes and gold answers, and the known outcome of each gold item."""
    rows = crowd_votes(task).values_list("example_id", "validator_id", "verdict", "label").iterator(chunk_size=5000)
    votes = [(e, v, outcome_key(verdict, label)) for e, v, verdict, label in rows]
    answers = GoldAnswer.objects.filter(task=task).values_list("gold_id", "validator_id", "verdict", "label")
    votes += [(e, v, outcome_key(verdict, label)) for e, v, verdict, label in answers]
    known = {e: outcome_key(verdict, label)
             for e, verdict, label in GoldItem.objects.filter(task=task).values_list("example_id", "verdict", "label")}
    return votes, known


def refresh(task: Task, force: bool = False) -> ReliabilityRun:
    """Re-estimate the task's reliability labels if its counted crowd votes changed since the last time."""
    key = votes_key(task)
    run = ReliabilityRun.objects.filter(task=task).first()
    if run is not None and run.votes_key == key and not force:
        return run
    estimate = dawid_skene(*task_votes(task))
    with transaction.atomic():
        ReliabilityLabel.objects.filter(task=task).delete()
        _store(task, estimate)
        run, _ = ReliabilityRun.objects.update_or_create(task=task, defaults={
            "votes_key": key, "computed_at": timezone.now(),
            "validators": {str(k): v for k, v in estimate.accuracy.items()}})
    return run


def _store(task: Task, estimate: Estimate, chunk: int = 5000) -> None:
    ids = list(estimate.outcomes)
    for start in range(0, len(ids), chunk):
        part = ids[start:start + chunk]
        targets = dict(Example.objects.filter(pk__in=part).values_list("pk", "target"))
        ReliabilityLabel.objects.bulk_create([
            _label_row(task, pk, *estimate.outcomes[pk], targets.get(pk)) for pk in part
        ])


def _label_row(task: Task, example_id: int, key: str, confidence: float, target: Any) -> ReliabilityLabel:
    verdict, _, label_json = key.partition(":")
    if verdict == CORRECT:
        label = target
    elif verdict == INCORRECT:
        label = json.loads(label_json)
    else:
        verdict, label = FLAGGED, None
    return ReliabilityLabel(example_id=example_id, task=task, outcome=verdict, label=label, confidence=confidence)
