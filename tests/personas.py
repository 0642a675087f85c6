"""The shared personas: one user per role, and the task they act on."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from tasks import roles
from tasks.models import Task
from tests.factories import UserFactory

PERSONAS = ("owner", "annotator", "validator", "expert", "researcher", "outsider", "admin", "anonymous")


@dataclass
class Personas:
    owner: User
    annotator: User
    validator: User
    expert: User
    researcher: User
    outsider: User
    admin: User

    def get(self, name: str) -> User | None:
        return None if name == "anonymous" else getattr(self, name)


def make_personas(task: Task) -> Personas:
    people = Personas(
        owner=UserFactory(username="owner"),
        annotator=UserFactory(username="annotator"),
        validator=UserFactory(username="validator"),
        expert=UserFactory(username="expert"),
        researcher=UserFactory(username="researcher"),
        outsider=UserFactory(username="outsider"),
        admin=UserFactory(username="admin", is_staff=True, is_superuser=True),
    )
    task.owners.add(people.owner)
    roles.grant(people.annotator, roles.ANNOTATOR)
    roles.grant(people.validator, roles.VALIDATOR)
    roles.grant(people.expert, roles.EXPERT)
    roles.grant(people.researcher, roles.RESEARCHER)
    return people
