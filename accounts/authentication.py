"""API token authentication: `Authorization: Token <key>` (or `Bearer <key>`), for every kind of token.

A full-access token acts as its user; a read-only one (`dro_…`) may only read: any unsafe method made with
it is refused (403) before the view runs, so it can never lease a queue item, vote, or re-queue scoring.
Unknown, expired and revoked keys answer 401 with a message that says which. Token-authenticated calls
need no CSRF token (no browser sends this header by itself); session-authenticated calls do.
"""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

from accounts import tokens

KEYWORDS = (b"token", b"bearer")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None  # no token: another class (the session) may authenticate the request
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: use 'Authorization: Token <key>'.")
        try:
            token = tokens.authenticate(parts[1].decode())
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        except tokens.TokenRefused as refused:
            raise exceptions.AuthenticationFailed(refused.message) from None
        if token.read_only and request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied("A read-only token may only read (GET, HEAD, OPTIONS).")
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword
