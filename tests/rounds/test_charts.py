"""The dashboard's charts: axes a person can read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rounds.charts import Series, bar_chart, ticks, time_labels


@pytest.mark.parametrize(("top", "expected"), [
    (1, [0, 1]), (2, [0, 1, 2]), (5, [0, 2, 4, 6]), (7, [0, 2, 4, 6, 8]), (40, [0, 10, 20, 30, 40]), (0, [0, 1]),
])
def test_count_axes_have_whole_number_ticks(top, expected):
    assert ticks(top, percent=False) == expected


def test_rate_axes_run_from_0_to_100_percent():
    assert ticks(0.3, percent=True) == [0, 0.25, 0.5, 0.75, 1]


def test_a_count_chart_never_labels_a_fraction_of_an_example():
    svg = bar_chart("labels", ["round 1"], [Series("positive", [1]), Series("negative", [2])], percent=False)
    assert "0.83" not in svg and "1.7" not in svg and ">2</text>" in svg


@pytest.mark.parametrize(("span", "first", "second"), [
    (timedelta(seconds=40), "12:08:00", "12:08:40"),
    (timedelta(hours=3), "12:08", "15:08"),
    (timedelta(days=2), "01 Mar 12:08", "03 Mar 12:08"),
    (timedelta(days=40), "01 Mar", "10 Apr"),
    (timedelta(days=800), "2024-03-01", "2026-05-10"),
])
def test_time_labels_are_as_precise_as_the_span_needs(span, first, second):
    start = datetime(2024, 3, 1, 12, 8, tzinfo=UTC)
    assert time_labels([start, start + span]) == [first, second]


def test_examples_written_within_a_minute_are_one_point(small_task):
    from rounds.dashboard import fooling_over_time

    points = fooling_over_time(small_task.rounds.get(number=1))
    assert len(points) == 1 and points[0]["collected"] == 30
