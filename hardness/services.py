"""Round seeding (Hard-Bench): a weak model trained on the candidate pool scores it; the k hardest per label
become the round's seeds. docs/seeding.md says how and why.

The pool is the task's labelled seed items (`LabeledItem`, split=train) not yet used by another round, at most
`pool_max` of them: a stable sample (the items whose hash of (seed, collection, content key) is smallest, in
that order), so the same pool gives the same sample whatever the database order. The weak scorer
(`hardness.weak`) is trained on exactly that sample — one epoch, or more passes on a small pool so that it
makes `min_steps` updates — and then scores every item of it with the task's score (`seeding.score`):
- classification: loss, gradnorm (head, closed form), gradnorm_deep (top block + head) or el2n
  (over `EL2N_RUNS` heads); a pair task (NLI) is encoded as two segments (premise, hypothesis);
- QA: the span loss (start + end cross-entropy), the head's gradnorm, or el2n over start and end.
The k hardest per label (QA: k in all) get `LabeledItem.seed_round = round`.

Contexts: when the task feeds its context to the model (NLI's premise, QA's passage), a context takes the
highest score of the pool items written on it (same fed fields) and their label, and contexts without pool
items are not scored; when the context is only shown (a sentiment prompt), it is scored label-free by the same
weak scorer (`entropy`, or `margin`) and grouped by its predicted label. The k hardest per group get
`Context.round = round, is_seed = True`. Running it again for the same round first clears that round's seed
marks, so it is idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Q

from hardness import scores as score_registry
from hardness import selection
from hardness.deep import gradnorm_deep
from hardness.sanity import share_misclassified
from hardness.scorers import FeatureScorer, HeadScorer, Inputs, Scorer, as_scorer, segments
from hardness.weak import EL2N_RUNS, TrainingReport, WeakClassifier, fit_weak_classifier, fit_weak_span_scorer
from tasks import choices
from tasks.models import Context, LabeledItem, Round, Task

SPAN_SCORES = choices.SPAN_SEEDING_SCORES  # what the weak span scorer (QA) computes


@dataclass(frozen=True)
class SeedResult:
    items_scored: int
    items_seeded: int
    contexts_scored: int
    contexts_seeded: int
    seeds_misclassified: float  # share of seeded items the scorer gets wrong (a sanity figure)
    score: str = choices.DEFAULT_SEEDING_SCORE
    pool_size: int = 0  # pool items before sampling (items_scored ≤ pool_max of them)
    training: TrainingReport | None = field(default=None, compare=False)  # the weak scorer's, when trained here
    scorer: Any = field(default=None, compare=False, repr=False)


# --- the pool ---------------------------------------------------------------------------------------------


def item_pool(task: Task, round: Round):
    return LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TRAIN).filter(
        Q(seed_round__isnull=True) | Q(seed_round=round)).order_by("id")


def context_pool(task: Task, round: Round):
    return Context.objects.filter(task=task).filter(Q(round__isnull=True) | Q(round=round, is_seed=True)).order_by("id")


def _rank(seed: int, *parts: object) -> str:
    return hashlib.sha256(":".join(str(p) for p in (seed, *parts)).encode()).hexdigest()


def stable_sample(rows: Sequence, limit: int, seed: int, key: Callable[[Any], tuple]) -> list:
    """At most `limit` rows: those with the smallest hash of (seed, key), in hash order. The same rows give the
    same sample in the same order, however the caller ordered them; a larger limit only adds rows."""
    ranked = sorted(rows, key=lambda r: (_rank(seed, *key(r)), key(r)))
    return ranked[:limit]


def item_key(item: LabeledItem) -> tuple:
    return (item.collection, str(item.key or item.pk))


def context_key(context: Context) -> tuple:
    return (str(context.key or context.pk),)


def item_inputs(task: Task, items: Sequence[LabeledItem]) -> list[dict[str, str]]:
    kind, config = task.kind_impl, task.typed_config
    return [kind.model_input(config, item.context or {}, item.input) for item in items]


def context_inputs(contexts: Sequence[Context]) -> list[dict[str, str]]:
    """A shown-only context (a prompt) is scored as one text: its payload's string values joined."""
    return [{"text": " ".join(str(v) for v in (c.payload or {}).values() if isinstance(v, str))} for c in contexts]


