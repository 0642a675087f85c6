"""API-wide pieces: the error format.

Every error answer is `{"detail": "one readable sentence", "errors": {field: [message, ...]}}`, with
`errors` when fields are to blame. A domain error (`dynabench_site.errors.DomainError`, raised by a
service) answers its own status with its `code`, any `extra` members (e.g. `job`), and Retry-After when
it knows one, so API views need no try/except of their own.

What a request sent is echoed back bounded (`bounded`): a field name is cut to MAX_NAME characters, a message
to MAX_MESSAGE, at most MAX_FIELDS fields (or messages of one field) are listed, then how many more there
were, and `detail` is cut to MAX_DETAIL. An unknown field name a client made a megabyte long is never echoed whole (twice: as the key of `errors`
and in `detail`).
"""

from __future__ import annotations

import logging
from typing import Any

from rest_framework.exceptions import ErrorDetail
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from dynabench_site.errors import DomainError, as_domain_error

log = logging.getLogger(__name__)
MAX_NAME = 100  # characters of a field name echoed back
MAX_MESSAGE = 1000  # characters of one message
MAX_FIELDS = 20  # fields (and messages per field) listed
MAX_DETAIL = 2000  # characters of the one sentence that sums the field errors up


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with an ellipsis (an ErrorDetail keeps its code)."""
    if len(text) <= limit:
        return text
    short = text[: limit - 1] + "…"
    return ErrorDetail(short, code=text.code) if isinstance(text, ErrorDetail) else short


def bounded(errors: Any) -> Any:
    """Field errors as DRF or a domain error gives them, with names, messages and counts bounded."""
    if isinstance(errors, dict):
        items = list(errors.items())
        out: dict[str, Any] = {clip(str(name), MAX_NAME): bounded(value) for name, value in items[:MAX_FIELDS]}
        if len(items) > MAX_FIELDS:
            out["more_fields"] = [f"{len(items) - MAX_FIELDS} more fields were refused and are not listed"]
        return out
    if isinstance(errors, list):
        listed = [bounded(value) for value in errors[:MAX_FIELDS]]
        if len(errors) > MAX_FIELDS:
            listed.append(f"{len(errors) - MAX_FIELDS} more messages are not listed")
        return listed
    if isinstance(errors, str):
        return clip(errors, MAX_MESSAGE)
    return errors


def error_text(exc: DomainError) -> str:
    """The one sentence a person reads: the message, after the field it is about."""
    message = clip(exc.message, MAX_MESSAGE)
    return f"{clip(exc.field, MAX_NAME)}: {message}" if exc.field else message


def domain_error_response(exc: DomainError) -> Response:
    if exc.status_code >= 500:
        log.error("%s answered %s: %s", type(exc).__name__, exc.status_code, exc.message)
    data = {"detail": error_text(exc), "code": exc.code}
    if exc.field:
        data["errors"] = bounded(exc.as_dict())
    data.update(exc.extra)
    headers = {"Retry-After": str(exc.retry_after)} if getattr(exc, "retry_after", None) else None
    set_rollback()
    return Response(data, status=exc.status_code, headers=headers)


def exception_handler(exc, context):
    """DRF's handler, plus domain errors, and one readable `detail` next to per-field messages."""
    domain = as_domain_error(exc)
    if domain is not None:
        return domain_error_response(domain)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" not in response.data:
        # Field errors: add one readable sentence next to the per-field messages (both bounded).
        response.data = bounded(response.data)
        parts = []
        for field, messages in response.data.items():
            text = messages if isinstance(messages, str) else "; ".join(str(m) for m in _flatten(messages))
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        response.data = {"detail": clip(" ".join(parts), MAX_DETAIL), "errors": response.data}
    return response


def _flatten(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            for message in _flatten(inner):
                yield f"{key}: {message}"
    elif isinstance(value, list):
        for inner in value:
            yield from _flatten(inner)
    else:
        yield value
