from __future__ import annotations

import json

import pytest

from research.hardbench import HardbenchConfig, run, strategy_parts


def test_strategy_names_map_to_selection_and_score():
    assert strategy_parts("random") == ("random", None)
    assert strategy_parts("gradnorm") == ("hardest", "gradnorm")
    assert strategy_parts("easiest:loss") == ("easiest", "loss")


def test_reproduction_writes_report_and_plot_and_reuses_its_cache(tmp_path, data_dir, tiny_encoder, tokenizer):
    config = HardbenchConfig(data_dir=data_dir, out_dir=tmp_path / "out", cache_dir=tmp_path / "cache", ks=[2],
                             seeds=[0, 1], strategies=["random", "loss", "easiest:gradnorm_deep"],
                             max_train_rows=40, epochs=1, min_steps=1, el2n_runs=2, datamap_epochs=2)
    summary = run(config, tiny_encoder, tokenizer)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| 2 | loss |" in report and (tmp_path / "out" / "hardbench.png").stat().st_size > 0
    assert {r["strategy"] for r in summary["table"]} == {"random", "loss", "easiest:gradnorm_deep"}
    assert summary["sanity"]["per_k"][2]["misclassified"]["loss"] == pytest.approx(1.0)
    runs = (tmp_path / "out" / "runs.jsonl").read_text().splitlines()
    assert len(runs) == 6 and all(len(json.loads(r)["epoch_accuracy"]) >= 1 for r in runs)
    run(config, tiny_encoder, tokenizer)  # a rerun trains nothing new
    assert len((tmp_path / "out" / "runs.jsonl").read_text().splitlines()) == 6
