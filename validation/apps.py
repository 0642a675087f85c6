from django.apps import AppConfig


class ValidationConfig(AppConfig):
    name = "validation"

    def ready(self) -> None:
        from validation import signals  # noqa: F401  (connects the queue-row hook)
