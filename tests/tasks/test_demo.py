import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from tasks import roles
from tasks.models import Context, LabeledItem, Task


@pytest.mark.django_db
def test_demo_loads_four_tasks_with_open_rounds_and_data(capsys):
    call_command("load_demo")
    tasks = {t.slug: t for t in Task.objects.all()}
    assert {t.kind for t in tasks.values()} == {"sentiment", "nli", "hate_speech", "qa", "chat"}
    assert tasks["chat"].current_round.number == 1  # its recorded conversations: tests/chat/test_demo.py
    for task in (t for t in tasks.values() if not t.kind_impl.generative):
        assert task.current_round.number == 1
        assert Context.objects.filter(task=task).count() >= 24
        assert LabeledItem.objects.filter(task=task, split="train").count() >= 48
        assert LabeledItem.objects.filter(task=task, split="test").count() >= 24
    qa_item = LabeledItem.objects.filter(task=tasks["qa"]).first()
    assert qa_item.context["passage"][qa_item.target["start"]:].startswith(qa_item.target["text"])
    out = capsys.readouterr().out
    assert "Demo accounts" in out and "dynabench-demo" in out


@pytest.mark.django_db
def test_demo_is_idempotent():
    call_command("load_demo")
    counts = (Task.objects.count(), Context.objects.count(), LabeledItem.objects.count(), User.objects.count())
    call_command("load_demo")
    assert (Task.objects.count(), Context.objects.count(), LabeledItem.objects.count(), User.objects.count()) == counts
    assert Task.objects.get(slug="nli").rounds.count() == 1


@pytest.mark.django_db
def test_demo_personas_have_their_roles():
    call_command("load_demo")
    task = Task.objects.get(slug="sentiment")
    person = {u.username: u for u in User.objects.all()}
    assert roles.has_role(person["annotator"], roles.ANNOTATOR, task)
    assert roles.has_role(person["owner"], roles.OWNER, task)
    assert roles.has_role(person["expert"], roles.EXPERT, task)
    assert roles.has_role(person["researcher"], roles.RESEARCHER, task)
    assert person["admin"].is_superuser
    assert person["owner"].check_password("dynabench-demo")


@pytest.mark.django_db
def test_demo_tasks_have_guidelines_quizzes_and_qualified_accounts():
    from crowd.models import Quiz
    from tasks import guidelines

    call_command("load_demo")
    call_command("load_demo")  # idempotent: no second version, no second quiz
    for task in Task.objects.all():
        current = guidelines.current(task)
        assert current.version == 1 and "|" in current.text  # a table of worked examples
        quizzes = set() if task.kind_impl.generative else {"annotator", "validator"}  # chat: no labelled quiz
        assert set(Quiz.objects.filter(task=task).values_list("role", flat=True)) == quizzes
        assert all(q.items.count() >= 3 for q in Quiz.objects.filter(task=task))
        for name in ("annotator", "validator", "validator2", "validator3"):
            person = User.objects.get(username=name)
            assert guidelines.pending(person, task) is None  # already read: they work at once
        assert roles.has_role(User.objects.get(username="validator3"), roles.VALIDATOR, task)


@pytest.mark.django_db
def test_the_expert_queue_can_be_tried_at_once_with_the_demo_accounts():
    from django.test import Client

    from tests.factories import ExampleFactory

    call_command("load_demo")
    task = Task.objects.get(slug="sentiment")
    person = {u.username: u for u in User.objects.all()}
    example = ExampleFactory(round=task.current_round, author=person["annotator"], context=None)
    for name, verdict in (("validator", "correct"), ("validator2", "incorrect"), ("validator3", "flagged")):
        client = Client()
        client.force_login(person[name])
        body = {"verdict": verdict, **({"label": "negative"} if verdict == "incorrect" else {}),
                **({"reason": "unclear"} if verdict == "flagged" else {})}
        assert client.post(f"/api/examples/{example.pk}/validations/", body, content_type="application/json").status_code == 201
    example.refresh_from_db()
    assert example.consensus == "disputed"  # demo quorum 2: three different votes cannot agree
    expert = Client()
    expert.force_login(person["expert"])
    assert [e.pk for e in expert.get("/tasks/sentiment/expert/").context["examples"]] == [example.pk]


