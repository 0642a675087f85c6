"""Data maps of a round's retraining (dataset cartography, Swayamdipta et al. 2020; the statistics and regions are
`zoo.dynamics`').

Every model a round's retraining trains records its training dynamics into its artifact (`zoo.dynamics.DYNAMICS_FILE`:
one checkpoint per complete pass over the training rows). After the retraining, `store` keeps one `DataMap` per
trained member of the round (the round the new ensemble serves). The members are NOT averaged: each seed is its own
training run, and the paper's map is the dynamics of one run, so the dashboard and the exports use the map of the
ensemble's first member (`primary`), and the dashboard says how often the members' regions agree.

Each entry gets the example id where the training row is a round's example (`example_id`; rows imported as
training data have none), so the round's dataset export can give each example the region of the newest data map
that trained on it (`regions_by_example`, registered with `exports.records` by the app's config).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from exports import splits
from modelzoo.models import ModelVersion
from rounds import datasets
from rounds.models import DataMap
from tasks.models import Round, Task, payload_hash
from zoo import dynamics

SCATTER_MAX = 1500  # points drawn on the dashboard's map (a stable sample by key beyond it); counts cover all


def example_ids(task: Task) -> dict[str, int]:
    """The training key (`rounds.datasets.round_split`'s) of every round example in a train split -> its id."""
    out: dict[str, int] = {}
    for round_ in splits.rounds_with_data(task):
        for row in splits.split_rows(round_, "train"):
            out[datasets.example_key(row)] = row.example_id
    return out


def store(round_: Round, versions: Sequence[ModelVersion], log: Callable[[str], None] = lambda _m: None
          ) -> list[DataMap]:
    """One DataMap per member of `versions` that recorded its dynamics (idempotent: a retry updates the same rows);
    the round's maps of other models (an earlier retraining of it) are removed. Returns the stored maps in member
    order."""
    ids = example_ids(round_.task)
    stored = []
    for index, version in enumerate(versions):
        made = dynamics.read(version.artifact_path)
        if made is None:
            log(f"{version.name}: no training dynamics in its artifact (trained without them): no data map")
            continue
        entries = [{**e, "example_id": ids.get(e["key"])} for e in made.entries]
        settings = {**made.settings, "member": index, "reason": made.reason}
        row, _ = DataMap.objects.update_or_create(
            round=round_, model_version=version,
            defaults={"checkpoints": made.checkpoints, "entries": entries, "counts": made.counts, "settings": settings})
        stored.append(row)
        if made.reason:
            log(f"{version.name}: {made.reason}")
        else:
            counts = ", ".join(f"{made.counts.get(r, 0)} {r}" for r in dynamics.REGIONS)
            log(f"{version.name}: data map over {made.checkpoints} checkpoints: {counts}")
    DataMap.objects.filter(round=round_).exclude(model_version__in=list(versions)).delete()
    agree = dynamics.agreement([m.entries for m in stored if m.entries])
    for m in stored:  # kept with each map, so the dashboard reads one map's entries, not every member's
        m.settings = {**m.settings, "agreement": agree, "members": len(stored)}
        DataMap.objects.filter(pk=m.pk).update(settings=m.settings)
    if agree is not None:
        log(f"the {len(stored)} members put {agree:.1%} of the examples in the same region")
    return stored


def maps_of(round_: Round, entries: bool = True) -> list[DataMap]:
    """The round's data maps in member order (`entries=False`: without their entries, the large field)."""
    rows = DataMap.objects.filter(round=round_).select_related("model_version")
    return sorted(rows if entries else rows.defer("entries"), key=lambda m: (m.settings.get("member", 0), m.pk))


def primary(round_: Round) -> DataMap | None:
    """The round's map: its first member's."""
    maps = maps_of(round_, entries=False)
    return DataMap.objects.select_related("model_version").get(pk=maps[0].pk) if maps else None


def _stable(key: str) -> str:
    return payload_hash("datamap-sample", key)


def summary(round_: Round | None, sample: int = SCATTER_MAX) -> dict[str, Any] | None:
    """What the dashboard shows of a round's data map: the first member's counts per region, the cut, the points
    to draw (every entry, or a stable sample of `sample`), and the members' agreement. None without a map."""
    first = primary(round_) if round_ is not None else None
    if first is None:
        return None
    entries = first.entries
    points = entries if len(entries) <= sample else sorted(entries, key=lambda e: _stable(e["key"]))[:sample]
    total = sum(first.counts.values())
    return {
        "round": round_.number, "model": first.model_version.name if first.model_version else None,
        "checkpoints": first.checkpoints, "examples": len(entries), "reason": first.settings.get("reason", ""),
        "counts": [{"region": r, "count": first.counts.get(r, 0),
                    "share": first.counts.get(r, 0) / total if total else None} for r in dynamics.REGIONS],
        "settings": first.settings, "points": points, "sampled": len(points) < len(entries),
        "members": first.settings.get("members", 1), "agreement": first.settings.get("agreement"),
    }


def regions_by_example(task: Task) -> dict[int, str]:
    """Each round example's region in the newest data map of the task that trained on it (the first member's map
    of each retraining)."""
    out: dict[int, str] = {}
    for round_ in task.rounds.order_by("number"):  # newer rounds' maps overwrite older ones
        first = primary(round_)
        if first is None:
            continue
        for e in first.entries:
            if e.get("example_id") is not None and e.get("region"):
                out[int(e["example_id"])] = e["region"]
    return out


# -- the dashboard's scatter (server-rendered SVG, as rounds.charts draws the other figures) ------------------

REGION_COLOURS = {dynamics.EASY: "#2d5bd3", dynamics.AMBIGUOUS: "#e07b39", dynamics.HARD: "#b3261e"}
SW, SH = 640, 380
SL, SR, ST, SB = 58, 150, 16, 44  # margins: the legend sits on the right


def _x_top(largest: float) -> float:
    """The variability axis' end: a round step above the largest value (variability of a probability is <= 0.5)."""
    for top in (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5):
        if largest <= top:
            return top
    return 0.5


def scatter(data: dict[str, Any] | None):
    """Variability (x) against confidence (y), one point per example coloured by region, with the cut drawn; the
    tooltip of a point gives its three statistics. Empty without points."""
    from django.utils.html import escape
    from django.utils.safestring import mark_safe

    if not data or not data["points"]:
        return ""
    points = data["points"]
    x_top = _x_top(max(p["variability"] for p in points))
    inner_w, inner_h = SW - SL - SR, SH - ST - SB

    def x(v: float) -> float:
        return SL + inner_w * min(v / x_top, 1.0)

    def y(c: float) -> float:
        return ST + inner_h * (1 - c)

    title = f"Data map of round {data['round']}: variability against confidence"
    parts = [f'<svg class="chart data-map" viewBox="0 0 {SW} {SH}" role="img" aria-label="{escape(title)}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for i in range(5):
        c = i / 4
        parts.append(f'<line x1="{SL}" x2="{SW - SR}" y1="{y(c):.1f}" y2="{y(c):.1f}" class="grid"/>')
        parts.append(f'<text x="{SL - 6}" y="{y(c) + 4:.1f}" class="tick" text-anchor="end">{c:.2f}</text>')
        v = x_top * i / 4
        parts.append(f'<text x="{x(v):.1f}" y="{SH - SB + 16}" class="tick" text-anchor="middle">{v:.3g}</text>')
    parts.append(f'<text x="{SL + inner_w / 2:.0f}" y="{SH - 6}" class="axis-title" text-anchor="middle">'
                 f'variability (std of the gold-label probability)</text>')
    parts.append(f'<text x="14" y="{ST + inner_h / 2:.0f}" class="axis-title" text-anchor="middle" '
                 f'transform="rotate(-90 14 {ST + inner_h / 2:.0f})">confidence (mean gold-label probability)</text>')
    cut = data["settings"]
    v_cut, c_cut = cut.get("variability_threshold"), cut.get("confidence_threshold")
    if v_cut is not None:
        parts.append(f'<line x1="{x(v_cut):.1f}" x2="{x(v_cut):.1f}" y1="{ST}" y2="{ST + inner_h}" '
                     f'class="cut" stroke="#888" stroke-dasharray="4 3"/>')
    if c_cut is not None and v_cut is not None:
        parts.append(f'<line x1="{SL}" x2="{x(v_cut):.1f}" y1="{y(c_cut):.1f}" y2="{y(c_cut):.1f}" '
                     f'class="cut" stroke="#888" stroke-dasharray="4 3"/>')
    for p in points:
        colour = REGION_COLOURS.get(p.get("region"), "#777")
        # correctness: a filled point was right at most checkpoints, a hollow one at fewer than half
        fill = colour if p["correctness"] >= 0.5 else "none"
        parts.append(f'<circle cx="{x(p["variability"]):.1f}" cy="{y(p["confidence"]):.1f}" r="3" fill="{fill}" '
                     f'stroke="{colour}" fill-opacity="0.6" data-region="{escape(p.get("region") or "")}">'
                     f'<title>{escape(p.get("region") or "")}: confidence {p["confidence"]:.3f}, variability '
                     f'{p["variability"]:.3f}, correctness {p["correctness"]:.2f}</title></circle>')
    ly = ST + 10
    for row in data["counts"]:
        colour = REGION_COLOURS[row["region"]]
        parts.append(f'<circle cx="{SW - SR + 18}" cy="{ly}" r="5" fill="{colour}"/>')
        parts.append(f'<text x="{SW - SR + 28}" y="{ly + 4}" class="legend">{escape(row["region"])} '
                     f'({row["count"]})</text>')
        ly += 20
    parts.append(f'<circle cx="{SW - SR + 18}" cy="{ly}" r="5" fill="none" stroke="#777"/>')
    parts.append(f'<text x="{SW - SR + 28}" y="{ly + 4}" class="legend">hollow: right &lt; half</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text inside is escaped above
