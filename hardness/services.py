"""Round seeding: score a task's pool and mark the k hardest per label as the round's seeds.

The pool is the task's labelled seed items (`LabeledItem`, split=train) not yet used by another round, and
its contexts not yet assigned to a round. Items are scored with a gold-label score (`loss` by default);
contexts have no label, so they get a label-free score of the same scorer (`entropy` by default, or
`margin`) and are grouped "per label" by the scorer's predicted label. Scores are stored on
`hardness_score`; the seeds get `LabeledItem.seed_round = round` and `Context.round = round, is_seed = True`.
Running it again for the same round first clears that round's seed marks, so it is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Q

from hardness import scores as score_registry
from hardness import selection
from hardness.deep import gradnorm_deep
from hardness.encoding import embed_texts
from hardness.sanity import share_misclassified
from hardness.scorers import FeatureScorer, HeadScorer, Inputs, Scorer, as_scorer, frozen_head_scorer, input_text
from modelzoo.encoder import load_encoder, load_tokenizer
from tasks.models import Context, LabeledItem, Round, Task


@dataclass(frozen=True)
class SeedResult:
    items_scored: int
    items_seeded: int
    contexts_scored: int
    contexts_seeded: int
    seeds_misclassified: float  # share of seeded items the scorer gets wrong (a sanity figure)


def item_pool(task: Task, round: Round):
    return LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TRAIN).filter(
        Q(seed_round__isnull=True) | Q(seed_round=round)).order_by("id")


def context_pool(task: Task, round: Round):
    return Context.objects.filter(task=task).filter(Q(round__isnull=True) | Q(round=round, is_seed=True)).order_by("id")


def item_inputs(task: Task, items: Sequence[LabeledItem]) -> list[dict[str, str]]:
    kind, config = task.kind_impl, task.typed_config
    return [kind.model_input(config, item.context or {}, item.input) for item in items]


def context_inputs(contexts: Sequence[Context]) -> list[dict[str, str]]:
    """A context is scored as one text: its payload's string values joined (e.g. the prompt)."""
    return [{"text": " ".join(str(v) for v in (c.payload or {}).values() if isinstance(v, str))} for c in contexts]


def scoring_context(scorer: Scorer, inputs: Inputs, labels: np.ndarray | None, score: str) -> score_registry.ScoringContext:
    probs = scorer.predict_proba(inputs)
    features = scorer.features(inputs) if score == "gradnorm" and isinstance(scorer, FeatureScorer) else None
    providers: dict[str, Callable] = {"el2n_runs": lambda: [probs]}
    if isinstance(scorer, HeadScorer) and labels is not None:
        texts = [input_text(i) for i in inputs]
        providers["gradnorm_deep"] = lambda: gradnorm_deep(scorer.encoder, scorer.head, scorer.tokenizer, texts, labels)
    return score_registry.ScoringContext(labels, probs, features, providers)


def default_scorer(task: Task, items: Sequence[LabeledItem]) -> HeadScorer:
    """The weak scorer of Hard-Bench: the frozen pretrained encoder + a linear head trained one epoch."""
    names = list(task.typed_config.labels)
    known = [i for i in items if task.kind_impl.target_label(i.target) in names]
    if not known:
        raise ValueError("no labelled train items to fit a weak scorer on; pass a scorer")
    encoder, tokenizer = load_encoder(), load_tokenizer()
    feats = embed_texts(encoder, tokenizer, [input_text(x) for x in item_inputs(task, known)])
    labels = np.array([names.index(task.kind_impl.target_label(i.target)) for i in known])
    return frozen_head_scorer(encoder, tokenizer, feats, labels, names)


def _score_items(task: Task, items: list[LabeledItem], scorer: Scorer, score: str, k: int):
    names = list(scorer.labels)
    items = [i for i in items if task.kind_impl.target_label(i.target) in names]
    if not items:
        return items, np.zeros(0), np.zeros(0, dtype=np.int64), None
    labels = np.array([names.index(task.kind_impl.target_label(i.target)) for i in items])
    ctx = scoring_context(scorer, item_inputs(task, items), labels, score)
    values = score_registry.compute(score, ctx)
    chosen = selection.select("hardest", values, labels, k)
    return items, values, chosen, share_misclassified(chosen, ctx.probs, labels)


def _score_contexts(contexts: list[Context], scorer: Scorer, score: str, k: int):
    if not contexts:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    ctx = scoring_context(scorer, context_inputs(contexts), None, score)
    values = score_registry.compute(score, ctx)
    return values, selection.select("hardest", values, ctx.probs.argmax(1), k)


def _store(items: list[LabeledItem], item_values, item_chosen, contexts: list[Context], ctx_values, ctx_chosen,
           round: Round) -> None:
    LabeledItem.objects.filter(seed_round=round).update(seed_round=None)
    Context.objects.filter(round=round, is_seed=True).update(round=None, is_seed=False)
    chosen_items, chosen_ctx = set(item_chosen.tolist()), set(ctx_chosen.tolist())
    for i, item in enumerate(items):
        item.hardness_score, item.seed_round = float(item_values[i]), round if i in chosen_items else None
    for i, c in enumerate(contexts):
        seeded = i in chosen_ctx
        c.hardness_score, c.round, c.is_seed = float(ctx_values[i]), round if seeded else None, seeded
    LabeledItem.objects.bulk_update(items, ["hardness_score", "seed_round"], batch_size=500)
    Context.objects.bulk_update(contexts, ["hardness_score", "round", "is_seed"], batch_size=500)


def seed_round(
    task: Task, round: Round, k: int, score: str = "loss", scorer: Scorer | Callable | None = None, *,
    context_score: str = "entropy", include_items: bool = True, include_contexts: bool = True,
) -> SeedResult:
    """Score the task's pool and mark the k hardest per label as `round`'s seeds (idempotent).

    `scorer`: any `hardness.scorers.Scorer` (e.g. the current round's model), or a callable
    `inputs -> probabilities` in the order of the task's labels; None fits the weak scorer on the items.
    """
    if round.task_id != task.pk:
        raise ValueError(f"round {round} does not belong to task {task.slug}")
    if score_registry.SCORES[context_score].needs_labels:
        raise ValueError(f"context_score {context_score!r} needs gold labels; contexts have none")
    items = list(item_pool(task, round)) if include_items else []
    contexts = list(context_pool(task, round)) if include_contexts else []
    scorer = default_scorer(task, items) if scorer is None else as_scorer(scorer, task.typed_config.labels)
    items, item_values, item_chosen, mis = _score_items(task, items, scorer, score, k)
    ctx_values, ctx_chosen = _score_contexts(contexts, scorer, context_score, k)
    with transaction.atomic():
        _store(items, item_values, item_chosen, contexts, ctx_values, ctx_chosen, round)
    return SeedResult(len(items), len(item_chosen), len(contexts), len(ctx_chosen),
                      float("nan") if mis is None else mis)
