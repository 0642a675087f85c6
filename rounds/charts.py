"""Small charts rendered on the server as inline SVG (no script, nothing fetched from elsewhere)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#2d5bd3", "#e07b39", "#1c7c3a", "#b3261e", "#7a4fb5", "#0f8b8d", "#8a6d1d", "#c2417e")
W, H = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 16, 56


@dataclass
class Series:
    name: str
    values: Sequence[float | None]


def _fmt(value: float, percent: bool) -> str:
    if percent:
        return f"{value * 100:.0f}%"
    return f"{value:.0f}" if float(value).is_integer() or value >= 10 else f"{value:.2g}"


def ticks(top: float, percent: bool) -> list[float]:
    """Axis ticks from 0 to at least `top`, about four steps of a round size: 0–100 % for rates, and whole
    numbers for counts (never 0.83 or 1.7 examples)."""
    if percent and top <= 1:
        return [0.0, 0.25, 0.5, 0.75, 1.0]
    if top <= 0:
        return [0.0, 1.0]
    raw = top / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    if not percent:
        step = max(1, math.ceil(step))
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def time_labels(moments: Sequence[datetime]) -> list[str]:
    """Labels for points in time, as precise as the data's span needs: seconds within a few minutes, the
    time of day within a day, day and time within a few days, the date beyond."""
    if not moments:
        return []
    span = max(moments) - min(moments)
    if span < timedelta(minutes=5):
        pattern = "%H:%M:%S"
    elif span < timedelta(days=1):
        pattern = "%H:%M"
    elif span < timedelta(days=4):
        pattern = "%d %b %H:%M"
    elif span < timedelta(days=365):
        pattern = "%d %b"
    else:
        pattern = "%Y-%m-%d"
    return [m.strftime(pattern) for m in moments]


def _frame(title: str, marks: list[float], percent: bool, y_title: str = "") -> list[str]:
    parts = [f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    if y_title:
        parts.append(f'<text x="12" y="{(TOP + H - BOTTOM) / 2:.0f}" class="axis-title" text-anchor="middle" '
                     f'transform="rotate(-90 12 {(TOP + H - BOTTOM) / 2:.0f})">{escape(y_title)}</text>')
    y_max = marks[-1]
    for value in marks:
        y = _y(value, y_max)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{_fmt(value, percent)}</text>')
    return parts


def _y(value: float, y_max: float) -> float:
    return TOP + (H - TOP - BOTTOM) * (1 - (value / y_max if y_max else 0))


def _legend(series: Sequence[Series]) -> list[str]:
    parts, x = [], LEFT
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{H - 16}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{H - 7}" class="legend">{escape(s.name)}</text>')
        x += 24 + 7 * len(s.name)
    return parts


def _x_labels(categories: Sequence[str], centre) -> list[str]:
    longest = max((len(c) for c in categories), default=1)
    room = max(1, int((W - LEFT - RIGHT) / (6.5 * longest + 12)))  # labels that fit side by side
    step = max(1, math.ceil(len(categories) / room))
    return [f'<text x="{centre(i):.1f}" y="{H - BOTTOM + 16}" class="tick" text-anchor="middle">{escape(c)}</text>'
            for i, c in enumerate(categories) if i % step == 0]


def _marks(series: Sequence[Series], percent: bool) -> list[float]:
    return ticks(max((v for s in series for v in s.values if v is not None), default=0.0), percent)


def bar_chart(title: str, categories: Sequence[str], series: Sequence[Series], percent: bool = True,
              y_title: str = "") -> SafeString:
    """Grouped bars: one group per category, one bar per series."""
    marks = _marks(series, percent)
    y_max = marks[-1]
    parts = _frame(title, marks, percent, y_title)
    group = (W - LEFT - RIGHT) / max(1, len(categories))
    bar = group * 0.8 / max(1, len(series))
    for si, s in enumerate(series):
        colour = PALETTE[si % len(PALETTE)]
        for ci, value in enumerate(s.values):
            if value is None:
                continue
            x, y = LEFT + ci * group + group * 0.1 + si * bar, _y(value, y_max)
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 1:.1f}" height="{_y(0, y_max) - y:.1f}" '
                         f'fill="{colour}"><title>{escape(s.name)}, {escape(categories[ci])}: '
                         f'{_fmt(value, percent)}</title></rect>')
    parts += _x_labels(categories, lambda i: LEFT + (i + 0.5) * group) + _legend(series) + ["</svg>"]
    return mark_safe("".join(parts))  # noqa: S308 - every text inside is escaped above


def line_chart(title: str, categories: Sequence[str], series: Sequence[Series], percent: bool = True,
               y_title: str = "") -> SafeString:
    """One line per series over the categories (gaps where a value is None)."""
    marks = _marks(series, percent)
    y_max = marks[-1]
    parts = _frame(title, marks, percent, y_title)
    pad = 24  # the first and last points (and their labels) stay clear of the axis and the edge
    span = (W - LEFT - RIGHT - 2 * pad) / max(1, len(categories) - 1) if len(categories) > 1 else 0

    def x_of(i: int) -> float:
        return LEFT + pad + i * span if len(categories) > 1 else (W + LEFT - RIGHT) / 2

    for si, s in enumerate(series):
        colour = PALETTE[si % len(PALETTE)]
        points = [(x_of(i), _y(v, y_max), v, i) for i, v in enumerate(s.values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"><title>{escape(s.name)}, '
                  f'{escape(categories[i])}: {_fmt(v, percent)}</title></circle>' for x, y, v, i in points]
    parts += _x_labels(categories, x_of) + _legend(series) + ["</svg>"]
    return mark_safe("".join(parts))  # noqa: S308 - every text inside is escaped above
