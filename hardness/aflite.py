"""AFLite (Le Bras et al., ICML 2020, "Adversarial Filters of Dataset Biases", Algorithm 1) on frozen embeddings.

Given pre-computed representations X (here: the frozen encoder's mean-pooled features) and labels y:

    S = D
    while |S| > n:
        for i in 1..m: split S at random into a training part of size t and the rest; train a linear probe
                       (logistic regression) on the t, predict the rest
        predictability p(e) = share of the probes that predicted e right, among those that held e out
        remove the (up to) k instances of S with the highest p(e), among those with p(e) ≥ τ
        stop when fewer than k qualified (they are still removed)
    return S

What is left is what linear probes over the representation do *not* find easy: the filtered, harder subset.

Parameters. The paper uses m = 64 partitions and the early-stopping threshold τ = 0.75 throughout. For SNLI
(|D| ≈ 550k, filtered to n ≈ 92k) it trains each probe on t = 50k and removes k = 10k per iteration. Those two
sizes are absolute for one dataset; here they default to the same *shares* of the dataset's size
(t = 50k/550k ≈ 0.091, k = 10k/550k ≈ 0.018, n = 92k/550k ≈ 0.167), so a pool of any size is filtered at the
paper's pace. An int is taken as a count of instances, a float in (0, 1) as a share of |D|.

Deviations, on purpose: the last iteration removes at most |S| − n instances, so the result has exactly n
instances when the target is reached (the paper's loop may overshoot by up to k − 1); ties in predictability
are broken by a seeded permutation (not by position, which would favour low indices); an instance no probe held
out has predictability 0 (kept). The probes are scikit-learn's `LogisticRegression` (lbfgs, C = 1), each
seeded from `seed`, so the same (X, y, parameters, seed) give the same result.

`hardness_scores` turns a run into a score for the registry (`hardness.scores`, "aflite"): higher is harder.
No Django here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The paper's parameters (Le Bras et al. 2020); t, k and n as shares of |D| from its SNLI setting.
PAPER_M = 64
PAPER_TAU = 0.75
PAPER_SNLI = {"D": 550_000, "t": 50_000, "k": 10_000, "n": 92_000}
DEFAULT_T = PAPER_SNLI["t"] / PAPER_SNLI["D"]  # ≈ 0.091
DEFAULT_K = PAPER_SNLI["k"] / PAPER_SNLI["D"]  # ≈ 0.018
DEFAULT_N = PAPER_SNLI["n"] / PAPER_SNLI["D"]  # ≈ 0.167
PROBE_C = 1.0  # scikit-learn's default inverse regularisation strength
PROBE_MAX_ITER = 50  # L-BFGS iterations of the batched probes (their predictions agree ≈98 % with sklearn's)


@dataclass(frozen=True)
class AFLiteParams:
    """Resolved sizes (counts) of one run."""

    m: int
    t: int
    k: int
    n: int
    tau: float


@dataclass(frozen=True)
class AFLiteResult:
    keep: np.ndarray  # bool (N,): the filtered subset S
    removed_at: np.ndarray  # int (N,): the iteration (0-based) that removed the instance; -1: kept
    predictability: np.ndarray  # float (N,): its score in the last iteration it took part in
    iterations: int
    params: AFLiteParams
    stopped_by: str  # "target" (|S| reached n) or "threshold" (fewer than k instances with p ≥ τ)

    @property
    def kept(self) -> np.ndarray:
        return np.flatnonzero(self.keep)


def _count(value: int | float, total: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a count (int) or a share of the dataset (float in (0, 1)), got {value!r}")
    if isinstance(value, (float, np.floating)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} as a share of the dataset must be in (0, 1), got {value}")
        return max(1, int(round(value * total)))
    return int(value)


def resolve(total: int, *, m: int = PAPER_M, t: int | float = DEFAULT_T, k: int | float = DEFAULT_K,
            n: int | float = DEFAULT_N, tau: float = PAPER_TAU) -> AFLiteParams:
    """The run's sizes for a dataset of `total` instances; a ValueError says which parameter is wrong."""
    if total < 3:
        raise ValueError(f"AFLite needs at least 3 instances, got {total}")
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m (number of random partitions) must be a positive int, got {m!r}")
    if not isinstance(tau, (int, float, np.integer, np.floating)) or not 0.0 <= float(tau) <= 1.0:
        raise ValueError(f"tau (early-stopping threshold) must be in [0, 1], got {tau!r}")
    params = AFLiteParams(int(m), _count(t, total, "t"), _count(k, total, "k"), _count(n, total, "n"), float(tau))
    if params.k < 1:
        raise ValueError(f"k (slice size) must be at least 1, got {params.k}")
    if not 0 <= params.n < total:
        raise ValueError(f"n (target size) must be in [0, {total}), got {params.n}")
    if not 1 <= params.t < total - 1:
        raise ValueError(f"t (probe training size) must be in [1, {total - 1}), got {params.t}")
    return params


def _sklearn_correct(X: np.ndarray, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]],
                     seed: int) -> list[np.ndarray]:
    """One scikit-learn `LogisticRegression` (lbfgs, C = 1) per split: the reference the batched probes match."""
    from sklearn.linear_model import LogisticRegression

    out = []
    for train, held in splits:
        classes = np.unique(y[train])
        if len(classes) == 1:  # a split with one label: the probe can only say that label
            out.append(y[held] == classes[0])
            continue
        probe = LogisticRegression(C=PROBE_C, max_iter=100, random_state=seed).fit(X[train], y[train])
        out.append(probe.predict(X[held]) == y[held])
    return out


