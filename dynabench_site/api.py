"""API-wide pieces: the error format and the token endpoint."""

from __future__ import annotations

from rest_framework.views import exception_handler as drf_exception_handler

from tasks.kinds import InputError


def exception_handler(exc, context):
    """DRF's handler, plus InputError (a task kind's verdict on bad input) as a 400 naming the field."""
    if isinstance(exc, InputError):
        from rest_framework.exceptions import ValidationError

        exc = ValidationError(exc.as_dict())
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
