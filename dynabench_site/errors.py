"""Domain errors: what a service raises when a request cannot be carried out, with the HTTP status it means.

Services raise these (or subclasses of their own); the API's central exception handler
(`dynabench_site.api.exception_handler`) and the page middleware turn them into a 4xx/5xx answer with a
message that says what was wrong, so views need no try/except of their own. This module imports nothing
from the apps: every layer may use it.
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
