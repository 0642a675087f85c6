"""API-wide pieces: the error format.

Every error answer is `{"detail": "one readable sentence", "errors": {field: [message, ...]}}`, with
`errors` when fields are to blame. A domain error (`dynabench_site.errors.DomainError`, raised by a
service) answers its own status with its `code`, any `extra` members (e.g. `job`), and Retry-After when
it knows one, so API views need no try/except of their own.
"""

from __future__ import annotations

import logging

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from dynabench_site.errors import DomainError, as_domain_error

log = logging.getLogger(__name__)


def error_text(exc: DomainError) -> str:
    """The one sentence a person reads: the message, after the field it is about."""
    return f"{exc.field}: {exc.message}" if exc.field else exc.message


def domain_error_response(exc: DomainError) -> Response:
    if exc.status_code >= 500:
        log.error("%s answered %s: %s", type(exc).__name__, exc.status_code, exc.message)
    data = {"detail": error_text(exc), "code": exc.code}
    if exc.field:
        data["errors"] = exc.as_dict()
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
        # Field errors: add one readable sentence next to the per-field messages.
        parts = []
        for field, messages in response.data.items():
            text = messages if isinstance(messages, str) else "; ".join(str(m) for m in _flatten(messages))
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        response.data = {"detail": " ".join(parts), "errors": response.data}
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