@pytest.mark.django_db
def test_demo_loads_the_vendored_samples_as_training_items_only(settings):
    call_command("load_demo")
    qa, hate = Task.objects.get(slug="qa"), Task.objects.get(slug="hate-speech")
    squad = LabeledItem.objects.filter(task=qa, collection="squad-train")
    # training items; the importer holds a stable slice of a large import back (split "heldout", never trained on)
    assert squad.count() >= 3900 and set(squad.values_list("split", flat=True)) == {"train", "heldout"}
    assert squad.filter(split="heldout").count() <= 0.06 * squad.count()
    for item in squad.order_by("?")[:50]:
        assert item.context["passage"][item.target["start"]:].startswith(item.target["text"])
    # The 3 SQuAD dev articles are evaluation only: none of their questions is a training item.
    import json

    held_out = {json.loads(line)["id"] for line in (settings.DATA_DIR / "squad_subset" / "squad_subset.jsonl").open()
                if json.loads(line)["source_split"] == "squad_v1.1_dev"} if (
        settings.DATA_DIR / "squad_subset").is_dir() else set()
    assert not held_out & set(squad.values_list("external_id", flat=True))
    davidson = LabeledItem.objects.filter(task=hate, collection="davidson-train")
    assert davidson.count() == 3000
    assert set(davidson.values_list("target", flat=True)) == {"hateful", "not hateful"}
    assert set(davidson.values_list("split", flat=True)) == {"train", "heldout"}
    assert davidson.filter(split="heldout").count() <= 0.06 * davidson.count()
    from tasks.demo.samples.make_samples import davidson_held_out

    assert not any(davidson_held_out(int(i)) for i in davidson.values_list("external_id", flat=True))


def _write_jsonl(path, rows):
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.django_db
def test_base_data_from_data_dir_is_imported_as_train_items_only_when_asked(settings, tmp_path):
    from tasks.management.commands.load_demo import fraction, sst2_train_sample

    labels = ["entailment", "neutral", "contradiction"]
    _write_jsonl(tmp_path / "snli" / "dev.jsonl", [
        {"idx": i, "premise": f"A man plays guitar number {i}.", "hypothesis": f"Someone makes music {i}.",
         "label": labels[i % 3]} for i in range(12)])
    _write_jsonl(tmp_path / "snli" / "test.jsonl", [
        {"idx": 0, "premise": "A held out premise.", "hypothesis": "Never trained on.", "label": "neutral"}])
    _write_jsonl(tmp_path / "sst2" / "train.jsonl", [
        {"idx": i, "sentence": f"a genuinely moving film number {i}" if i % 2 else "too short", "label": i % 2}
        for i in range(10)])
    settings.DATA_DIR = tmp_path
    call_command("load_demo")  # off by default: the test suite stays on the vendored samples
    assert not LabeledItem.objects.filter(collection__in=["snli-dev", "sst2-train-sample"]).exists()
    call_command("load_demo", "--base-data")
    call_command("load_demo", "--base-data")  # idempotent
    nli, sentiment = Task.objects.get(slug="nli"), Task.objects.get(slug="sentiment")
    snli = LabeledItem.objects.filter(task=nli, collection="snli-dev")
    assert snli.count() == 12 and set(snli.values_list("split", flat=True)) == {"train"}  # 12 < 200: none held out
    assert set(snli.values_list("target", flat=True)) == set(labels)
    assert not snli.filter(input__hypothesis="Never trained on.").exists()
    sst2 = LabeledItem.objects.filter(task=sentiment, collection="sst2-train-sample")
    assert sst2.count() == 5 and set(sst2.values_list("split", flat=True)) == {"train"}  # sentences of >= 4 words
    assert set(sst2.values_list("target", flat=True)) == {"positive"}
    assert not LabeledItem.objects.filter(collection__in=["snli-dev", "sst2-train-sample"]).exclude(
        task__in=[nli, sentiment]).exists()
    # the sample rule: a stable 4,000 of the long sentences (the sentiment demo's earlier SST-2 sample)
    lowest = sorted((1, 3, 5, 7, 9), key=lambda i: fraction(f"sst2-train:{i}"))[:2]
    assert [r["idx"] for r in sst2_train_sample(tmp_path / "sst2" / "train.jsonl", limit=2)] == lowest


@pytest.mark.django_db
def test_without_base_data_files_the_demo_loads_on_its_vendored_samples(settings, tmp_path, capsys):
    settings.DATA_DIR = tmp_path / "missing"
    call_command("load_demo", "--base-data")
    assert Task.objects.count() == 5
    assert not LabeledItem.objects.filter(collection__in=["snli-dev", "sst2-train-sample"]).exists()
    assert "no snli/dev.jsonl under DATA_DIR" in capsys.readouterr().out
