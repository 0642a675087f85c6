"""Publishing as the owner meets it and what researchers see (issue 39, item 8): before pressing the button the owner
sees rows per split, how many are validated and plain warnings (empty dev/test, mostly unvalidated rows); an empty
round is not published; researchers see per round what is published and what is not; the documented load calls
(the card's and the download section's) work on a version whose dev and test are empty."""

from __future__ import annotations

import re
import zipfile

import pytest
from rest_framework.test import APIClient

from annotation.models import Example
from exports import services, splits
from tests.exports.conftest import make_example

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_round(open_round):
    """Round 1 as issue 39 found it: 9 rows, 7 of them unvalidated (not fooled, so never sent to validators)."""
    for n in range(7):
        make_example(open_round, fooled=False, input={"text": f"A plain example, number {n}."})
    for n in range(2):
        make_example(open_round, consensus="verified", validated_label="positive", input={"text": f"Sly {n}."})
    # With the task's 80/10/10 ratios and these ids, both verified examples must land in train for this to be the
    # issue's case; choose the seed that does so (the split follows the seed and the id alone).
    task = open_round.task
    for seed in range(200):
        task.config = {**task.config, "splits": {"train": 0.8, "dev": 0.1, "test": 0.1, "seed": seed}}
        task.save()
        rule = splits.SplitRule.of(task)
        if all(rule.bucket(e.pk) == "train" for e in Example.objects.filter(round=open_round, fooled=True)):
            return open_round
    raise AssertionError("no seed puts both fooling examples in train")


def test_the_owner_sees_what_publishing_would_give_with_warnings(small_round):
    plan = services.publish_plan(small_round)
    assert plan.preview.rows == {"train": 9, "dev": 0, "test": 0}
    assert plan.preview.validated == {"train": 2, "dev": 0, "test": 0}
    assert plan.can_publish and plan.next_version == 1 and plan.latest is None
    empty, unvalidated = plan.warnings
    assert empty.startswith("Dev and test would be empty") and "not evaluate" in empty
    assert unvalidated.startswith("Most rows are unvalidated: 7 of 9")
    assert Example.objects.filter(round=small_round, split__isnull=False).count() == 0  # nothing stored by looking


def test_held_back_examples_are_named_as_what_fills_dev_and_test(open_round):
    """A fooling example waiting for validation with a dev/test hash: the warning says validating it fills them."""
    task = open_round.task
    make_example(open_round, fooled=False)
    waiting = [make_example(open_round) for _ in range(30)]
    rule = splits.SplitRule.of(task)
    held = sum(rule.bucket(e.pk) != "train" for e in waiting)
    plan = services.publish_plan(open_round)
    assert held and plan.preview.held_back == held
    assert any(f"{held} fooling example(s) assigned to dev or test wait for validation" in w for w in plan.warnings)


def test_an_empty_round_is_not_published(open_round, client_for):
    make_example(open_round, consensus="rejected")
    plan = services.publish_plan(open_round)
    assert not plan.can_publish and plan.warnings[0].startswith("Nothing to publish yet")
    response = client_for("owner").post("/api/tasks/sentiment/rounds/1/snapshots/", {}, format="json")
    assert response.status_code == 400 and "nothing to publish" in response.json()["detail"]
    assert open_round.snapshots.count() == 0


def test_a_snapshot_records_how_many_rows_are_validated(small_round, client_for):
    response = client_for("owner").post("/api/tasks/sentiment/rounds/1/snapshots/", {}, format="json")
    assert response.status_code == 201
    snapshot = small_round.snapshots.get()
    assert snapshot.counts == {"train": 9, "dev": 0, "test": 0}
    assert snapshot.validated == {"train": 2, "dev": 0, "test": 0} and snapshot.validated_rows == 2
    assert snapshot.splits == ["train"]


