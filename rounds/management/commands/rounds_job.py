from __future__ import annotations

from django.core.management.base import BaseCommand

from rounds import runner


class Command(BaseCommand):
    help = "Run one rounds job in the foreground: `pipeline <run id>` or `evaluate_upload <upload id>`."

    def add_arguments(self, parser) -> None:
        parser.add_argument("job", choices=sorted(runner.jobs()))
        parser.add_argument("object_id", type=int)

    def handle(self, *args, job: str, object_id: int, **options) -> None:
        runner.run_job(job, object_id)
        self.stdout.write(f"{job} {object_id}: finished")
