"""The allow/deny matrix of roles over the shared personas."""

import pytest

from tasks import roles
from tests.factories import TaskFactory

ALLOWED = {
    # role:        personas that hold it on the persona task
    roles.ANNOTATOR: {"annotator"},
    roles.VALIDATOR: {"validator", "expert", "owner", "admin"},
    roles.EXPERT: {"expert", "owner", "admin"},
    roles.RESEARCHER: {"researcher", "owner", "admin"},
    roles.OWNER: {"owner", "admin"},
    roles.ADMIN: {"admin"},
}
PERSONAS = ("owner", "annotator", "validator", "expert", "researcher", "outsider", "admin", "anonymous")


@pytest.mark.parametrize("role", list(ALLOWED))
@pytest.mark.parametrize("persona", PERSONAS)
def test_role_matrix(personas, task, role, persona):
    from django.contrib.auth.models import AnonymousUser

    user = personas.get(persona) or AnonymousUser()
    assert roles.has_role(user, role, task) is (persona in ALLOWED[role])


def test_ownership_is_per_task(personas, task):
    other = TaskFactory(slug="other")
    assert roles.has_role(personas.owner, roles.OWNER, task)
    assert not roles.has_role(personas.owner, roles.OWNER, other)
    assert not roles.has_role(personas.owner, roles.EXPERT, other)


def test_signup_grants_annotator_only_and_records_the_address(client, db):
    """New sign-ups write at once but start unqualified as validators (issue 15: the validator role on a
    task comes from passing its quiz); the sign-up address is kept for the sybil rule."""
    from django.contrib.auth.models import User

    response = client.post("/accounts/signup/", {"username": "fresh", "email": "f@example.org",
                                                 "password1": "a-long-passphrase-42", "password2": "a-long-passphrase-42"},
                           REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 302
    user = User.objects.get(username="fresh")
    assert roles.role_names(user) == {roles.ANNOTATOR}
    assert user.account.origin == "signup" and user.account.signup_ip == "203.0.113.7"


def test_signup_with_mismatched_passwords_says_so(client, db):
    response = client.post("/accounts/signup/", {"username": "fresh", "password1": "a-long-passphrase-42", "password2": "other"})
    assert response.status_code == 400
    assert b"didn" in response.content  # "The two password fields didn't match."


def test_a_role_granted_on_one_task_holds_there_only(personas, task):
    other = TaskFactory(slug="elsewhere")
    roles.grant_on_task(personas.outsider, task, roles.VALIDATOR, "quiz")
    assert roles.has_role(personas.outsider, roles.VALIDATOR, task)
    assert not roles.has_role(personas.outsider, roles.VALIDATOR, other)
    assert not roles.has_role(personas.outsider, roles.VALIDATOR)


def test_an_appointed_expert_validates_and_resolves_on_that_task(personas, task):
    roles.grant_on_task(personas.outsider, task, roles.EXPERT, "owner")
    assert roles.has_role(personas.outsider, roles.EXPERT, task)
    assert roles.has_role(personas.outsider, roles.VALIDATOR, task)


@pytest.mark.parametrize("role", [roles.ANNOTATOR, roles.VALIDATOR, roles.EXPERT, roles.RESEARCHER, roles.OWNER])
def test_a_suspended_account_holds_no_role_on_that_task(personas, task, role):
    from tasks.models import Suspension

    holder = {roles.ANNOTATOR: "annotator", roles.VALIDATOR: "validator", roles.EXPERT: "expert",
              roles.RESEARCHER: "researcher", roles.OWNER: "owner"}[role]
    user = personas.get(holder)
    Suspension.objects.create(task=task, user=user, reason="test")
    roles.forget(user)
    assert not roles.has_role(user, role, task)
    assert roles.has_role(user, role, TaskFactory(slug="unaffected")) is (role != roles.OWNER)


def test_a_quiz_requirement_overrides_the_global_role(personas, task):
    task.config = {**task.config, "crowd": {"validators_need_quiz": True}}
    task.save()
    assert not roles.has_role(personas.validator, roles.VALIDATOR, task)
    assert roles.has_role(personas.expert, roles.VALIDATOR, task)  # experts and owners are not asked
    roles.grant_on_task(personas.validator, task, roles.VALIDATOR, "quiz")
    assert roles.has_role(personas.validator, roles.VALIDATOR, task)