def test_the_publish_form_says_what_was_published_and_warns(small_round, personas, client):
    client.force_login(personas.owner)
    response = client.post("/tasks/sentiment/rounds/1/publish/", {"audience": "researchers",
                                                                   "next": "/tasks/sentiment/console/datasets/"},
                           follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == "/tasks/sentiment/console/datasets/"
    assert "Published round 1 as version 1: 9 rows (train 9, dev 0, test 0), 2 validated." in page
    assert "Dev and test would be empty" in page


def test_the_owner_console_has_a_datasets_page_for_owners_only(small_round, personas, client):
    client.force_login(personas.owner)
    page = client.get("/tasks/sentiment/console/datasets/").content.decode()
    assert 'id="publish-round-1"' in page and "Publish round 1 as v1" in page
    assert "Most rows are unvalidated: 7 of 9" in page
    for persona in ("researcher", "annotator"):
        client.force_login(getattr(personas, persona))
        assert client.get("/tasks/sentiment/console/datasets/").status_code in (403, 404)


def test_the_task_page_puts_the_publish_control_in_the_owners_actions(small_round, personas, client):
    client.force_login(personas.owner)
    page = client.get("/tasks/sentiment/").content.decode()
    actions = page.split('id="task-actions"')[1].split("</nav>")[0]
    assert 'href="/tasks/sentiment/console/datasets/"' in actions and "Publish the data" in actions
    assert 'href="#downloads"' in actions


def test_researchers_see_which_rounds_are_published_and_which_not(small_round, personas, client):
    from tests.factories import RoundFactory

    second = RoundFactory(task=small_round.task, number=2, status="closed")
    make_example(second, fooled=False)
    services.publish_snapshot(small_round, personas.owner)
    client.force_login(personas.researcher)
    downloads = client.get("/tasks/sentiment/").content.decode().split('id="downloads"')[1]
    one = downloads.split('id="dataset-round-1"')[1].split("</article>")[0]
    two = downloads.split('id="dataset-round-2"')[1].split("</article>")[0]
    assert "published: v1" in one and "9 rows: train 9 · dev 0 · test 0" in one and "2 of 9 validated" in one
    assert "has no dev or test rows" in one
    assert "not published" in two and "Not published yet: 1 example collected so far." in two
    assert "Publish round" not in downloads  # the control is the owners'


def run_load_calls(code: str, folder) -> list:
    """Run a documented Python snippet against the unzipped bundle, offline, line by line as a reader would; return
    every dataset its lines loaded (each call is one line assigning `ds`)."""
    code = code.replace('"path/to/this/folder"', repr(str(folder)))
    namespace: dict = {}
    loaded = []
    for line in code.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            exec(compile(line, "<snippet>", "exec"), namespace)  # noqa: S102 - our own documentation
            if "ds" in namespace and (not loaded or namespace["ds"] is not loaded[-1]):
                loaded.append(namespace["ds"])
    return loaded


def test_the_documented_load_calls_work_when_dev_and_test_are_empty(small_round, personas, client, tmp_path,
                                                                    monkeypatch):
    """Issue 39: round 1 published as 9 / 0 / 0 and the documented multi-split call failed ("Instruction 'test'
    corresponds to no data!"). The card's snippet and the task page's load call name only the splits with rows."""
    import html

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    snapshot, _ = services.publish_snapshot(small_round, personas.owner)
    folder = tmp_path / f"sentiment-round1-v{snapshot.version}"
    zipfile.ZipFile(services.snapshot_path(snapshot)).extractall(folder)
    monkeypatch.chdir(folder)  # the card's paths are relative to the folder
    card = (folder / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", card, re.S).group(1)
    loaded = run_load_calls(snippet, folder)
    assert len(loaded) == 4  # the folder, then each format alone
    assert all(list(ds) == ["train"] and ds["train"].num_rows == 9 for ds in loaded)
    client.force_login(personas.researcher)
    page = client.get("/tasks/sentiment/").content.decode()
    call = html.unescape(re.search(r'<pre class="load-call"><code>(.*?)</code></pre>', page, re.S).group(1))
    monkeypatch.chdir(tmp_path)  # the page's call names the unzipped folder
    [ds] = run_load_calls(call, folder)
    assert list(ds) == ["train"] and ds["train"].num_rows == 9


def test_the_api_lists_the_splits_that_hold_rows(small_round, personas):
    services.publish_snapshot(small_round, personas.owner)
    client = APIClient()
    client.force_authenticate(personas.researcher)
    [listed] = client.get("/api/tasks/sentiment/datasets/").json()["results"]
    assert listed["splits"] == ["train"] and listed["validated"] == {"train": 2, "dev": 0, "test": 0}
