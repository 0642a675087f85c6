"""The many-round experiment's report: Markdown tables, the figure (accuracy per round per arm, one panel per
held-out set, as Wallace et al. 2022's Fig. 1), from `arms.Experiment.summary()`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ARM_NAMES = {"standard": "standard collection", "static": "static adversarial (fools round 1's model)",
             "dynamic": "dynamic adversarial (fools the current model)"}
COLOURS = {"standard": "#1b9e77", "static": "#7570b3", "dynamic": "#d95f02"}


def _pct(v: float) -> str:
    return f"{100 * v:.1f}"


def _pts(v: float) -> str:
    return f"{100 * v:+.1f}"


def accuracy_table(summary: dict[str, Any], heldout: str) -> list[str]:
    curves = summary["curves"][heldout]
    arms = [a for a in summary["arms"] if a in curves]
    n = next((p.get("wilson", {}).get("n") for p in curves[arms[0]] if p.get("wilson")), None)
    head = "| round | " + " | ".join(f"{a} (95 % interval over seeds)" for a in arms) + \
        " | dynamic − standard | static − standard |"
    lines = [f"**{heldout}** (n = {n}; accuracy %, mean over {len(summary['config']['seeds'])} seeds; the "
             f"differences in points, paired by seed)", "", head, "|---:|" + "---|" * (len(arms) + 2)]
    diffs = summary["differences"]
    for k in range(max(len(curves[a]) for a in arms)):
        cells = []
        for a in arms:
            p = curves[a][k] if k < len(curves[a]) else None
            cells.append("–" if p is None else f"{_pct(p['mean'])} ({_pct(p['low'])}–{_pct(p['high'])})")
        for arm in ("dynamic", "static"):
            rows = diffs.get(arm, {}).get(heldout, [])
            d = rows[k] if k < len(rows) else None
            cells.append("–" if d is None else f"{_pts(d['mean'])} ({_pts(d['low'])} to {_pts(d['high'])})")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def cost_table(summary: dict[str, Any]) -> list[str]:
    first = summary["heldouts"][0]
    curves = summary["curves"][first]
    arms = [a for a in summary["arms"] if a in curves]
    lines = ["| round | " + " | ".join(arms) + " |", "|---:|" + "---:|" * len(arms)]
    for k in range(1, max(len(curves[a]) for a in arms)):
        cells = []
        for a in arms:
            p = curves[a][k] if k < len(curves[a]) else None
            cells.append("–" if p is None or p["drawn_per_accepted"] is None else
                         f"{p['drawn_per_accepted']:.1f} ({_pct(p['label_shares'][-1])} %)")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def agreement_table(summary: dict[str, Any]) -> list[str]:
    """How often each arm's last model predicts what round 0's model predicted, per held-out set."""
    arms = summary["arms"]
    lines = ["| held-out set | " + " | ".join(arms) + " |", "|---|" + "---:|" * len(arms)]
    for h, by_arm in summary["curves"].items():
        cells = [f"{_pct(by_arm[a][-1]['agreement_with_round_0'])} %" if a in by_arm else "–" for a in arms]
        lines.append(f"| {h} | " + " | ".join(cells) + " |")
    return lines


def crossing_lines(summary: dict[str, Any]) -> list[str]:
    lines = ["| comparison | held-out set | ahead for good from round (mean) | ahead for good from round (interval "
             "above 0) | rounds ahead (interval above 0) | rounds behind (interval below 0) | last round: difference "
             "(points) |", "|---|---|---|---|---|---|---|"]
    names = {"dynamic": "dynamic − standard", "static": "static − standard", "dynamic_vs_static": "dynamic − static"}
    for key, label in names.items():
        for h, c in summary["crossings"][key].items():
            last = summary["differences"][key][h][-1]
            lines.append(f"| {label} | {h} | {c['ahead_from'] if c['ahead_from'] is not None else 'never'} | "
                         f"{c['significantly_ahead_from'] if c['significantly_ahead_from'] is not None else 'never'}"
                         f" | {', '.join(map(str, c['ahead_rounds'])) or 'none'}"
                         f" | {', '.join(map(str, c['behind_rounds'])) or 'none'} | "
                         f"{_pts(last['mean'])} ({_pts(last['low'])} to {_pts(last['high'])}) |")
    return lines


def out_of_domain_lines(summary: dict[str, Any]) -> list[str]:
    ood = summary.get("out_of_domain") or {}
    if not ood:
        return []
    ref = summary["in_domain"]
    lines = [f"The arm's gap to standard collection on an out-of-domain set minus its gap on `{ref}` (in domain), "
             "paired by seed, in points: above 0, the adversarial data costs less (or helps more) out of domain.",
             "", "| arm | held-out set | last round | mean over rounds 1 … R |", "|---|---|---|---|"]
    for arm, rows in ood.items():
        for h, c in rows.items():
            a, m = c["last_round"], c["mean_over_rounds"]
            lines.append(f"| {arm} | {h} | {_pts(a['mean'])} ({_pts(a['low'])} to {_pts(a['high'])}) | "
                         f"{_pts(m['mean'])} ({_pts(m['low'])} to {_pts(m['high'])}) |")
    return lines


def markdown(summary: dict[str, Any]) -> str:
    c = summary["config"]
    lines = [
        "# Many rounds: standard, static adversarial and dynamic adversarial collection",
        "",
        f"- {c['rounds']} rounds, {c['budget']} accepted candidates per round and arm, a seed set of "
        f"{c['seed_size']} (round 0); seeds {', '.join(map(str, c['seeds']))}; pool of {summary.get('pool_size')} "
        f"candidates ({summary.get('pool_source', '')})",
        f"- a model: the product's linear head on frozen features (hardness.heads.train_linear_head, about "
        f"{c['steps']} Adam steps, batch {c['batch_size']}, lr {c['lr']}), trained on the seed set and every "
        "accepted candidate so far",
        "",
    ]
    for h in summary["heldouts"]:
        lines += accuracy_table(summary, h) + [""]
    lines += ["## Where the arms cross", "", *crossing_lines(summary), ""]
    if summary.get("out_of_domain"):
        lines += ["## Out of domain against in domain", "", *out_of_domain_lines(summary), ""]
    lines += ["## Agreement of the last round's model with round 0's", "",
              "The share of held-out examples on which the arm's last model predicts what round 0's model "
              "predicted (mean over seeds).", "", *agreement_table(summary), ""]
    lines += ["## Candidates drawn per accepted example", "",
              "Mean over seeds; in brackets the share of the accepted examples with the last label (SST-2: "
              "positive).", "", *cost_table(summary), ""]
    if summary["exhausted"]:
        lines += ["Arms that ran out of pool: " + "; ".join(f"{k}: {v}" for k, v in summary["exhausted"].items()),
                  ""]
    lines.append("Time (s): " + ", ".join(f"{k} {v}" for k, v in summary["seconds"].items()))
    return "\n".join(lines) + "\n"


def figure(summary: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: a smaller, searchable SVG
    plt.rcParams["svg.hashsalt"] = "simulate_rounds"  # the same figures make the same file
    heldouts = summary["heldouts"]
    fig, axes = plt.subplots(1, len(heldouts), figsize=(4.2 * len(heldouts), 3.6), squeeze=False)
    for ax, h in zip(axes[0], heldouts, strict=True):
        for arm in summary["arms"]:
            points = summary["curves"][h].get(arm)
            if not points:
                continue
            x = [p["round"] for p in points]
            ax.plot(x, [100 * p["mean"] for p in points], marker="o", ms=3, color=COLOURS[arm],
                    label=ARM_NAMES[arm])
            ax.fill_between(x, [100 * p["low"] for p in points], [100 * p["high"] for p in points],
                            color=COLOURS[arm], alpha=0.2, lw=0)
        n = next((p["wilson"]["n"] for p in summary["curves"][h][summary["arms"][0]] if p.get("wilson")), "?")
        ax.set_title(f"{h} (n = {n})", fontsize=10)
        ax.axhline(50, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy (%)")
    fig.suptitle("Held-out accuracy of each round's model: mean and 95 % interval over "
                 f"{len(summary['config']['seeds'])} seeds", fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Date": None} if path.suffix == ".svg" else None)
    plt.close(fig)
    return path
