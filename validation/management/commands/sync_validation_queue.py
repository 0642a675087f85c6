from django.core.management.base import BaseCommand, CommandError

from tasks.models import Task
from validation import queue


class Command(BaseCommand):
    help = "Rewrite the validation queue rows from the examples and their votes (after bulk imports)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--task", help="a task slug (default: every task)")

    def handle(self, *args, task: str | None = None, **options) -> None:
        target = None
        if task:
            target = Task.objects.filter(slug=task).first()
            if target is None:
                raise CommandError(f"no task with the slug {task!r}")
        done = queue.sync_queue(target)
        purged = queue.purge_expired()
        self.stdout.write(f"synced {done} queue rows; removed {purged} expired leases")
