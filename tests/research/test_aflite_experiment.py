"""The AFLite experiment's small pieces (research.aflite), and one tiny end-to-end run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from research.aflite.experiment import (
    ExperimentConfig,
    accuracy_interval,
    label_matched_subset,
    paired_difference,
    random_subset,
    run,
    split_pool,
    unpaired_difference,
)
from research.aflite.pool import sample_pool
from research.hardbench.data import load_sst2


def test_the_pool_split_is_disjoint_complete_and_seeded():
    ref, part = split_pool(90, 1 / 3, seed=4)
    assert len(ref) == 30 and len(part) == 60 and not set(ref) & set(part)
    assert sorted([*ref, *part]) == list(range(90))
    assert np.array_equal(split_pool(90, 1 / 3, seed=4)[0], ref)
    with pytest.raises(ValueError, match="reference_share"):
        split_pool(90, 1.0, 0)


def test_random_controls_have_the_size_asked_and_label_matching_copies_the_label_counts():
    positions = np.arange(100)
    labels = np.array([0] * 70 + [1] * 30)
    picked = random_subset(positions, 20, seed=1)
    assert len(set(picked)) == 20 and set(picked) <= set(positions)
    like = np.array([0, 1, 2, 80, 81, 82, 83, 84])  # 3 negatives, 5 positives
    matched = label_matched_subset(positions, labels, like, seed=0)
    assert (labels[matched] == 0).sum() == 3 and (labels[matched] == 1).sum() == 5


def test_intervals_contain_their_figure_and_differences_have_the_right_sign():
    acc = accuracy_interval(np.array([1] * 80 + [0] * 20))
    assert acc["accuracy"] == pytest.approx(0.8) and acc["low"] < 0.8 < acc["high"] and acc["n"] == 100
    worse, better = np.array([1] * 40 + [0] * 60), np.array([1] * 90 + [0] * 10)
    d = unpaired_difference(worse, better, resamples=500)
    assert d["difference"] == pytest.approx(-0.5) and d["high"] < 0
    paired = paired_difference(worse, better, resamples=500)
    assert paired["difference"] == pytest.approx(-0.5) and paired["high"] < 0 and paired["p_mcnemar"] < 0.001


def test_the_pool_sample_is_seeded_and_sized(data_dir):
    train = load_sst2(data_dir, "train", max_rows=200)
    a, b = sample_pool(train, 50, 3), sample_pool(train, 50, 3)
    assert len(a) == 50 and np.array_equal(a.ids, b.ids) and sample_pool(train, None, 0) is train


def test_a_tiny_run_writes_its_tables_and_reuses_its_caches(tmp_path, data_dir, tiny_encoder, tokenizer):
    config = ExperimentConfig(data_dir=data_dir, out_dir=tmp_path / "out", cache_dir=tmp_path / "cache",
                              pool_size=300, random_seeds=[0], m=4, t=0.2, k=0.1, n=0.3, resamples=100)
    summary = run(config, tiny_encoder, tokenizer, log=lambda _: None)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| probe | AFLite-filtered |" in report and "| tfidf | random (seed 0) |" in report
    assert summary["sizes"]["reference"] == 100 and summary["sizes"]["filtered"] <= 200
    assert {r["trained_on"] for r in summary["training"]} == {"AFLite-filtered", "random (seed 0)",
                                                              "random, label-matched"}
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["aflite"]["params"]["m"] == 4
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert any(n.startswith("aflite-pool300") for n in cached) and "sst2-dev-minilm.npy" in cached
    again = run(config, tiny_encoder, tokenizer, log=lambda _: None)  # embeddings and filter from the cache
    assert again["sizes"] == summary["sizes"] and again["harder"] == summary["harder"]
