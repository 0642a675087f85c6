"""API tokens: issuing, listing, revoking, and the one check that decides whether a key may be used.

Keys look like `dyn_…` (full access) or `dro_…` (read only); only their SHA-256 is stored. Every token
expires TOKEN_TTL_DAYS after it is created, and its owner can revoke it at any time. A token never makes
another one: new tokens come from a password (POST /api/auth/token/) or a signed-in page ("My tokens"),
so a stolen token cannot outlive its expiry by minting successors.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import ApiToken
from dynabench_site import access_cache, throttles
from dynabench_site.errors import DomainError, InvalidInput, NotFound
from dynabench_site.text import check_optional_text

PREFIXES = {ApiToken.Access.FULL: "dyn_", ApiToken.Access.READ: "dro_"}
MAX_NAME_CHARS = 100
# Recording every use would write on every API request; once a minute is enough to tell a token is in use.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TokenRefused(DomainError):
    """A key that does not authenticate (HTTP 401): unknown, expired or revoked, saying which."""

    status_code = 401
    code = "authentication_failed"


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def looks_like_key(raw: str) -> bool:
    return raw.startswith(tuple(PREFIXES.values()))


def clean_name(name: object) -> str:
    if name is None:
        return ""
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InvalidInput(f"must be printable text of at most {MAX_NAME_CHARS} characters", field="name")
    return check_optional_text(name, "name").strip()


def issue(user, name: object = "", access: str = ApiToken.Access.FULL, *, counted: bool = True) -> tuple[ApiToken, str]:
    """A new token of `user` and its key (shown once). Counted against TOKEN_RATE unless `counted` is false
    (a management command run by an operator)."""
    if access not in ApiToken.Access.values:
        raise InvalidInput(f"must be one of {', '.join(ApiToken.Access.values)}", field="access")
    clean = clean_name(name)
    if counted:
        throttles.check_token(user)
    raw = PREFIXES[access] + secrets.token_urlsafe(32)
    now = timezone.now()
    token = ApiToken.objects.create(
        user=user, name=clean, access=access, key_hash=hash_key(raw), hint=raw[:10], created_at=now,
        expires_at=now + timedelta(days=settings.TOKEN_TTL_DAYS),
    )
    return token, raw


def owned(user, access: str | None = None) -> QuerySet[ApiToken]:
    tokens = ApiToken.objects.filter(user=user)
    return tokens.filter(access=access) if access else tokens


def revoke(user, token_id: int, access: str | None = None) -> ApiToken:
    """Revoke one of `user`'s tokens (a token of someone else does not exist for them). Idempotent."""
    token = owned(user, access).filter(pk=token_id).first()
    if token is None:
        raise NotFound("You have no token with this id.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def authenticate(raw: str) -> ApiToken:
    """The token a key belongs to, if it may be used now; else TokenRefused saying why. The token and its user come
    from the access cache (dynabench_site.access_cache) when a request read them lately and nothing changed since:
    a revocation, a new token or a change of the user replaces the access generation, so it shows on the next
    request."""
    if not looks_like_key(raw):
        raise TokenRefused("Invalid token.")
    name = access_cache.key("token", hash_key(raw))
    token, generation = access_cache.lookup(name)
    if token is access_cache.MISSING:
        token = ApiToken.objects.select_related("user").filter(key_hash=hash_key(raw)).first()
        access_cache.put(name, token, generation)
    if token is None or not token.user.is_active:
        raise TokenRefused("Invalid token.")
    if token.revoked_at is not None:
        raise TokenRefused(f"This token was revoked on {token.revoked_at:%Y-%m-%d}; create a new one.")
    now = timezone.now()
    if token.expires_at <= now:
        raise TokenRefused(
            f"This token expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; create a new one (tokens last "
            f"{settings.TOKEN_TTL_DAYS} days)."
        )
    if token.last_used_at is None or token.last_used_at < now - LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # no signal: the cached token stays valid
        token.last_used_at = now
        access_cache.put(name, token, generation)
    return token
