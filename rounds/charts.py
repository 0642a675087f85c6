"""Small charts rendered on the server as inline SVG (no script, nothing fetched from elsewhere)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#2d5bd3", "#e07b39", "#1c7c3a", "#b3261e", "#7a4fb5", "#0f8b8d", "#8a6d1d", "#c2417e")
W, H = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 16, 56


@dataclass
class Series:
    name: str
    values: Sequence[float | None]


def _fmt(value: float, percent: bool) -> str:
    return f"{value * 100:.0f}%" if percent else (f"{value:.0f}" if value >= 10 else f"{value:.2g}")


def _frame(title: str, y_max: float, percent: bool) -> list[str]:
    parts = [f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for i in range(5):
        value = y_max * i / 4
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
    step = max(1, len(categories) // 12)
    return [f'<text x="{centre(i):.1f}" y="{H - BOTTOM + 16}" class="tick" text-anchor="middle">{escape(c)}</text>'
            for i, c in enumerate(categories) if i % step == 0]


def _y_max(series: Sequence[Series], percent: bool) -> float:
    top = max((v for s in series for v in s.values if v is not None), default=0.0)
    return 1.0 if percent and top <= 1 else (top * 1.1 or 1.0)


def bar_chart(title: str, categories: Sequence[str], series: Sequence[Series], percent: bool = True) -> SafeString:
    """Grouped bars: one group per category, one bar per series."""
    y_max = _y_max(series, percent)
    parts = _frame(title, y_max, percent)
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


def line_chart(title: str, categories: Sequence[str], series: Sequence[Series], percent: bool = True) -> SafeString:
    """One line per series over the categories (gaps where a value is None)."""
    y_max = _y_max(series, percent)
    parts = _frame(title, y_max, percent)
    span = (W - LEFT - RIGHT) / max(1, len(categories) - 1) if len(categories) > 1 else 0

    def x_of(i: int) -> float:
        return LEFT + i * span if len(categories) > 1 else (W + LEFT - RIGHT) / 2

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
