"""Request bodies are capped before they are written anywhere, with a cap chosen per route.

The cap of a request is decided here, in one place (`cap_for`), from its route and nothing it sent in its
body:

- the sign-in, sign-up, token and vote routes (`SMALL_ROUTES`): SMALL_BODY_MAX_BYTES (16 KB);
- the upload routes (`UPLOAD_ROUTES`: the model upload page and API, the data import page), for a multipart
  body from a signed-in user: ROUNDS_UPLOAD_MAX_MB plus 1 MB of form fields and boundaries;
- anything else, multipart included (the prediction-file routes, `DEFAULT_CAP_FILE_ROUTES`, whose files are
  smaller), and every anonymous request: DATA_UPLOAD_MAX_MEMORY_SIZE (20 MB).

Three guards apply it:

- `BodyLimitMiddleware` refuses a request whose declared length (CONTENT_LENGTH) is over the cap, before
  anything reads its body (its `process_view` runs once the route is resolved and the session's user is
  known, and before the CSRF check reads a form): 413 with a message (JSON under /api/, the error page
  elsewhere). An API request carrying an `Authorization` header is given its route's cap here: DRF checks
  the token before the view reads a byte, and the upload handler below then holds an unknown one to the
  default cap;
- `CappedUploadHandler`, first of FILE_UPLOAD_HANDLERS, decides again when a multipart body starts to be
  read (by then the user is known, token users included) and counts the bytes as they arrive (a body may
  lie about its length, or not declare one): it stops the upload at the cap, the files read so far are
  closed and deleted, the request is marked, and the view refuses it (`refusal`, `check`);
- `dynabench_site.parsers.BoundedJSONParser` reads at most the route's cap of a JSON body.

No `Connection: close` on a refusal: WSGI forbids hop-by-hop headers (wsgiref, behind runserver, raised
AssertionError, a 500) and gunicorn drops them; gunicorn closes a connection whose unread body is over
64 KB by itself, and the dev server reads the rest of the body and keeps the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.datastructures import MultiValueDict

from dynabench_site.errors import DomainError

MB = 1024 * 1024
FORM_SLACK = MB  # room for the form's other fields and the multipart boundaries
ATTRIBUTE = "body_limit_refusal"

# Routes (URL names) whose bodies are a few fields: sign-in, sign-up, tokens, votes.
SMALL_ROUTES = frozenset({
    "login", "admin-login", "signup", "logout",
    "api-token", "api-token-list", "api-token-detail", "accounts-tokens", "accounts-token-revoke",
    "api-example-validations", "validation-expert-resolve",
})
# Routes whose views read uploaded files (request.FILES): the only ones where the upload cap applies.
UPLOAD_ROUTES = frozenset({"api-task-models", "rounds-model-upload", "tasks-import"})
# Routes whose views read a file that stays under the default cap (DATA_UPLOAD_MAX_MEMORY_SIZE): prediction files,
# refused above rounds.predictions.MAX_BYTES (10 MB) by the view. No larger cap, here or in deploy/nginx.conf.
DEFAULT_CAP_FILE_ROUTES = frozenset({"api-task-predictions", "rounds-predictions-upload"})


class BodyTooLarge(DomainError):
    status_code = 413
    code = "too_large"


@dataclass(frozen=True)
class Cap:
    """A body cap in bytes (None: no cap, as DATA_UPLOAD_MAX_MEMORY_SIZE = None means) and whether it is
    the upload cap (its message speaks of MB and of nothing stored)."""

    limit: int | None
    upload: bool = False

    def message(self, size: int | None) -> str:
        """What a refused body is told: its size when known, and the limit."""
        if self.upload:
            said = f"{size / MB:.1f} MB; " if size is not None else ""
            return f"The upload is too large ({said}the limit is {settings.ROUNDS_UPLOAD_MAX_MB} MB). Nothing was stored."
        said = f"{size} bytes; " if size is not None else ""
        return f"The request body is too large ({said}the limit is {self.limit} bytes)."


def upload_cap() -> int:
    return settings.ROUNDS_UPLOAD_MAX_MB * MB + FORM_SLACK


def route_name(request: HttpRequest) -> str | None:
    """The URL name of the request's route (resolved from its path when the handler has not yet)."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return None
    return match.view_name


def signed_in(request: HttpRequest, token_header_counts: bool = False) -> bool:
    """Whether the request's user is signed in (by the session, or by a token DRF has already checked);
    with `token_header_counts`, an API request that carries an Authorization header counts too."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return True
    return token_header_counts and request.path.startswith("/api/") and "HTTP_AUTHORIZATION" in request.META


def cap_for(request: HttpRequest | None, *, multipart: bool, token_header_counts: bool = False) -> Cap:
    """The body cap of this request: by route, and the upload cap only for a signed-in multipart upload."""
    name = route_name(request) if request is not None else None
    if name in SMALL_ROUTES:
        return Cap(settings.SMALL_BODY_MAX_BYTES)
    if multipart and name in UPLOAD_ROUTES and signed_in(request, token_header_counts):
        return Cap(upload_cap(), upload=True)
    return Cap(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def declared_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


def is_multipart(request: HttpRequest) -> bool:
    return request.content_type == "multipart/form-data"


class BodyLimitMiddleware:
    """Refuses a body declared larger than its route's cap, before anything reads it (place it before CSRF:
    its process_view runs first)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        length = declared_length(request)
        if not length:
            return None
        cap = cap_for(request, multipart=is_multipart(request), token_header_counts=True)
        if cap.limit is not None and length > cap.limit:
            return refuse(request, cap.message(length))
        return None


def refuse(request: HttpRequest, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "code": BodyTooLarge.code}, status=413)
    return render(request, "error.html", {"status": 413, "message": message}, status=413)


class CappedUploadHandler(FileUploadHandler):
    """Counts a multipart body's bytes against the route's cap and stops the upload there (nothing past it
    is written)."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.cap, self.received = cap_for(self.request, multipart=True), 0
        if content_length and self.cap.limit is not None and content_length > self.cap.limit:
            self._refuse(content_length)
            return QueryDict(), MultiValueDict()  # parse nothing (the middleware normally answered already)
        return None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.cap.limit is not None and self.received > self.cap.limit:
            self._refuse(None)
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int):
        return None  # the next handler (memory or temporary file) makes the file

    def _refuse(self, size: int | None) -> None:
        if self.request is not None:
            setattr(self.request, ATTRIBUTE, self.cap.message(size))


def refusal(request) -> str | None:
    """The message when this request's upload was stopped at the cap (read request.POST/FILES first)."""
    inner = getattr(request, "_request", request)  # a DRF Request wraps the Django one
    return getattr(inner, ATTRIBUTE, None)


def check(request) -> None:
    """Raise BodyTooLarge (413) when this request's upload was stopped at the cap."""
    message = refusal(request)
    if message is not None:
        raise BodyTooLarge(message)
