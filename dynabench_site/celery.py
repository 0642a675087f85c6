import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")

app = Celery("dynabench_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
# "Task" means a Dynabench task here, so Celery jobs live in each app's jobs.py.
app.autodiscover_tasks(related_name="jobs")
