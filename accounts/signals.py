"""Writes that change who a request is or what it may do replace the access generation
(dynabench_site.access_cache): a user's save or deletion (is_active, is_staff, …), a change of their groups (the
global roles), a token's creation, revocation or deletion, and an account's origin (the linked-accounts rule)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import m2m_changed, post_delete, post_save

from accounts.models import Account, ApiToken
from dynabench_site.access_cache import bump


def connect() -> None:
    user = get_user_model()
    for model in (user, ApiToken, Account):
        post_save.connect(bump, sender=model, dispatch_uid=f"access-save-{model._meta.label}")
        post_delete.connect(bump, sender=model, dispatch_uid=f"access-delete-{model._meta.label}")
    m2m_changed.connect(bump, sender=user.groups.through, dispatch_uid="access-user-groups")
