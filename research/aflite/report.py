"""The experiment's Markdown report (tables with intervals) from its summary."""

from __future__ import annotations

from pathlib import Path


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _acc(row: dict) -> str:
    return f"{_pct(row['accuracy'])} [{_pct(row['low'])}, {_pct(row['high'])}]"


def _diff(d: dict | None) -> str:
    if not d:
        return "—"
    text = f"{100 * d['difference']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"
    return text + (f", p = {d['p_mcnemar']:.2g}" if "p_mcnemar" in d else "")


def render(summary: dict) -> str:
    s, a, t = summary["sizes"], summary["aflite"], summary["timings"]
    evals = ", ".join(f"{k} {v}" for k, v in s.items() if k not in ("pool", "reference", "filter_part", "filtered"))
    p = a["params"]
    lines = [
        "# AFLite on SST-2: results",
        "",
        f"Pool: {s['pool']} SST-2 train rows (seeded sample); reference part {s['reference']} (trains the models of"
        f" (a) only), filter part {s['filter_part']} → AFLite kept {s['filtered']}. Evaluation only: {evals}.",
        f"AFLite: m = {p['m']}, t = {p['t']}, k = {p['k']}, n = {p['n']}, τ = {p['tau']}; {a['iterations']}"
        f" iterations, stopped by the {a['stopped_by']}, {a['seconds']:.0f} s.",
        "",
        "Share of positive labels: " + ", ".join(f"{k} {_pct(v)} %" for k, v in summary["positive_share"].items()),
        "",
        "## (a) Is the filtered subset harder? Models trained on the reference part",
        "",
        "| model | evaluated on | n | accuracy % [95 % Wilson] | filtered − this, points [95 % bootstrap] |",
        "|---|---|---|---|---|",
    ]
    for r in summary["harder"]:
        lines.append(f"| {r['model']} | {r['evaluated_on']} | {r['n']} | {_acc(r)} | "
                     f"{_diff(r.get('filtered_minus_this'))} |")
    lines += [
        "",
        "## (b) Training on the filtered subset vs random subsets of the same size",
        "",
        "| model | evaluated on | trained on | train size | accuracy % [95 % Wilson] | filtered − this, points "
        "[95 % paired bootstrap], McNemar p |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(summary["training"], key=lambda r: (r["model"], r["evaluated_on"])):  # stable: filtered first
        lines.append(f"| {r['model']} | {r['evaluated_on']} | {r['trained_on']} | {r['train_size']} | {_acc(r)} | "
                     f"{_diff(r.get('filtered_minus_this'))} |")
    lines += ["", "Wall time (s): " + ", ".join(f"{k} {v:.0f}" for k, v in t.items()), ""]
    return "\n".join(lines)


def write_report(summary: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(summary))
