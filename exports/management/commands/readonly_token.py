"""python manage.py readonly_token <username> [--name NAME]: issue a read-only API token (shown once)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from exports.models import ReadOnlyToken


class Command(BaseCommand):
    help = "Issue a read-only API token for a user; use it as 'Authorization: Bearer <key>'."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="script")

    def handle(self, *args, **options) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        _, raw = ReadOnlyToken.issue(user, options["name"])
        self.stdout.write(raw)
