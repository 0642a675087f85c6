"""Domain errors: what a service raises when a request cannot be carried out, with the HTTP status it means.

Services raise these (or subclasses of their own); the API's central exception handler
(`dynabench_site.api.exception_handler`) and the page middleware turn them into a 4xx/5xx answer with a
message that says what was wrong, so views need no try/except of their own. This module imports nothing
from the apps: every layer may use it.
"""

from __future__ import annotations


class DomainError(Exception):
    """A request the current state or input does not allow. `field` names the offending part, if any."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

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
