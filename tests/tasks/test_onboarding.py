"""A newcomer's first pages: the home page says what the platform is for and how a round works, explains
each figure, and offers each role its next step; sign-up ends on a page that says what to do next."""

from __future__ import annotations

import pytest

from tasks import guidelines

pytestmark = pytest.mark.django_db


def test_the_home_page_explains_the_platform_rounds_and_figures(client, task, open_round):
    body = client.get("/").content.decode()
    assert 'id="how-a-round-works"' in body and 'id="glossary"' in body
    assert "Model error rate" in body and "Verified model error rate" in body
    assert '<abbr title="Model error rate' in body  # the figure's name carries its meaning as a tooltip
    assert f'data-task="{task.slug}"' in body and 'id="cta-signup"' in body


@pytest.mark.parametrize(("persona", "shown", "hidden"), [
    ("annotator", ["cta-write", "cta-quiz"], ["cta-validate", "cta-console", "cta-signup"]),
    ("validator", ["cta-validate"], ["cta-write", "cta-console"]),
    ("researcher", ["cta-research"], ["cta-console", "cta-write"]),
    ("owner", ["cta-console", "cta-validate", "cta-expert"], ["cta-signup"]),
])
def test_the_home_page_offers_each_role_its_next_step(client, personas, task, open_round, persona, shown, hidden):
    client.force_login(personas.get(persona))
    body = client.get("/").content.decode()
    for name in shown:
        assert f'id="{name}"' in body, name
    for name in hidden:
        assert f'id="{name}"' not in body, name


def test_a_task_card_offers_writing_only_to_writers(client, personas, task, open_round):
    client.force_login(personas.annotator)
    assert f"/tasks/{task.slug}/create/" in client.get("/").content.decode()
    client.force_login(personas.researcher)
    assert f"/tasks/{task.slug}/create/" not in client.get("/").content.decode()


def test_sign_up_ends_on_what_to_do_next(client, task, open_round, personas):
    guidelines.publish(task, "# Be kind", by=personas.owner)
    response = client.post("/accounts/signup/", {"username": "newcomer", "email": "",
                                                 "password1": "a-long-passphrase-42", "password2": "a-long-passphrase-42"})
    assert response.status_code == 302 and response["Location"] == "/accounts/welcome/"
    body = client.get("/accounts/welcome/").content.decode()
    assert "Welcome, newcomer" in body and 'id="next-steps"' in body
    assert f"/tasks/{task.slug}/guidelines/" in body and f"/tasks/{task.slug}/create/" in body


def test_the_sign_up_form_speaks_plainly_and_keeps_the_password_rules(client):
    body = client.get("/accounts/signup/").content.decode()
    assert "At least 8 characters" in body and "<ul>" not in body.split('id="signup-form"')[1].split("</form>")[0]
    response = client.post("/accounts/signup/", {"username": "x", "password1": "123", "password2": "123"})
    assert response.status_code == 400 and "too short" in response.content.decode()


def test_the_welcome_page_needs_an_account(client):
    assert client.get("/accounts/welcome/").status_code == 302


def test_own_profile_links_my_examples_and_next_steps(client, personas):
    client.force_login(personas.annotator)
    body = client.get("/people/annotator/").content.decode()
    assert 'id="profile-links"' in body and "/accounts/welcome/" in body
    assert 'id="profile-links"' not in client.get("/people/owner/").content.decode()
