"""Read-only tokens move into the accounts app's API tokens (one model, one expiry rule, one "My tokens" page).

Each existing read-only token is copied with its key hash (its key keeps working) and given an expiry of
TOKEN_TTL_DAYS from this migration: tokens that never expired before do from now on. `ReadOnlyToken`
stays as a proxy of `accounts.ApiToken` limited to read access.
"""

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone


def copy_tokens(apps, schema_editor):
    old = apps.get_model("exports", "ReadOnlyToken")
    new = apps.get_model("accounts", "ApiToken")
    expires = timezone.now() + timedelta(days=settings.TOKEN_TTL_DAYS)
    there = set(new.objects.values_list("key_hash", flat=True))
    new.objects.bulk_create(
        new(user_id=t.user_id, name=t.name, access="read", key_hash=t.key_hash, hint=t.hint, created_at=t.created_at,
            expires_at=expires, last_used_at=t.last_used_at, revoked_at=t.revoked_at)
        for t in old.objects.exclude(key_hash__in=there)
    )


def copy_back(apps, schema_editor):
    old = apps.get_model("exports", "ReadOnlyToken")
    new = apps.get_model("accounts", "ApiToken")
    moved = new.objects.filter(access="read")
    old.objects.bulk_create(
        old(user_id=t.user_id, name=t.name, key_hash=t.key_hash, hint=t.hint, last_used_at=t.last_used_at,
            revoked_at=t.revoked_at)
        for t in moved
    )
    moved.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("exports", "0001_initial"),
        ("accounts", "0002_api_tokens"),
    ]

    operations = [
        migrations.RunPython(copy_tokens, copy_back),
        migrations.DeleteModel(name="ReadOnlyToken"),
        migrations.CreateModel(
            name="ReadOnlyToken",
            fields=[],
            options={"proxy": True, "indexes": [], "constraints": []},
            bases=("accounts.apitoken",),
        ),
    ]
