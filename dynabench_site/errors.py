"""Domain errors: what a service raises when a request cannot be carried out, with the HTTP status it means.

Services raise these (or subclasses of their own); the API's central exception handler
(`dynabench_site.api.exception_handler`) and the page middleware turn them into a 4xx/5xx answer with a
message that says what was wrong, so views need no try/except of their own. This module imports nothing
from the apps: every layer may use it. The model library (`zoo`) imports nothing of the site: its serving
failure, `zoo.types.BackendError`, is answered as the `Unavailable` it means (`as_domain_error`).
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """A request the current state or input does not allow. `field` names the offending part, if any;
    `extra` holds more members of the error answer (e.g. ``{"job": 12}``, the run that is in the way)."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = dict(extra or {})

    def as_dict(self) -> dict[str, list[str]]:
        return {self.field or "non_field_errors": [self.message]}


class InvalidInput(DomainError):
    status_code = 400
    code = "invalid"


class NotPermitted(DomainError):
    status_code = 403
    code = "permission_denied"


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    """Well formed, but the state forbids it now (a closed round, an unfinished pipeline run)."""

    status_code = 409
    code = "conflict"


class Unavailable(DomainError):
    """A dependency (model server, broker) is down; trying again later can help."""

    status_code = 503
    code = "unavailable"
    retry_after: int | None = None  # seconds; sent as Retry-After when known


def as_domain_error(exc: BaseException) -> DomainError | None:
    """The domain error `exc` is or stands for, else None. A serving failure of the model library
    (`zoo.types.BackendError`) is an `Unavailable`: 503 with Retry-After when trying again later can help, else
    502 ("model_failed": the model server cannot answer it)."""
    if isinstance(exc, DomainError):
        return exc
    from zoo.types import BackendError

    if not isinstance(exc, BackendError):
        return None
    error = Unavailable(exc.message)
    error.status_code, error.code, error.retry_after = exc.status_code, exc.code, exc.retry_after
    return error
