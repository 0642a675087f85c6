"""The Markdown report and the PNG figure of the reproduction."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from research.hardbench.pool import HardbenchConfig, ScoredPool, selections_for


def _plot(summary: dict, pool: ScoredPool, config: HardbenchConfig, path: Path) -> None:
    os.environ.setdefault("MPLCONFIGDIR", str(config.cache_dir / "matplotlib"))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    colors = {s: f"C{i}" for i, s in enumerate(config.strategies)}
    for ax, metric, title in ((axes[0], "best", "best-over-epochs"), (axes[1], "final", "final epoch")):
        for strategy in config.strategies:
            rows = sorted((r for r in summary["table"] if r["strategy"] == strategy), key=lambda r: r["k"])
            ax.errorbar([r["k"] for r in rows], [r[f"{metric}_mean"] for r in rows],
                        yerr=[r[f"{metric}_std"] for r in rows], marker="o", capsize=3, label=strategy,
                        color=colors[strategy])
        ax.axhline(50, color="grey", lw=0.8, ls=":")
        ax.set(xscale="log", xlabel="k per label", ylabel="SST-2 dev accuracy (%)", title=f"target, {title}")
        ax.set_xticks(config.ks, [str(k) for k in config.ks])
        ax.minorticks_off()
        ax.legend(fontsize=8)
    _plot_datamap(axes[2], pool, config, colors)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_datamap(ax, pool: ScoredPool, config: HardbenchConfig, colors: dict[str, str]) -> None:
    rng = np.random.default_rng(0)
    dm = pool.datamap
    sample = rng.choice(len(pool.train), size=min(6000, len(pool.train)), replace=False)
    ax.scatter(dm.variability[sample], dm.confidence[sample], s=2, c="lightgrey", label="train (sample)")
    k = max(config.ks)
    for strategy, size in (("gradnorm_deep", 14), ("gradnorm", 7), ("loss", 2)):
        if strategy in config.strategies:
            idx = selections_for(pool, strategy, k, 0)
            ax.scatter(dm.variability[idx], dm.confidence[idx], s=size, c=colors[strategy], label=f"{strategy} k={k}")
    ax.set(xlabel="variability", ylabel="confidence (p of gold label)",
           title="data map of the weak scorer's head (5 epochs)")
    ax.legend(fontsize=7, markerscale=3)


def _table(summary: dict, config: HardbenchConfig) -> list[str]:
    lines = ["| k per label | selection | best-over-epochs acc. (%) | final-epoch acc. (%) | scorer misclassifies |",
             "|---:|---|---:|---:|---:|"]
    for r in sorted(summary["table"], key=lambda r: (r["k"], config.strategies.index(r["strategy"]))):
        mis = summary["sanity"]["per_k"][r["k"]]["misclassified"].get(r["strategy"], float("nan"))
        lines.append(f"| {r['k']} | {r['strategy']} | {r['best_mean']:.2f} ± {r['best_std']:.2f} | "
                     f"{r['final_mean']:.2f} ± {r['final_std']:.2f} | {mis:.1%} |")
    return lines


def _sanity(summary: dict) -> list[str]:
    lines = ["", "Spearman correlation between scores over the whole pool:", "", "| scores | ρ |", "|---|---:|"]
    lines += [f"| {pair} | {rho:.3f} |" for pair, rho in summary["sanity"]["spearman"].items()]
    lines += ["", "Overlap of selections (|A ∩ B| / |A|, seed 0):", "", "| k | pair | overlap |", "|---:|---|---:|"]
    for k, fig in summary["sanity"]["per_k"].items():
        lines += [f"| {k} | {pair} | {v:.1%} |" for pair, v in fig["overlap"].items()]
    return lines


def _trained(config: HardbenchConfig) -> str:
    if config.trainable_blocks is None:
        return "all blocks"
    return f"its top {config.trainable_blocks} blocks (lower blocks frozen at the pretrained weights)"


def write_report(summary: dict, pool: ScoredPool, config: HardbenchConfig) -> Path:
    png = config.out_dir / "hardbench.png"
    _plot(summary, pool, config, png)
    computed = summary.get("timings_computed_s", summary["timings_s"])
    timings = [f"| {step} | {summary['timings_s'].get(step, 0.0):.1f} | {sec:.1f} |" for step, sec in computed.items()]
    text = "\n".join([
        "# Hard-Bench on SST-2: reproduction", "",
        f"Pool: {len(pool.train)} SST-2 train rows; evaluation: {len(pool.dev)} SST-2 dev rows; seeds "
        f"{config.seeds}; target epochs {config.epochs}.",
        f"Weak scorer (frozen all-MiniLM-L6-v2 + linear head, 1 epoch): train accuracy "
        f"{summary['scorer_train_accuracy']:.1%}, dev accuracy {summary['scorer_dev_accuracy']:.1%}.", "",
        f"Target: all-MiniLM-L6-v2 with {_trained(config)} and a fresh linear head fine-tuned on the k-shot set "
        "(at least 24 updates: small sets get more epochs); mean ± std over seeds.",
        "", *_table(summary, config), "", "![accuracy vs k and data map](hardbench.png)", "", *_sanity(summary),
        "", "Time per step in seconds (`nice -n 10`, one torch thread, shared 2-core machine). A cached step takes "
        "near zero on a rerun; the last column keeps the longest time seen, i.e. when it was computed:", "",
        "| step | this run | when computed |", "|---|---:|---:|", *timings, "",
    ])
    path = config.out_dir / "report.md"
    path.write_text(text)
    (config.out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return path
