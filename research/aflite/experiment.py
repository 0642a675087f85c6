"""The AFLite experiment on SST-2: is the filtered subset harder, and what does training on it do?

The pool (a seeded sample of SST-2 train) is split once, at random, into
- the *reference* part R, which only trains the models of question (a), and
- the *filter* part A, which AFLite (`hardness.aflite`, the paper's parameters) reduces to the filtered subset F.
Random subsets Q of A of the same size as F are the control (several seeds), plus one random subset matched to
F's label shares (AFLite may change the label balance, which alone moves accuracy).

(a) Models trained on R (disjoint from F and Q) are evaluated on F and on Q: accuracy with Wilson intervals, and
    the difference F − Q with a bootstrap interval (each set resampled on its own; they are different examples).
(b) Models trained on F and on Q are evaluated on SST-2 dev, and out of domain on the positive/negative rows of
    DynaSent R1 and R2 test (evaluation only): accuracy with Wilson intervals, the paired bootstrap of the
    difference and the exact McNemar test (the same examples).

"Model" is a classifier on fixed features, two of them: `probe`, logistic regression on the frozen MiniLM
embeddings (the representation AFLite filtered on; the paper's "linear probe"), and `tfidf`, logistic regression
on TF-IDF word uni- and bigrams (a representation AFLite never saw, so (a) is not only circular).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hardness.aflite import DEFAULT_K, DEFAULT_N, DEFAULT_T, PAPER_M, PAPER_TAU, aflite
from research.aflite.pool import Embedded, load_embedded
from research.hardbench.data import TextSet
from rounds.statistics import mcnemar, paired_bootstrap, wilson

MODELS = ("probe", "tfidf")


@dataclass
class ExperimentConfig:
    data_dir: Path
    out_dir: Path
    cache_dir: Path
    pool_size: int | None = 24_000  # rows of SST-2 train (67,349); None: all
    reference_share: float = 1 / 3  # of the pool, for (a)'s training only
    seed: int = 0  # pool sample, split and AFLite's partitions
    random_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    m: int = PAPER_M
    t: float | int = DEFAULT_T
    k: float | int = DEFAULT_K
    n: float | int = DEFAULT_N
    tau: float = PAPER_TAU
    resamples: int = 2000


# --- pieces (small, tested on their own) ---------------------------------------------------------------------


def split_pool(size: int, reference_share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(reference, filter part): disjoint sorted positions covering 0..size-1."""
    if not 0.0 < reference_share < 1.0:
        raise ValueError(f"reference_share must be in (0, 1), got {reference_share}")
    order = np.random.default_rng(seed).permutation(size)
    cut = int(round(size * reference_share))
    return np.sort(order[:cut]), np.sort(order[cut:])


def random_subset(positions: np.ndarray, size: int, seed: int) -> np.ndarray:
    """`size` of `positions` drawn without replacement (sorted)."""
    return np.sort(np.random.default_rng(seed).choice(positions, size=size, replace=False))


def label_matched_subset(positions: np.ndarray, labels: np.ndarray, like: np.ndarray, seed: int) -> np.ndarray:
    """A random subset of `positions` with as many of each label as `like` (positions) has."""
    rng = np.random.default_rng(seed)
    parts = []
    for label in np.unique(labels[like]):
        want = int((labels[like] == label).sum())
        have = positions[labels[positions] == label]
        parts.append(rng.choice(have, size=min(want, len(have)), replace=False))
    return np.sort(np.concatenate(parts))


def accuracy_interval(correct: np.ndarray) -> dict:
    """Accuracy with its Wilson 95 % interval (from `rounds.statistics.wilson`, which is stated for errors)."""
    correct = np.asarray(correct, dtype=bool)
    err = wilson(int((~correct).sum()), len(correct))
    return {"n": len(correct), "accuracy": 1.0 - err.value, "low": 1.0 - err.high, "high": 1.0 - err.low}


def unpaired_difference(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 0) -> dict:
    """mean(a) − mean(b) for two independent samples of 0/1, with a percentile bootstrap 95 % interval."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    diffs = (a[rng.integers(0, len(a), (resamples, len(a)))].mean(1)
             - b[rng.integers(0, len(b), (resamples, len(b)))].mean(1))
    return {"difference": float(a.mean() - b.mean()), "low": float(np.percentile(diffs, 2.5)),
            "high": float(np.percentile(diffs, 97.5))}


def paired_difference(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 0) -> dict:
    """Accuracy of a − accuracy of b on the same examples: paired bootstrap interval and exact McNemar p."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    # rounds.statistics works on errors: (after − before) errors = accuracy of before − accuracy of after
    diff = paired_bootstrap((~a).astype(int), (~b).astype(int), resamples, seed)
    fixed, broken = int((a & ~b).sum()), int((~a & b).sum())
    return {"difference": diff.value, "low": diff.low, "high": diff.high, "p_mcnemar": mcnemar(fixed, broken)}


# --- models on fixed features ----------------------------------------------------------------------------------


def fit_predict(model: str, train_x, train_y: np.ndarray, test_x) -> np.ndarray:
    """Train `model` ("probe": features are embeddings; "tfidf": features are texts) and predict `test_x`."""
    from sklearn.linear_model import LogisticRegression

    if model == "probe":
        return LogisticRegression(max_iter=1000).fit(train_x, train_y).predict(test_x)
    if model == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
        clf = LogisticRegression(max_iter=1000, C=4.0).fit(vec.fit_transform(train_x), train_y)
        return clf.predict(vec.transform(test_x))
    raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")


