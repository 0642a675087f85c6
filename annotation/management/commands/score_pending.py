from django.core.management.base import BaseCommand

from annotation.jobs import sweep_pending


class Command(BaseCommand):
    help = "Re-enqueue scoring of pending examples whose retry is due (after a model-server outage)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--limit", type=int, default=500)
        parser.add_argument("--include-failed", action="store_true", help="also retry examples marked failed")

    def handle(self, *args, limit: int, include_failed: bool, **options) -> None:
        count = sweep_pending(limit=limit, include_failed=include_failed)
        self.stdout.write(f"re-enqueued {count} example(s)")
