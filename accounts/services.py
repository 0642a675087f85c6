"""Recording an account's origin, and the accounts linked to one (the sybil rule's data).

Two accounts are *linked* when they share a sign-up address or an external worker id. Validation asks
`linked_user_ids` and never lets a validator vote on what a linked account wrote.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import HttpRequest

from accounts.models import Account
from dynabench_site import access_cache, throttles


def client_ip(request: HttpRequest) -> str | None:
    """The address the request came from, as the rate limits read it (`dynabench_site.throttles.client_address`:
    REMOTE_ADDR, or behind TRUSTED_PROXY_COUNT proxies the address the outermost one saw); None without a peer."""
    return throttles.client_address(request) if request.META.get("REMOTE_ADDR") else None


def record_signup(user, ip: str | None) -> Account:
    account, _ = Account.objects.update_or_create(
        user=user, defaults={"origin": Account.Origin.SIGNUP, "signup_ip": ip}
    )
    return account


def record_external(user, source: str, worker_id: str) -> Account:
    """Record that `user` was made for an external worker id. There is deliberately no lookup by worker id
    here: which account a worker link signs into is decided per task by `crowd.links.worker_account`, so
    one owner's batch can never reach an account made for another owner's task."""
    return Account.objects.create(
        user=user, origin=Account.Origin.EXTERNAL, external_source=source, external_worker_id=worker_id
    )


def origin_of(user) -> Account | None:
    return Account.objects.filter(user_id=user.pk).first()


def _link_keys(user) -> tuple[str | None, str]:
    """(sign-up address, external worker id) of `user`'s account, from the access cache when it holds them: a
    validator's every queue request and a writer's every submission ask (issue 27). An account's save or deletion
    makes the entry stale (accounts.signals)."""
    name = access_cache.key("origin", user.pk)
    found, generation = access_cache.lookup(name)
    if found is access_cache.MISSING:
        mine = Account.objects.filter(user_id=user.pk).values_list("signup_ip", "external_worker_id").first()
        found = (mine[0], mine[1] or "") if mine else (None, "")
        access_cache.put(name, found, generation)
    return found


def linked_user_ids(user, *, by_ip: bool = True) -> QuerySet:
    """Ids of the other accounts sharing `user`'s sign-up address (when `by_ip`) or external worker id:
    a subquery, so callers can `exclude(author__in=...)` in one statement."""
    signup_ip, worker_id = _link_keys(user)
    if not signup_ip and not worker_id:
        return Account.objects.none().values("user")
    same = Q(pk__in=[])
    if by_ip and signup_ip:
        same |= Q(signup_ip=signup_ip)
    if worker_id:
        same |= Q(external_worker_id=worker_id)
    return Account.objects.filter(same).exclude(user_id=user.pk).values("user")


def are_linked(user, other_id: int, *, by_ip: bool = True) -> bool:
    return linked_user_ids(user, by_ip=by_ip).filter(user=other_id).exists()