def weak_encoder(name: str | None = None, seed: int = 0):
    """The weak scorer's encoder and tokenizer: the encoder `name` names (`zoo.encoders.resolve`: a registered name,
    e.g. the packaged MiniLM, the default; "tiny" or "tiny-<family>", small random ones for tests; or a local
    Hugging Face folder of a family the platform runs), in eval mode on the device `ZOO_DEVICE` asks for
    (`zoo.device.resolve`). A name or folder that cannot be used raises `zoo.encoders.EncoderError` saying why."""
    import torch
    from transformers import AutoModel

    from zoo import device as zoo_device
    from zoo import encoders

    source = encoders.resolve(name)
    where = zoo_device.resolve()
    torch.manual_seed(seed)  # a tiny encoder is random: the same seed gives the same one
    model = source.model(AutoModel, source.config())
    return model.to(where).eval(), source.tokenizer()


def check_encoder(name: str | None) -> None:
    """Refuse a bad encoder name or folder before any work (EncoderError, a ValueError, with the reason)."""
    from zoo import encoders

    encoders.resolve(name)


def site_encoder(value: str | None, task: Task | None = None) -> str | None:
    """What `zoo.encoders.resolve` is given for an encoder as the site names it: a registered name, a folder,
    ``upload:<id or name>`` (a model uploaded to the task), or None (the task's `retraining.encoder`, else the
    site's), through the site's precedence (`modelzoo.encoders.encoder_for`). Raises EncoderError with the reason."""
    try:
        from modelzoo.encoders import encoder_for
    except ImportError:  # a site without that layer: the value is the library's name or folder as it is
        return value
    return encoder_for(task, value)


# --- scoring ----------------------------------------------------------------------------------------------


def scoring_context(scorer: Scorer, inputs: Inputs, labels: np.ndarray | None, score: str) -> score_registry.ScoringContext:
    if isinstance(scorer, WeakClassifier) and list(inputs) == scorer.train_inputs:
        probs, features, runs = scorer.run_probs[0], scorer.pool_features, scorer.run_probs
    else:
        probs = scorer.predict_proba(inputs)
        features = (scorer.features(inputs) if score in score_registry.FEATURE_SCORES
                    and isinstance(scorer, FeatureScorer) else None)
        runs = [probs]
    providers: dict[str, Callable] = {"el2n_runs": lambda: runs}
    if isinstance(scorer, HeadScorer) and labels is not None:
        rows = [segments(i) for i in inputs]
        providers["gradnorm_deep"] = lambda: gradnorm_deep(scorer.encoder, scorer.head, scorer.tokenizer, rows, labels)
    return score_registry.ScoringContext(labels, probs, features, providers)


def default_scorer(task: Task, items: Sequence[LabeledItem], *, min_steps: int | None = None, seed: int | None = None,
                   runs: int = 1, encoder=None, tokenizer=None, encoder_name: str | None = None) -> WeakClassifier:
    """The weak scorer of Hard-Bench, trained on `items` (the sampled pool): frozen encoder + linear head."""
    config = task.typed_config
    names = list(config.labels)
    known = [i for i in items if task.kind_impl.target_label(i.target) in names]
    if not known:
        raise ValueError("no labelled train items to fit a weak scorer on; pass a scorer")
    seed = config.seeding.seed if seed is None else seed
    if encoder is None:
        encoder, tokenizer = weak_encoder(encoder_name, seed)
    labels = np.array([names.index(task.kind_impl.target_label(i.target)) for i in known])
    return fit_weak_classifier(encoder, tokenizer, item_inputs(task, known), labels, names,
                               min_steps=config.seeding.min_steps if min_steps is None else min_steps,
                               seed=seed, runs=runs)


@dataclass
class _Scored:
    items: list[LabeledItem]
    values: np.ndarray
    groups: np.ndarray  # the label index of each item (QA: 0)
    chosen: np.ndarray
    misclassified: float
    training: TrainingReport | None
    scorer: Any


