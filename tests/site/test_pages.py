"""What every page shares: error pages in the site's layout, the favicon, navigation that offers only what
the viewer may open, API docs that fetch nothing from elsewhere."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_an_address_with_no_page_answers_the_sites_404_page(client):
    response = client.get("/no-such-page/")
    body = response.content.decode()
    assert response.status_code == 404
    assert 'class="topbar"' in body and "This page does not exist" in body
    assert "/no-such-page/" in body and "tried" not in body  # no URL patterns, no debug listing


@override_settings(DEBUG=True)
def test_with_debug_on_a_missing_page_is_still_the_sites_404_page(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "This page does not exist" in response.content.decode()


def test_a_hidden_task_is_a_404_page_that_says_what_is_missing(client, task):
    task.visibility = "hidden"
    task.save()
    response = client.get(f"/tasks/{task.slug}/")
    body = response.content.decode()
    assert response.status_code == 404 and 'class="topbar"' in body and "No task &#x27;sentiment&#x27;" in body


@override_settings(DEBUG=True)
def test_a_refusal_is_a_403_page_in_the_sites_layout_with_the_reason(client, personas, task):
    client.force_login(personas.researcher)
    response = client.get(f"/tasks/{task.slug}/console/")
    body = response.content.decode()
    assert response.status_code == 403
    assert 'class="topbar"' in body and "You may not open this page" in body
    assert "Only the task&#x27;s owners and admins may do this." in body


def test_the_500_page_renders_without_a_request(client):
    from django.template.loader import render_to_string

    body = render_to_string("500.html")
    assert "Something went wrong on our side" in body and 'class="topbar"' in body


def test_favicon_is_served_at_the_root_and_linked_from_every_page(client):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"
    assert b"".join(icon.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert 'rel="icon"' in client.get("/").content.decode()


def nav(client) -> str:
    body = client.get("/").content.decode()
    return body.split('class="topbar"')[1].split("</header>")[0]


@pytest.mark.parametrize(("persona", "console"), [
    ("anonymous", False), ("annotator", False), ("validator", False), ("researcher", False),
    ("expert", False), ("outsider", False), ("owner", True), ("admin", True),
])
def test_the_top_bar_offers_the_console_only_to_owners_and_admins(client, personas, persona, console):
    user = personas.get(persona)
    if user is not None:
        client.force_login(user)
    assert ('id="nav-console"' in nav(client)) is console


def test_the_top_bar_keeps_api_and_the_account_apart(client, personas):
    client.force_login(personas.annotator)
    bar = nav(client)
    site, account = bar.split('aria-label="account"')
    assert 'id="nav-api"' in site and "annotator" in account  # two lists, never "APIannotator"


def test_a_task_page_links_the_console_only_for_who_may_open_it(client, personas, task):
    client.force_login(personas.researcher)
    assert 'id="task-nav-console"' not in client.get(f"/tasks/{task.slug}/leaderboard/").content.decode()
    client.force_login(personas.owner)
    assert 'id="task-nav-console"' in client.get(f"/tasks/{task.slug}/leaderboard/").content.decode()


EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']https?://""")


def test_swagger_and_redoc_pages_load_nothing_from_elsewhere(client):
    for path in ("/api/docs/", "/api/redoc/"):
        body = client.get(path).content.decode()
        assert not EXTERNAL.search(body), path
        assert "fonts.googleapis" not in body and "cdn." not in body
    assert '"validatorUrl": null' in client.get("/api/docs/").content.decode()


def test_a_refused_form_without_its_csrf_token_says_what_to_do(personas):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.annotator)
    response = client.post("/accounts/logout/")
    body = response.content.decode()
    assert response.status_code == 403 and 'class="topbar"' in body and "Reload the page and try again" in body
