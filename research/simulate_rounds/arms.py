"""The loop over many rounds: three arms of collection drawing candidates from one pool, round after round.

Wallace et al. (2022, "Analyzing Dynamic Adversarial Training Data in the Limit", Fig. 1) ran twenty rounds and
found standard collection ahead early and dynamic adversarial collection ahead later. This is that comparison in
simulation, on frozen features so that it runs in minutes on two CPU cores:

- a **pool** of candidates stands in for what writers would write, in a random order per seed (the order they
  "come" in); every arm reads the same order;
- round 0: a **seed set** (the first `seed_size` candidates) trains model M0, the model writers face in round 1;
- each round r = 1 … R every arm accepts `budget` candidates and adds them to its training data (cumulative), then
  trains its model M_r on the seed set and everything it accepted, and M_r is evaluated on the held-out sets:
  - **standard**: the next `budget` candidates as they come;
  - **static adversarial**: the next candidates that fool M0 (round 1's model), skipping the rest;
  - **dynamic adversarial**: the next candidates that fool the arm's current model M_{r-1} (in round 1 that is
    M0, so round 1 is the same for both adversarial arms).
  A skipped candidate is gone for that arm (a writer's failed attempt); the count of candidates each arm drew is
  the cost of its examples.

A model is the product's linear head on frozen features (`hardness.heads.train_linear_head`: Adam on
cross-entropy; the features are `hardness.encoding.embed_texts`' mean-pooled all-MiniLM-L6-v2, computed once and
cached, research/simulate_rounds/embeddings.py). "Fooled" is the head's argmax differing from the pool's label.

`python -m research.simulate_rounds.arms` runs it on SST-2 train candidates with DynaSent R1 test, DynaSent R2
test and SST-2 dev held out, and writes a report, the figures as JSON and a figure (docs/simulate_rounds.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy import stats

from hardness.heads import probs_of, train_linear_head
from rounds.statistics import wilson

ARMS = ("standard", "static", "dynamic")


class PoolExhausted(Exception):
    """The pool ran out before an arm could accept a round's budget."""


@dataclass
class Data:
    x: np.ndarray  # float32 (n, d) features
    labels: np.ndarray  # int64 (n,)

    def __len__(self) -> int:
        return len(self.labels)


@dataclass
class Config:
    rounds: int = 10
    budget: int = 500  # accepted candidates per round and arm
    seed_size: int = 500  # round 0's training data (the first candidates of the seed's order)
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    steps: int = 1500  # optimiser updates per model (epochs = ceil(steps / batches), at least `min_epochs`)
    min_epochs: int = 5
    batch_size: int = 32
    lr: float = 1e-3
    scan: int = 2000  # candidates predicted at once while an adversarial arm looks for fooling ones


@dataclass
class Model:
    head: torch.nn.Module
    round: int  # the round whose data it was trained on (0: the seed set)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return probs_of(self.head, x).argmax(1)


@dataclass
class RoundResult:
    round: int
    against: int | None  # the model the round's candidates had to fool (its round), None for standard
    accepted: list[int]  # pool indices accepted this round
    drawn: int  # candidates read from the stream this round (accepted + skipped)
    train_size: int
    accuracy: dict[str, float]  # held-out name -> accuracy of the model trained after this round
    label_shares: list[float] = field(default_factory=list)  # share of each label among the accepted
    agreement: dict[str, float] = field(default_factory=dict)  # held-out name -> share predicted as round 0's model
    correct: dict[str, np.ndarray] = field(default_factory=dict)  # held-out name -> 1 where right (not saved)


@dataclass
class ArmRun:
    arm: str
    seed: int
    rounds: list[RoundResult] = field(default_factory=list)  # rounds[0]: the seed set's model (round 0)
    models: list[Model] = field(default_factory=list)  # models[r]: trained after round r
    exhausted: str = ""


def fit(x: np.ndarray, labels: np.ndarray, n_labels: int, seed: int, config: Config) -> torch.nn.Module:
    """The product's linear head on frozen features, trained for about `config.steps` updates."""
    batches = math.ceil(len(labels) / config.batch_size)
    epochs = max(config.min_epochs, math.ceil(config.steps / batches))
    return train_linear_head(x, labels, n_labels, epochs=epochs, seed=seed, lr=config.lr,
                             batch_size=config.batch_size).head


def shares(labels: np.ndarray, n_labels: int) -> list[float]:
    counts = np.bincount(labels, minlength=n_labels)
    return [float(c / max(1, counts.sum())) for c in counts]


