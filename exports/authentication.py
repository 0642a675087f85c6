"""Read-only token authentication: `Authorization: Bearer dro_…` may read, never write."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

from exports.models import TOKEN_PREFIX, ReadOnlyToken, hash_key

KEYWORD = "Bearer"


class ReadOnlyTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates read-only tokens; refuses (403) any unsafe method made with one.

    Headers with another keyword (Token, Basic) or a key without the `dro_` prefix are left to the
    other authentication classes.
    """

    def authenticate(self, request):
        raw = self._raw_key(request)
        if raw is None:
            return None
        token = ReadOnlyToken.objects.active().select_related("user").filter(key_hash=hash_key(raw)).first()
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked read-only token.")
        if request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied("A read-only token may only read (GET, HEAD, OPTIONS).")
        ReadOnlyToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user, token

    def authenticate_header(self, request) -> str:
        return KEYWORD

    @staticmethod
    def _raw_key(request) -> str | None:
        parts = authentication.get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() != KEYWORD.lower().encode():
            return None
        raw = parts[1].decode(errors="replace")
        return raw if raw.startswith(TOKEN_PREFIX) else None
