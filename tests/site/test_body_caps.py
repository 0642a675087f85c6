"""Body caps per route, decided before the body is read (dynabench_site.bodylimit, issue 25): 16 KB for sign-in,
tokens and votes, the upload cap only on the upload routes and only for signed-in users, the default cap for
everything else (multipart included); and a 413 that the development server (wsgiref) can send."""

from __future__ import annotations

import http.client
import inspect
import io
import json
import threading

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.request import Request
from rest_framework.test import APIClient

from dynabench_site import bodylimit
from dynabench_site.parsers import BodyTooLarge, BoundedJSONParser
from rounds.models import ResearcherModel
from tests.rounds.conftest import _fast  # noqa: F401 - tiny models run inline, as in the upload tests
from tests.rounds.test_uploads import artifact, files_of, post, task  # noqa: F401 - fixtures and helpers reused

KB = 1024
SMALL = 16 * KB


def big_json(size: int) -> bytes:
    return b'{"username": "' + b"x" * (size - 16) + b'"}'


# --- small routes: sign-in, tokens, votes ---------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/auth/token/", "/api/tokens/", "/api/examples/1/validations/"])
def test_a_100_kb_body_on_a_sign_in_token_or_vote_route_is_a_413_naming_the_limit(client_for, personas, path):
    client = client_for("anonymous" if path == "/api/auth/token/" else "validator")
    response = client.post(path, big_json(100 * KB), content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"detail": f"The request body is too large ({100 * KB} bytes; the limit is {SMALL} bytes).",
                               "code": "too_large"}


def test_the_sign_in_page_refuses_a_100_kb_form_with_the_limit(client, db):
    response = client.post("/accounts/login/", {"username": "someone", "password": "x" * (100 * KB)})
    assert response.status_code == 413 and f"the limit is {SMALL} bytes".encode() in response.content


def test_a_small_body_on_the_token_route_is_still_read(client_for, personas):
    response = client_for("anonymous").post("/api/auth/token/", {"username": "researcher", "password": "wrong"},
                                            format="json")
    assert response.status_code == 400 and "Unable to log in" in json.dumps(response.json())


def test_the_json_parser_reads_at_most_the_routes_cap(rf):
    """A body whose length is not declared (or is wrong) is still cut at the route's cap by the parser."""
    request = Request(rf.post("/api/auth/token/", b"", content_type="application/json"))
    with pytest.raises(BodyTooLarge, match=f"the limit is {SMALL} bytes"):
        BoundedJSONParser().parse(io.BytesIO(big_json(SMALL + 1)), parser_context={"request": request})
    assert BoundedJSONParser().parse(io.BytesIO(big_json(SMALL)), parser_context={"request": request})


# --- multipart: the upload cap on the upload routes only, for signed-in users ----------------------------------

@pytest.fixture
def over_default(artifact, settings):  # noqa: F811 - the fixture imported above
    """The model's files, and a default cap below their size (the upload cap stays ROUNDS_UPLOAD_MAX_MB)."""
    files = files_of(artifact)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = sum(f.size for f in files) // 2
    return files


def test_an_upload_route_accepts_a_body_over_the_default_cap_from_a_signed_in_researcher(personas, over_default):
    client = APIClient()
    client.force_login(personas.researcher)  # a session
    response = post(client, over_default)
    assert response.status_code == 201, response.content
    assert ResearcherModel.objects.count() == 1


def test_an_upload_route_accepts_it_with_an_api_token_too(personas, over_default):
    from accounts import tokens

    _, key = tokens.issue(personas.researcher, "upload", counted=False)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = post(client, over_default)
    assert response.status_code == 201, response.content


def test_an_anonymous_upload_gets_the_default_cap(personas, over_default):
    response = post(APIClient(), over_default)
    assert response.status_code == 413
    assert f"the limit is {django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes" in response.json()["detail"]
    assert not ResearcherModel.objects.exists()


def test_a_forged_token_is_refused_before_the_body_is_read(personas, over_default):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token dyn_not-a-key")
    response = post(client, over_default)
    assert response.status_code == 401 and not ResearcherModel.objects.exists()


def test_the_upload_page_gives_an_anonymous_visitor_the_default_cap(client, personas, over_default):
    response = client.post("/tasks/small/models/upload/", {"name": "m", "files": over_default})
    assert response.status_code == 413
    assert f"the limit is {django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes".encode() in response.content


def test_a_big_multipart_body_on_a_route_without_uploads_has_the_default_cap(personas, over_default):
    client = APIClient()
    client.force_login(personas.researcher)
    response = client.post("/api/tasks/small/examples/", {"files": over_default}, format="multipart")
    assert response.status_code == 413
    assert f"the limit is {django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes" in response.json()["detail"]


def test_an_anonymous_upload_that_lies_about_its_length_is_stopped_at_the_default_cap(settings, tmp_path, rf):
    """The upload handler decides again when the body starts to arrive, with the user known by then."""
    from django.contrib.auth.models import AnonymousUser
    from django.http.multipartparser import MultiPartParser

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    body = encode_multipart(BOUNDARY, {"name": "big", "files": SimpleUploadedFile("model.safetensors", b"\0" * (3 << 20))})
    request = rf.post("/api/tasks/small/models/", {})
    request.user = AnonymousUser()
    meta = {**request.META, "CONTENT_TYPE": MULTIPART_CONTENT, "CONTENT_LENGTH": "1000"}  # a lie
    stream = io.BytesIO(body)
    _, files = MultiPartParser(meta, stream, request.upload_handlers).parse()
    assert "files" not in files and list(tmp_path.iterdir()) == []
    assert stream.tell() < 1.5 * 1024 * 1024  # stopped near the default cap, not at the upload cap
    assert bodylimit.refusal(request) == "The request body is too large (the limit is 1048576 bytes)."


# --- the table ----------------------------------------------------------------------------------------------------

def url_patterns(resolver: URLResolver | None = None, prefix: str = ""):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            name = f"{prefix}{entry.namespace}:" if entry.namespace else prefix
            yield from url_patterns(entry, name)
        elif isinstance(entry, URLPattern) and entry.name:
            yield prefix + entry.name, entry.callback


def reads_files(callback) -> bool:
    """Whether one of the project's views reads uploaded files (Django's admin has no file field here)."""
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None) or inspect.unwrap(callback)
    if view.__module__.split(".")[0] in ("django", "rest_framework", "drf_spectacular"):
        return False
    try:
        return "request.FILES" in inspect.getsource(view)
    except (OSError, TypeError):
        return False


def test_every_route_in_the_table_exists():
    names = {name for name, _ in url_patterns()}
    assert names >= bodylimit.SMALL_ROUTES | bodylimit.UPLOAD_ROUTES | bodylimit.DEFAULT_CAP_FILE_ROUTES


def test_the_upload_routes_are_exactly_the_routes_whose_views_read_files():
    """Every view that reads files is in the table: with the upload cap, or held to the default one (prediction
    files, whose own limit is smaller); none is both."""
    readers = {name for name, callback in url_patterns() if reads_files(callback)}
    assert readers == bodylimit.UPLOAD_ROUTES | bodylimit.DEFAULT_CAP_FILE_ROUTES
    assert not bodylimit.UPLOAD_ROUTES & bodylimit.DEFAULT_CAP_FILE_ROUTES


# --- a 413 through the development server (wsgiref) ------------------------------------------------------------------

@pytest.fixture
def dev_server():
    """The project's WSGI application behind Django's development server (runserver's), on a free port."""
    from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
    from django.core.wsgi import get_wsgi_application

    server = WSGIServer(("127.0.0.1", 0), WSGIRequestHandler, ipv6=False)
    server.set_app(get_wsgi_application())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_21_mb_json_body_is_a_413_on_the_development_server(dev_server):
    """It was a 500: the refusal set `Connection: close`, a hop-by-hop header wsgiref refuses."""
    size = 21 * 1024 * 1024
    connection = http.client.HTTPConnection("127.0.0.1", dev_server, timeout=60)
    connection.request("POST", "/api/tasks/sentiment/examples/", body=b"[" + b" " * (size - 2) + b"]",
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    assert response.status == 413
    assert body == {"detail": f"The request body is too large ({size} bytes; the limit is {20 * 1024 * 1024} bytes).",
                    "code": "too_large"}


def test_the_compose_proxy_allows_large_bodies_on_the_upload_routes_only():
    """deploy/nginx.conf caps bodies as the app does: 601m only in locations that match the upload routes."""
    import re
    from pathlib import Path

    from django.urls import reverse

    from dynabench_site.bodylimit import UPLOAD_ROUTES

    conf = (Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf").read_text()
    server_cap = re.search(r"^    client_max_body_size (\S+);", conf, re.M).group(1)
    large = re.findall(r"location ~ (\S+) \{\s*client_max_body_size 601m;", conf)
    assert server_cap == "20m" and len(large) == 2
    for name in UPLOAD_ROUTES:
        path = reverse(name, kwargs={"slug": "sentiment"})
        assert any(re.match(pattern, path) for pattern in large), path
    for path in ["/api/auth/token/", "/api/tasks/sentiment/examples/", "/accounts/login/", "/tasks/sentiment/console/"]:
        assert not any(re.match(pattern, path) for pattern in large), path