def _inputs(model: str, data: Embedded, positions: np.ndarray):
    if model == "probe":
        return data.features[positions]
    return [data.rows.texts[i] for i in positions]


def _concatenate(parts: list[Embedded]) -> Embedded:
    rows = TextSet([t for p in parts for t in p.rows.texts], np.concatenate([p.rows.labels for p in parts]),
                   np.concatenate([p.rows.ids for p in parts]))
    return Embedded(rows, np.concatenate([p.features for p in parts]))


# --- the run ------------------------------------------------------------------------------------------------


def filtered_subset(config: ExperimentConfig, pool: Embedded, part: np.ndarray, log: Callable[[str], None]) -> dict:
    """AFLite on the filter part, cached in cache_dir by its settings (positions into the pool)."""
    key = (f"aflite-pool{len(pool.rows)}-seed{config.seed}-ref{config.reference_share:.3f}-m{config.m}-t{config.t}"
           f"-k{config.k}-n{config.n}-tau{config.tau}.json")
    path = config.cache_dir / key
    if path.exists():
        return json.loads(path.read_text())
    start = time.perf_counter()
    res = aflite(pool.features[part], pool.rows.labels[part], m=config.m, t=config.t, k=config.k, n=config.n,
                 tau=config.tau, seed=config.seed,
                 progress=lambda i, size, removed: log(f"AFLite iteration {i}: removed {removed}, {size} left"))
    out = {"kept": part[res.keep].tolist(), "iterations": res.iterations, "stopped_by": res.stopped_by,
           "params": asdict(res.params), "seconds": time.perf_counter() - start,
           "mean_predictability_first": float(res.predictability[res.removed_at == 0].mean())
           if (res.removed_at == 0).any() else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def run(config: ExperimentConfig, encoder, tokenizer, log: Callable[[str], None] = print) -> dict:
    timings: dict[str, float] = {}
    start = time.perf_counter()
    pool, evals = load_embedded(config.data_dir, config.cache_dir, config.pool_size, config.seed, encoder, tokenizer)
    timings["embed (or read the cache)"] = time.perf_counter() - start
    labels = pool.rows.labels
    reference, part = split_pool(len(pool.rows), config.reference_share, config.seed)
    mark = time.perf_counter()
    filt = filtered_subset(config, pool, part, log)
    timings["AFLite (or read the cache)"] = time.perf_counter() - mark
    kept = np.asarray(filt["kept"], dtype=np.int64)
    controls = {f"random (seed {s})": random_subset(part, len(kept), s) for s in config.random_seeds}
    controls["random, label-matched"] = label_matched_subset(part, labels, kept, config.random_seeds[0])
    subsets = {"AFLite-filtered": kept, **controls}
    mark = time.perf_counter()
    harder, training = [], []
    all_evals = _concatenate(list(evals.values()))
    eval_correct: dict[tuple[str, str, str], np.ndarray] = {}
    for model in MODELS:
        # (a) trained on R, evaluated on each subset
        predicted = fit_predict(model, _inputs(model, pool, reference), labels[reference],
                                _inputs(model, pool, np.concatenate(list(subsets.values()))))
        offset, correct = 0, {}
        for name, positions in subsets.items():
            correct[name] = predicted[offset: offset + len(positions)] == labels[positions]
            offset += len(positions)
        for name, ok in correct.items():
            row = {"model": model, "evaluated_on": name, **accuracy_interval(ok)}
            if name != "AFLite-filtered":
                row["filtered_minus_this"] = unpaired_difference(correct["AFLite-filtered"], ok, config.resamples)
            harder.append(row)
        # (b) trained on each subset, evaluated on each evaluation set
        for name, positions in subsets.items():
            predictions = fit_predict(model, _inputs(model, pool, positions), labels[positions],
                                      _inputs(model, all_evals, np.arange(len(all_evals.rows))))
            offset = 0
            for eval_name, data in evals.items():
                ok = predictions[offset: offset + len(data.rows)] == data.rows.labels
                offset += len(data.rows)
                eval_correct[(model, eval_name, name)] = ok
                row = {"model": model, "evaluated_on": eval_name, "trained_on": name,
                       "train_size": len(positions), **accuracy_interval(ok)}
                if name != "AFLite-filtered":
                    row["filtered_minus_this"] = paired_difference(
                        eval_correct[(model, eval_name, "AFLite-filtered")], ok, config.resamples)
                training.append(row)
    timings["models (a) and (b)"] = time.perf_counter() - mark
    timings["total"] = time.perf_counter() - start
    summary = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
        "sizes": {"pool": len(pool.rows), "reference": len(reference), "filter_part": len(part),
                  "filtered": len(kept)} | {name: len(data.rows) for name, data in evals.items()},
        "positive_share": {name: float(labels[pos].mean()) for name, pos in subsets.items()}
        | {"filter part": float(labels[part].mean())}
        | {name: float(data.rows.labels.mean()) for name, data in evals.items()},
        "aflite": {k: v for k, v in filt.items() if k != "kept"},
        "harder": harder, "training": training, "timings": timings,
    }
    config.out_dir.mkdir(parents=True, exist_ok=True)
    (config.out_dir / "results.json").write_text(json.dumps(summary, indent=1))
    from research.aflite.report import write_report

    write_report(summary, config.out_dir / "report.md")
    return summary