def evaluate(model: Model, held: dict[str, Data]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    correct = {name: (model.predict(d.x) == d.labels).astype(np.int8) for name, d in held.items()}
    return {name: float(c.mean()) for name, c in correct.items()}, correct


def collect(arm: str, pool: Data, order: np.ndarray, start: int, budget: int, judge: Model | None,
            scan: int) -> tuple[list[int], int]:
    """The next `budget` accepted candidates of `order` from position `start`: all of them for the standard arm,
    only those `judge` gets wrong for the adversarial ones. Returns (accepted pool indices, candidates drawn)."""
    if arm == "standard":
        taken = order[start:start + budget]
        if len(taken) < budget:
            raise PoolExhausted(f"{len(order) - start} candidates left, {budget} needed")
        return [int(i) for i in taken], budget
    accepted: list[int] = []
    position = start
    while len(accepted) < budget:
        if position >= len(order):
            raise PoolExhausted(f"the pool ran out after {len(accepted)} of {budget} fooling candidates")
        window = order[position:position + scan]
        fooled = judge.predict(pool.x[window]) != pool.labels[window]
        for offset in np.flatnonzero(fooled):
            accepted.append(int(window[offset]))
            if len(accepted) == budget:
                return accepted, int(position + offset + 1 - start)
        position += len(window)
    return accepted, position - start


def run_arm(arm: str, pool: Data, held: dict[str, Data], seed: int, config: Config, n_labels: int = 2,
            keep_correct: bool = True) -> ArmRun:
    """One arm over `config.rounds` rounds for one seed (the candidates' order and the heads' initialisation)."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; one of {', '.join(ARMS)}")
    order = np.random.default_rng(seed).permutation(len(pool))
    if config.seed_size >= len(order):
        raise PoolExhausted(f"a pool of {len(order)} has no candidates after a seed set of {config.seed_size}")
    run = ArmRun(arm, seed)
    train = [int(i) for i in order[:config.seed_size]]
    position = config.seed_size
    model = Model(fit(pool.x[train], pool.labels[train], n_labels, seed, config), 0)
    accuracy, correct = evaluate(model, held)
    first = {h: model.predict(d.x) for h, d in held.items()}
    run.models.append(model)
    run.rounds.append(RoundResult(0, None, list(train), config.seed_size, len(train), accuracy,
                                  shares(pool.labels[train], n_labels), {h: 1.0 for h in held},
                                  correct if keep_correct else {}))
    for number in range(1, config.rounds + 1):
        judge = {"standard": None, "static": run.models[0], "dynamic": run.models[-1]}[arm]
        try:
            accepted, drawn = collect(arm, pool, order, position, config.budget, judge, config.scan)
        except PoolExhausted as exc:
            run.exhausted = f"round {number}: {exc}"
            break
        position += drawn
        train += accepted
        model = Model(fit(pool.x[train], pool.labels[train], n_labels, seed + 1000 * number, config), number)
        accuracy, correct = evaluate(model, held)
        run.models.append(model)
        run.rounds.append(RoundResult(number, None if judge is None else judge.round, accepted, drawn, len(train),
                                      accuracy, shares(pool.labels[accepted], n_labels),
                                      {h: float((model.predict(d.x) == first[h]).mean()) for h, d in held.items()},
                                      correct if keep_correct else {}))
    return run


# --- the figures over seeds --------------------------------------------------------------------------------


def t_interval(values: Sequence[float], level: float = 0.95) -> dict[str, float]:
    """The mean over seeds with its Student-t interval (no width for a single seed)."""
    v = np.asarray(values, dtype=float)
    mean = float(v.mean())
    if len(v) < 2:
        return {"mean": mean, "low": mean, "high": mean, "n": len(v)}
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": len(v)}


def curves(runs: Sequence[ArmRun], heldouts: Sequence[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """heldout -> arm -> one point per round (0 … R): accuracy mean over seeds with its 95 % t interval, the
    Wilson interval of the seed-mean accuracy on the held-out size (the test set's own sampling error), and the
    candidates drawn per accepted example."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {h: {} for h in heldouts}
    for arm in ARMS:
        mine = [r for r in runs if r.arm == arm]
        if not mine:
            continue
        rounds = min(len(r.rounds) for r in mine)
        for h in heldouts:
            points = []
            for k in range(rounds):
                values = [r.rounds[k].accuracy[h] for r in mine]
                point = {"round": k, **t_interval(values), "seeds": values}
                n = len(mine[0].rounds[k].correct.get(h, ())) if mine[0].rounds[k].correct else 0
                if n:
                    iv = wilson(round((1 - point["mean"]) * n), n)  # the error's interval, as accuracy
                    point["wilson"] = {"low": 1 - iv.high, "high": 1 - iv.low, "n": n}
                drawn = sum(r.rounds[k].drawn for r in mine)
                accepted = sum(len(r.rounds[k].accepted) for r in mine)
                point["drawn_per_accepted"] = drawn / accepted if accepted else None
                point["label_shares"] = np.mean([r.rounds[k].label_shares for r in mine], axis=0).tolist()
                point["agreement_with_round_0"] = float(np.mean([r.rounds[k].agreement[h] for r in mine]))
                points.append(point)
            out[h][arm] = points
    return out


def paired_differences(runs: Sequence[ArmRun], heldouts: Sequence[str], arm: str,
                       baseline: str = "standard") -> dict[str, list[dict[str, float]]]:
    """heldout -> per round: accuracy of `arm` minus `baseline`, paired by seed (same candidate order), mean over
    seeds with its 95 % t interval."""
    by_seed = {(r.arm, r.seed): r for r in runs}
    seeds = sorted({r.seed for r in runs if r.arm == arm} & {r.seed for r in runs if r.arm == baseline})
    out: dict[str, list[dict[str, float]]] = {}
    for h in heldouts:
        rows = []
        rounds = min(min(len(by_seed[(a, s)].rounds) for s in seeds) for a in (arm, baseline)) if seeds else 0
        for k in range(rounds):
            diffs = [by_seed[(arm, s)].rounds[k].accuracy[h] - by_seed[(baseline, s)].rounds[k].accuracy[h]
                     for s in seeds]
            rows.append({"round": k, **t_interval(diffs)})
        out[h] = rows
    return out


def crossing(differences: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Where an arm overtakes the baseline for good: the first round from which the mean difference stays above
    zero to the last round (None if it never does), the first round from which its interval stays above zero; and
    the rounds where the interval is above zero (ahead) or below it (behind), wherever they are."""

    def first_for_good(test: Callable[[dict[str, float]], bool]) -> int | None:
        found = None
        for row in differences[1:]:  # round 0 is shared by construction
            found = (row["round"] if found is None else found) if test(row) else None
        return found

    return {"ahead_from": first_for_good(lambda r: r["mean"] > 0),
            "significantly_ahead_from": first_for_good(lambda r: r["low"] > 0),
            "ahead_rounds": [r["round"] for r in differences[1:] if r["low"] > 0],
            "behind_rounds": [r["round"] for r in differences[1:] if r["high"] < 0]}


def contrast(runs: Sequence[ArmRun], arm: str, heldout: str, reference: str,
             baseline: str = "standard") -> dict[str, dict[str, float]]:
    """Does `arm`'s data help (or hurt) less on `heldout` than on `reference` (Kaushik et al. 2021's question,
    out of domain against in domain)? Per seed, (arm − baseline on heldout) − (arm − baseline on reference), at
    the last round and averaged over rounds 1 … R; mean over seeds with its 95 % t interval."""
    by_seed = {(r.arm, r.seed): r for r in runs}
    seeds = sorted({r.seed for r in runs if r.arm == arm} & {r.seed for r in runs if r.arm == baseline})
    rounds = min(len(by_seed[(a, s)].rounds) for s in seeds for a in (arm, baseline)) if seeds else 0

    def gap(seed: int, k: int, h: str) -> float:
        return by_seed[(arm, seed)].rounds[k].accuracy[h] - by_seed[(baseline, seed)].rounds[k].accuracy[h]

    last = [gap(s, rounds - 1, heldout) - gap(s, rounds - 1, reference) for s in seeds]
    mean = [float(np.mean([gap(s, k, heldout) - gap(s, k, reference) for k in range(1, rounds)])) for s in seeds]
    return {"last_round": t_interval(last), "mean_over_rounds": t_interval(mean)}


@dataclass
class Experiment:
    config: Config
    heldouts: list[str]
    runs: list[ArmRun]
    seconds: dict[str, float]
    in_domain: str | None = None  # the held-out set from the candidates' own source (the others: out of domain)

    def summary(self) -> dict[str, Any]:
        diffs = {arm: paired_differences(self.runs, self.heldouts, arm) for arm in ("static", "dynamic")}
        diffs["dynamic_vs_static"] = paired_differences(self.runs, self.heldouts, "dynamic", "static")
        return {
            "config": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.config.__dict__.items()},
            "heldouts": self.heldouts,
            "arms": [a for a in ARMS if any(r.arm == a for r in self.runs)],
            "curves": curves(self.runs, self.heldouts),
            "differences": diffs,
            "crossings": {name: {h: crossing(rows) for h, rows in d.items()} for name, d in diffs.items()},
            "in_domain": self.in_domain,
            "out_of_domain": {arm: {h: contrast(self.runs, arm, h, self.in_domain) for h in self.heldouts
                                    if h != self.in_domain}
                              for arm in ("static", "dynamic") if self.in_domain in self.heldouts
                              and {arm, "standard"} <= {r.arm for r in self.runs}},
            "exhausted": {f"{r.arm}/{r.seed}": r.exhausted for r in self.runs if r.exhausted},
            "seconds": self.seconds,
        }


def run_experiment(pool: Data, held: dict[str, Data], config: Config, arms: Sequence[str] = ARMS,
                   log: Callable[[str], None] = print, in_domain: str | None = None) -> Experiment:
    runs, start = [], time.perf_counter()
    for seed in config.seeds:
        for arm in arms:
            mark = time.perf_counter()
            run = run_arm(arm, pool, held, seed, config)
            runs.append(run)
            last = run.rounds[-1]
            log(f"seed {seed} {arm:<8} rounds {len(run.rounds) - 1} train {last.train_size} drawn "
                f"{sum(r.drawn for r in run.rounds[1:])} | " +
                " ".join(f"{h} {a:.3f}" for h, a in last.accuracy.items()) +
                f" | {time.perf_counter() - mark:.1f} s" + (f" | EXHAUSTED {run.exhausted}" if run.exhausted else ""))
    return Experiment(config, list(held), runs, {"rounds": round(time.perf_counter() - start, 1)}, in_domain)


# --- the command ---------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import json
    from pathlib import Path

    from research.hardbench.__main__ import platform_dirs
    from research.simulate_rounds import arms_report, embeddings

    data_dir, var_dir = platform_dirs()
    p = argparse.ArgumentParser(prog="python -m research.simulate_rounds.arms", description=(
        "Standard, static adversarial and dynamic adversarial collection over many rounds, drawing candidates from "
        "SST-2 train, each round's model (a linear head on frozen features) evaluated on DynaSent R1 test, "
        "DynaSent R2 test and SST-2 dev."))
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--budget", type=int, default=500, help="accepted candidates per round and arm")
    p.add_argument("--seed-size", type=int, default=500, help="round 0's training data")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds (candidate order, head init)")
    p.add_argument("--pool", type=int, default=40000, help="the first N rows of SST-2 train in a fixed shuffle")
    p.add_argument("--steps", type=int, default=Config.steps, help="Adam updates per model (about)")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--encoder", default=None, help="zoo.encoders name or folder (default all-MiniLM-L6-v2)")
    p.add_argument("--data", type=Path, default=data_dir)
    p.add_argument("--cache", type=Path, default=var_dir / "cache" / "simulate_rounds")
    p.add_argument("--out", type=Path, default=var_dir / "simulate_rounds" / "arms")
    p.add_argument("--figure", type=Path, action="append", default=[],
                   help="also write the figure here (.svg or .png); may be given more than once")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: the machine is shared)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.encoder:
        args.cache = args.cache / "".join(c if c.isalnum() or c in "-_." else "_" for c in args.encoder)[-80:]
    config = Config(rounds=args.rounds, budget=args.budget, seed_size=args.seed_size, steps=args.steps,
                    seeds=[int(s) for s in args.seeds.split(",") if s.strip()])
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(ARMS)}")
    started = time.perf_counter()
    embed = embeddings.Embedder(args.encoder)
    pool = embeddings.load_pool(args.data, args.cache, args.pool, embed)
    held = embeddings.load_heldout(args.data, args.cache, embed)
    seconds = {"features (embedding; 0 when cached)": round(embed.seconds, 1),
               "features (total, with reading)": round(time.perf_counter() - started, 1)}
    experiment = run_experiment(Data(pool.x, pool.labels), {h: Data(f.x, f.labels) for h, f in held.items()},
                                config, arms, in_domain=embeddings.IN_DOMAIN)
    experiment.seconds = {**seconds, **experiment.seconds, "total": round(time.perf_counter() - started, 1)}
    summary = experiment.summary()
    summary["pool_size"] = len(pool)
    summary["pool_source"] = "SST-2 train, a fixed shuffle (seed 0), then each seed's own order"
    summary["heldout_sizes"] = {h: len(f) for h, f in held.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    text = arms_report.markdown(summary)
    (args.out / "report.md").write_text(text, encoding="utf-8")
    print(text)
    for path in [args.out / "arms.svg", *args.figure]:
        arms_report.figure(summary, path)
        print(f"figure: {path}")
    print(f"report: {args.out / 'report.md'}")


if __name__ == "__main__":
    main()
