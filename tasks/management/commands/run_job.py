"""Run one background job in the foreground, by its Celery name (what `dynabench_site.jobs` starts in a
subprocess in the embedded default). Each argument is a JSON value: `run_job rounds.run_pipeline 12`."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from dynabench_site import jobs


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # a plain word, e.g. a score name


class Command(BaseCommand):
    help = "Run a background job here and now: `run_job <job name> [args…]`, e.g. `run_job rounds.run_pipeline 12`."

    def add_arguments(self, parser) -> None:
        parser.add_argument("job", help="the job's Celery name, e.g. rounds.run_pipeline or rounds.evaluate_upload")
        parser.add_argument("job_args", nargs="*", metavar="arg", help="the job's arguments, each a JSON value")

    def handle(self, *args, job: str, job_args: list[str], **options) -> None:
        try:
            result = jobs.run(job, [_value(a) for a in job_args])
        except KeyError as exc:
            raise CommandError(exc.args[0]) from None
        self.stdout.write(f"{job} {' '.join(job_args)}: finished ({result})")
