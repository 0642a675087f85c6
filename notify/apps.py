from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "notify"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from notify import events, jobs  # noqa: F401 - the jobs register with Celery
        from tasks.signals import round_changed

        round_changed.connect(events.round_changed, dispatch_uid="notify-round-changed")