def _score_label_items(task: Task, items: list[LabeledItem], scorer: Scorer | None, score: str, k: int,
                       **weak: Any) -> _Scored:
    names = list(task.typed_config.labels)
    items = [i for i in items if task.kind_impl.target_label(i.target) in names]
    if not items:
        return _Scored(items, np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), float("nan"),
                       None, scorer)
    if scorer is None:
        scorer = default_scorer(task, items, runs=EL2N_RUNS if score == choices.EL2N else 1, **weak)
    names = list(scorer.labels)
    labels = np.array([names.index(task.kind_impl.target_label(i.target)) for i in items])
    ctx = scoring_context(scorer, item_inputs(task, items), labels, score)
    values = score_registry.compute(score, ctx)
    chosen = selection.select("hardest", values, labels, k)
    return _Scored(items, values, labels, chosen, share_misclassified(chosen, ctx.probs, labels),
                   getattr(scorer, "training", None), scorer)


def _score_span_items(task: Task, items: list[LabeledItem], score: str, k: int, *, min_steps: int | None = None,
                      seed: int | None = None, encoder=None, tokenizer=None, encoder_name: str | None = None) -> _Scored:
    config = task.typed_config
    if score not in SPAN_SCORES:
        raise ValueError(f"score {score!r} is not available for QA; use one of {', '.join(SPAN_SCORES)}")
    groups = np.zeros(len(items), dtype=np.int64)
    if not items:
        return _Scored(items, np.zeros(0), groups, groups, float("nan"), None, None)
    seed = config.seeding.seed if seed is None else seed
    if encoder is None:
        encoder, tokenizer = weak_encoder(encoder_name, seed)
    scorer = fit_weak_span_scorer(encoder, tokenizer, item_inputs(task, items), [i.target for i in items],
                                  min_steps=config.seeding.min_steps if min_steps is None else min_steps, seed=seed,
                                  runs=EL2N_RUNS if score == choices.EL2N else 1)
    values = scorer.score(score)
    chosen = selection.select("hardest", values, groups, k)
    mis = float(scorer.wrong[chosen].mean()) if len(chosen) else float("nan")
    return _Scored(items, values, groups, chosen, mis, scorer.training, scorer)


def _fed_key(task: Task, payload: dict[str, Any] | None) -> tuple[str, ...] | None:
    fed = task.kind_impl.model_context_fields(task.typed_config)
    payload = payload or {}
    if not fed or any(f not in payload for f in fed):
        return None
    return tuple(str(payload[f]) for f in fed)


