import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from tasks import roles
from tasks.models import Context, LabeledItem, Task


@pytest.mark.django_db
def test_demo_loads_four_tasks_with_open_rounds_and_data(capsys):
    call_command("load_demo")
    tasks = {t.slug: t for t in Task.objects.all()}
    assert {t.kind for t in tasks.values()} == {"sentiment", "nli", "hate_speech", "qa"}
    for task in tasks.values():
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
