"""Request bodies are capped before they are written anywhere.

Two guards, so that an oversized upload is refused before it fills the disk or the memory:

- `BodyLimitMiddleware` refuses a request whose declared length (CONTENT_LENGTH) is over the cap, before
  anything reads its body: 413 with a message (JSON under /api/, the error page elsewhere);
- `CappedUploadHandler`, first of FILE_UPLOAD_HANDLERS, counts the bytes of a multipart body as they
  arrive (a body may lie about its length, or not declare one) and stops the upload at the cap: the files
  read so far are closed and deleted, the request is marked, and the view refuses it (`refusal`, `check`).

Caps: a multipart body (the model and data uploads) may hold ROUNDS_UPLOAD_MAX_MB plus 1 MB of form
fields and boundaries; any other body DATA_UPLOAD_MAX_MEMORY_SIZE (JSON bodies are held to it by
`dynabench_site.parsers` too).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.utils.datastructures import MultiValueDict

from dynabench_site.errors import DomainError

MB = 1024 * 1024
FORM_SLACK = MB  # room for the form's other fields and the multipart boundaries
ATTRIBUTE = "body_limit_refusal"


class BodyTooLarge(DomainError):
    status_code = 413
    code = "too_large"


def upload_cap() -> int:
    return settings.ROUNDS_UPLOAD_MAX_MB * MB + FORM_SLACK


def cap_for(request: HttpRequest) -> int | None:
    if request.content_type == "multipart/form-data":
        return upload_cap()
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large_message(size: int | None, multipart: bool = True) -> str:
    """What a refused body is told: its size when known, and the limit."""
    said = f"{size / MB:.1f} MB; " if size is not None else ""
    if multipart:
        return f"The upload is too large ({said}the limit is {settings.ROUNDS_UPLOAD_MAX_MB} MB). Nothing was stored."
    said = f"{size} bytes; " if size is not None else ""
    return f"The request body is too large ({said}the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes)."


def declared_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


class BodyLimitMiddleware:
    """Refuses a body declared larger than its cap, before anything reads it (place it before CSRF)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length, cap = declared_length(request), cap_for(request)
        if length is not None and cap is not None and length > cap:
            return refuse(request, too_large_message(length, request.content_type == "multipart/form-data"))
        return self.get_response(request)


def refuse(request: HttpRequest, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message, "code": BodyTooLarge.code}, status=413)
    else:
        response = render(request, "error.html", {"status": 413, "message": message}, status=413)
    response["Connection"] = "close"  # the unread body is not worth reading
    return response


class CappedUploadHandler(FileUploadHandler):
    """Counts a multipart body's file bytes and stops the upload at the cap (nothing past it is written)."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.cap, self.received = upload_cap(), 0
        if content_length and content_length > self.cap:
            self._refuse(content_length)
            return QueryDict(), MultiValueDict()  # parse nothing (the middleware normally answered already)
        return None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > self.cap:
            self._refuse(None)
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int):
        return None  # the next handler (memory or temporary file) makes the file

    def _refuse(self, size: int | None) -> None:
        if self.request is not None:
            setattr(self.request, ATTRIBUTE, too_large_message(size))


def refusal(request) -> str | None:
    """The message when this request's upload was stopped at the cap (read request.POST/FILES first)."""
    inner = getattr(request, "_request", request)  # a DRF Request wraps the Django one
    return getattr(inner, ATTRIBUTE, None)


def check(request) -> None:
    """Raise BodyTooLarge (413) when this request's upload was stopped at the cap."""
    message = refusal(request)
    if message is not None:
        raise BodyTooLarge(message)