def _score_contexts(task: Task, contexts: list[Context], scored: _Scored, context_score: str,
                    k: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores (NaN: not scored) and the chosen positions of the contexts."""
    values = np.full(len(contexts), np.nan)
    if not contexts:
        return values, np.zeros(0, dtype=np.int64)
    if task.kind_impl.model_context_fields(task.typed_config):
        best: dict[tuple[str, ...], tuple[float, int]] = {}
        for item, value, group in zip(scored.items, scored.values, scored.groups, strict=True):
            key = _fed_key(task, item.context)
            if key is not None and (key not in best or value > best[key][0]):
                best[key] = (float(value), int(group))
        groups = np.full(len(contexts), -1)
        for i, c in enumerate(contexts):
            hit = best.get(_fed_key(task, c.payload))
            if hit is not None:
                values[i], groups[i] = hit
    else:
        if scored.scorer is None or task.kind_impl.answer_is_span:
            return values, np.zeros(0, dtype=np.int64)
        ctx = scoring_context(scored.scorer, context_inputs(contexts), None, context_score)
        values = score_registry.compute(context_score, ctx)
        groups = ctx.probs.argmax(1)
    scored_at = np.flatnonzero(~np.isnan(values))
    chosen = selection.select("hardest", values[scored_at], groups[scored_at], k)
    return values, scored_at[chosen]


def _store(items: list[LabeledItem], item_values, item_chosen, contexts: list[Context], ctx_values, ctx_chosen,
           round: Round) -> None:
    LabeledItem.objects.filter(seed_round=round).update(seed_round=None)
    Context.objects.filter(round=round, is_seed=True).update(round=None, is_seed=False)
    chosen_items, chosen_ctx = set(item_chosen.tolist()), set(ctx_chosen.tolist())
    for i, item in enumerate(items):
        item.hardness_score, item.seed_round = float(item_values[i]), round if i in chosen_items else None
    for i, c in enumerate(contexts):
        seeded = i in chosen_ctx
        value = ctx_values[i]
        c.hardness_score = None if np.isnan(value) else float(value)
        c.round, c.is_seed = round if seeded else None, seeded
    LabeledItem.objects.bulk_update(items, ["hardness_score", "seed_round"], batch_size=500)
    Context.objects.bulk_update(contexts, ["hardness_score", "round", "is_seed"], batch_size=500)


def seed_round(
    task: Task, round: Round, k: int | None = None, score: str | None = None,
    scorer: Scorer | Callable | None = None, *, pool_max: int | None = None, context_score: str = "entropy",
    include_items: bool = True, include_contexts: bool = True, min_steps: int | None = None,
    seed: int | None = None, encoder=None, tokenizer=None, encoder_name: str | None = None,
) -> SeedResult:
    """Score the task's pool and mark the k hardest per label as `round`'s seeds (idempotent).

    k, score, pool_max, min_steps and seed default to the task's settings (`typed_config.seeding`).
    `scorer`: None (Hard-Bench: the weak scorer, trained here on the sampled pool), or any
    `hardness.scorers.Scorer` / callable `inputs -> probabilities` (classification only; e.g. in research).
    `encoder`/`tokenizer`: the weak scorer's frozen encoder (default `weak_encoder(encoder_name)`: any encoder
    `zoo.encoders.resolve` accepts, on the `ZOO_DEVICE` device; a bad name raises EncoderError before any work).
    """
    if round.task_id != task.pk:
        raise ValueError(f"round {round} does not belong to task {task.slug}")
    if score_registry.SCORES[context_score].needs_labels:
        raise ValueError(f"context_score {context_score!r} needs gold labels; contexts have none")
    if encoder is None and (scorer is None or task.kind_impl.answer_is_span):
        check_encoder(encoder_name)
    conf = task.typed_config.seeding
    k = conf.k_per_label if k is None else k
    score = conf.score if score is None else score
    pool_max = conf.pool_max if pool_max is None else pool_max
    sample_seed = conf.seed if seed is None else seed
    span = task.kind_impl.answer_is_span
    if span and scorer is not None:
        raise ValueError("a QA task is scored by the weak span scorer; a scorer cannot be passed")
    everything = list(item_pool(task, round))  # scored even when only contexts are marked: they train the scorer
    items = stable_sample(everything, pool_max, sample_seed, item_key)
    contexts = list(context_pool(task, round)) if include_contexts else []
    contexts = stable_sample(contexts, pool_max, sample_seed, context_key)
    weak = {"min_steps": min_steps, "seed": seed, "encoder": encoder, "tokenizer": tokenizer,
            "encoder_name": encoder_name}
    if span:
        scored = _score_span_items(task, items, score, k, **weak)
    else:
        if scorer is not None:
            scorer = as_scorer(scorer, task.typed_config.labels)
        elif not items:
            raise ValueError("no labelled train items to fit a weak scorer on; pass a scorer")
        scored = _score_label_items(task, items, scorer, score, k, **weak)
    ctx_values, ctx_chosen = _score_contexts(task, contexts, scored, context_score, k)
    stored_items = scored.items if include_items else []
    item_chosen = scored.chosen if include_items else np.zeros(0, dtype=np.int64)
    with transaction.atomic():
        _store(stored_items, scored.values, item_chosen, contexts, ctx_values, ctx_chosen, round)
    return SeedResult(len(stored_items), len(item_chosen), int((~np.isnan(ctx_values)).sum()), len(ctx_chosen),
                      scored.misclassified if include_items else float("nan"), score, len(everything),
                      scored.training, scored.scorer)
