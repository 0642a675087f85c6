"""The Hard-Bench reproduction on SST-2: score train with a weak scorer, build k-shot sets, train a target.

Every finished target run is appended to `out_dir/runs.jsonl`, so a rerun (or a restart after an interruption)
trains nothing it already has; the pool's scores are cached by `research.hardbench.pool`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from hardness.classifier import TrainConfig
from research.hardbench.data import SST2_LABELS
from research.hardbench.pool import HardbenchConfig, ScoredPool, Timer, score_pool, selection_figures, selections_for
from research.hardbench.report import write_report
from research.hardbench.target import prepare_eval, train_target


def _load_runs(path: Path) -> dict[tuple, dict]:
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["k"], r["strategy"], r["seed"], r["epochs"], r["train_rows"], r.get("trainable_blocks")): r
            for r in rows}


def train_targets(pool: ScoredPool, config: HardbenchConfig, encoder, tokenizer, timer: Timer) -> list[dict]:
    runs_path = config.out_dir / "runs.jsonl"
    done = _load_runs(runs_path)
    plan = [(k, s, seed) for k in config.ks for s in config.strategies for seed in config.seeds]
    train_config = TrainConfig(epochs=config.epochs, trainable_blocks=config.trainable_blocks,
                               min_steps=config.min_steps)
    with timer.step("dev set: frozen-part outputs"):
        dev = prepare_eval(encoder, tokenizer, pool.dev.texts, pool.dev.labels, train_config)
    results = []
    for k, strategy, seed in tqdm(plan, desc="target runs"):
        key = (k, strategy, seed, config.epochs, len(pool.train), config.trainable_blocks)
        if key not in done:
            with timer.step("target fine-tuning runs"):
                idx = selections_for(pool, strategy, k, seed)
                sub = pool.train.subset(idx)
                res = train_target(copy.deepcopy(encoder), tokenizer, sub.texts, sub.labels, dev, 2,
                                   replace(train_config, seed=seed))
            done[key] = {"k": k, "strategy": strategy, "seed": seed, "epochs": config.epochs,
                         "train_rows": len(pool.train), "trainable_blocks": config.trainable_blocks,
                         "epoch_accuracy": res.epoch_accuracy}
            with runs_path.open("a") as fh:
                fh.write(json.dumps(done[key]) + "\n")
        results.append(done[key])
    return results


def summarize(results: list[dict]) -> list[dict]:
    table: dict[tuple, list[dict]] = {}
    for r in results:
        table.setdefault((r["k"], r["strategy"]), []).append(r)
    rows = []
    for (k, strategy), runs in table.items():
        best = np.array([max(r["epoch_accuracy"]) for r in runs]) * 100
        final = np.array([r["epoch_accuracy"][-1] for r in runs]) * 100
        rows.append({"k": k, "strategy": strategy, "n": len(runs), "best_mean": best.mean(), "best_std": best.std(ddof=1) if len(runs) > 1 else 0.0,
                     "final_mean": final.mean(), "final_std": final.std(ddof=1) if len(runs) > 1 else 0.0})
    return rows


def _computed_timings(previous_summary: Path, steps: dict[str, float]) -> dict[str, float]:
    """Per step, the longest time seen across runs (reruns hit the caches and take near zero)."""
    before = json.loads(previous_summary.read_text()).get("timings_computed_s", {}) if previous_summary.exists() else {}
    if not before and previous_summary.exists():
        before = json.loads(previous_summary.read_text()).get("timings_s", {})
    return {step: max(steps.get(step, 0.0), before.get(step, 0.0)) for step in {**before, **steps}}


def run(config: HardbenchConfig, encoder, tokenizer) -> dict:
    """The whole reproduction; returns what the report shows (and writes the report)."""
    config.out_dir.mkdir(parents=True, exist_ok=True)
    timer = Timer()
    pool = score_pool(config, encoder, tokenizer, timer)
    figures = selection_figures(pool, config)
    results = train_targets(pool, config, encoder, tokenizer, timer)
    summary = {"config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
               "labels": list(SST2_LABELS), "scorer_dev_accuracy": pool.scorer_dev_accuracy,
               "scorer_train_accuracy": float((pool.probs.argmax(1) == pool.train.labels).mean()),
               "table": summarize(results), "sanity": figures, "timings_s": timer.steps}
    summary["timings_computed_s"] = _computed_timings(config.out_dir / "summary.json", timer.steps)
    write_report(summary, pool, config)
    return summary