def _torch_correct(X: np.ndarray, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]],
                   seed: int) -> list[np.ndarray]:
    """All the splits' probes at once: multinomial logistic regression with scikit-learn's objective
    (C · Σ cross-entropy + ½‖W‖², bias not penalised), minimised jointly by L-BFGS from zero. The problems are
    independent and convex, so the sum's minimiser is each one's; one batched pass replaces m scikit-learn fits
    (whose per-fit overhead dominates on 2 cores)."""
    import torch

    classes, codes = np.unique(y, return_inverse=True)
    n_classes = max(2, len(classes))
    feats = torch.as_tensor(X, dtype=torch.float32)
    target = torch.as_tensor(codes, dtype=torch.long)
    train = torch.as_tensor(np.stack([tr for tr, _ in splits]))  # (m, t)
    Xt, yt = feats[train], target[train]  # (m, t, d), (m, t)
    W = torch.zeros(len(splits), X.shape[1], n_classes, requires_grad=True)
    b = torch.zeros(len(splits), 1, n_classes, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], lr=1.0, max_iter=PROBE_MAX_ITER, tolerance_grad=1e-6,
                            tolerance_change=1e-10, history_size=20, line_search_fn="strong_wolfe")

    def objective():
        opt.zero_grad()
        logits = torch.baddbmm(b, Xt, W)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, n_classes), yt.reshape(-1), reduction="sum")
        loss = (PROBE_C * ce + 0.5 * (W * W).sum()) / train.shape[1]
        loss.backward()
        return loss

    opt.step(objective)
    with torch.no_grad():
        predicted = (torch.einsum("nd,mdc->mnc", feats, W) + b).argmax(-1).numpy()  # (m, N)
    return [predicted[j, held] == codes[held] for j, (_, held) in enumerate(splits)]


PROBES = {"torch": _torch_correct, "sklearn": _sklearn_correct}


def predictability(X: np.ndarray, y: np.ndarray, m: int, t: int, rng: np.random.Generator,
                   probe: str = "torch") -> np.ndarray:
    """Each instance's share of correct predictions by the probes that held it out (0 if none did)."""
    size = len(y)
    splits = []
    for _ in range(m):
        order = rng.permutation(size)
        splits.append((order[:t], order[t:]))
    correct = PROBES[probe](X, y, splits, int(rng.integers(2**31 - 1)))
    right = np.zeros(size)
    held_out = np.zeros(size)
    for (_, held), ok in zip(splits, correct, strict=True):
        right[held] += ok
        held_out[held] += 1
    return np.divide(right, held_out, out=np.zeros(size), where=held_out > 0)


def aflite(X: np.ndarray, y: np.ndarray, *, m: int = PAPER_M, t: int | float = DEFAULT_T,
           k: int | float = DEFAULT_K, n: int | float = DEFAULT_N, tau: float = PAPER_TAU, seed: int = 0,
           probe: str = "torch", progress=None) -> AFLiteResult:
    """Filter (X, y) with AFLite; t, k, n are counts (int) or shares of len(y) (float), resolved once on the
    whole dataset. `progress(iteration, size, removed)` is called after every iteration when given."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of embeddings (instances × dimensions), got shape {X.shape}")
    if len(X) != len(y):
        raise ValueError(f"X and y differ in length: {len(X)} embeddings, {len(y)} labels")
    params = resolve(len(y), m=m, t=t, k=k, n=n, tau=tau)
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {', '.join(PROBES)}, got {probe!r}")
    rng = np.random.default_rng(seed)
    alive = np.arange(len(y))
    removed_at = np.full(len(y), -1, dtype=np.int64)
    scores = np.zeros(len(y))
    iteration, stopped_by = 0, "target"
    while len(alive) > params.n:
        t_now = min(params.t, len(alive) - 1)
        p = predictability(X[alive], y[alive], params.m, t_now, rng, probe)
        scores[alive] = p
        qualify = np.flatnonzero(p >= params.tau)
        # highest predictability first; ties in a seeded random order
        tie = rng.permutation(len(qualify))
        ranked = qualify[np.lexsort((tie, -p[qualify]))]
        take = ranked[: min(params.k, len(alive) - params.n)]
        removed_at[alive[take]] = iteration
        alive = np.delete(alive, take)
        iteration += 1
        if progress is not None:
            progress(iteration, len(alive), len(take))
        if len(qualify) < params.k and len(alive) > params.n:
            stopped_by = "threshold"
            break
    keep = np.zeros(len(y), dtype=bool)
    keep[alive] = True
    return AFLiteResult(keep, removed_at, scores, iteration, params, stopped_by)


def hardness_scores(result: AFLiteResult) -> np.ndarray:
    """Higher = harder: the filtered subset above everything removed, an instance removed later above one removed
    earlier, and within each group lower predictability above higher (2·stage + (1 − p), stage = the iteration
    that removed it, the number of iterations for the kept)."""
    stage = np.where(result.keep, result.iterations, result.removed_at).astype(np.float64)
    return 2.0 * stage + (1.0 - result.predictability)
