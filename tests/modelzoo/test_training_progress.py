"""Each member of an ensemble in training shows its own progress (issue 39, item 6: the task page read "member 3/3"
with the same loss for all three members, at 72 % and again at 94 %)."""

from __future__ import annotations

from modelzoo.ensemble_training import EnsembleProgress
from modelzoo.models import ModelVersion
from tests.modelzoo.test_recipes import tiny, toy_rows
from zoo import recipes


def test_each_member_row_shows_its_own_step_and_loss_and_the_mean_is_the_ensembles_progress(open_round, tmp_path):
    task = open_round.task
    versions = [ModelVersion.objects.create(task=task, version=i + 1, name=f"sentiment-r1-s{i}", head="classification",
                                            status="training") for i in range(3)]
    progress = EnsembleProgress(versions, every_s=0)
    seen: list[tuple[int, int, dict, list[tuple[float, str]]]] = []

    def observe(done: int, total: int, stats: dict) -> None:
        progress(done, total, stats)
        rows = ModelVersion.objects.filter(pk__in=[v.pk for v in versions]).order_by("version")
        seen.append((done, total, dict(stats), [(r.progress, r.progress_message) for r in rows]))

    metrics = recipes.train_ensemble(toy_rows(64), tiny(min_steps=30, patience=50), [tmp_path / n for n in "abc"],
                                     [0, 1, 2], progress=observe)

    # While the second member trains: the first says it is trained, with its own final loss; the third waits.
    middle = [rows for _, _, stats, rows in seen if stats.get("member") == 1.0 and not stats.get("finished")]
    assert middle
    first, second, third = (m for _, m in middle[-1])
    assert len({first, second, third}) == 3, (first, second, third)
    assert first.startswith("member 1/3: trained") and f"loss {metrics[0]['train_loss']:.3f}" in first
    assert second.startswith("member 2/3: training, step ")
    assert third.startswith("member 3/3: waiting")
    encoding = [rows for _, _, stats, rows in seen if "member" not in stats]
    assert encoding and all("encoding the data once for all 3 members" in m for _, m in encoding[0])
    # The page's figure (the mean of the rows) is the ensemble's progress, and no row goes backwards.
    for done, total, _, rows in seen:
        if done < total:
            assert abs(sum(p for p, _ in rows) / 3 - done / total) < 0.002, (done, total, rows)
    for member in range(3):
        figures = [rows[member][0] for *_, rows in seen]
        assert figures == sorted(figures)
    last = seen[-1][3]
    assert [p for p, _ in last] == [1.0, 1.0, 1.0]
    assert [m.split(":")[0] for _, m in last] == ["member 1/3", "member 2/3", "member 3/3"]
    assert f"loss {metrics[2]['train_loss']:.3f}" in last[2][1] and f"loss {metrics[0]['train_loss']:.3f}" in last[0][1]
