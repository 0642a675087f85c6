"""Recording an account's origin, and the accounts linked to one (the sybil rule's data).

Two accounts are *linked* when they share a sign-up address or an external worker id. Validation asks
`linked_user_ids` and never lets a validator vote on what a linked account wrote.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import HttpRequest

from accounts.models import Account


def client_ip(request: HttpRequest) -> str | None:
    """The address the request came from. Only REMOTE_ADDR: a forwarded-for header is whatever the client
    wrote (behind a trusted proxy, the proxy must set REMOTE_ADDR, e.g. with a real-IP module)."""
    return request.META.get("REMOTE_ADDR") or None


def record_signup(user, ip: str | None) -> Account:
    account, _ = Account.objects.update_or_create(
        user=user, defaults={"origin": Account.Origin.SIGNUP, "signup_ip": ip}
    )
    return account


def external_account(source: str, worker_id: str) -> Account | None:
    return Account.objects.select_related("user").filter(
        external_source=source, external_worker_id=worker_id
    ).first()


def record_external(user, source: str, worker_id: str) -> Account:
    return Account.objects.create(
        user=user, origin=Account.Origin.EXTERNAL, external_source=source, external_worker_id=worker_id
    )


def origin_of(user) -> Account | None:
    return Account.objects.filter(user_id=user.pk).first()


def linked_user_ids(user, *, by_ip: bool = True) -> QuerySet:
    """Ids of the other accounts sharing `user`'s sign-up address (when `by_ip`) or external worker id:
    a subquery, so callers can `exclude(author__in=...)` in one statement."""
    mine = origin_of(user)
    if mine is None:
        return Account.objects.none().values("user")
    same = Q(pk__in=[])
    if by_ip and mine.signup_ip:
        same |= Q(signup_ip=mine.signup_ip)
    if mine.external_worker_id:
        same |= Q(external_worker_id=mine.external_worker_id)
    return Account.objects.filter(same).exclude(user_id=user.pk).values("user")


def are_linked(user, other_id: int, *, by_ip: bool = True) -> bool:
    return linked_user_ids(user, by_ip=by_ip).filter(user=other_id).exists()
