from django.apps import AppConfig


class ValidationConfig(AppConfig):
    name = "validation"

    def ready(self) -> None:
        from annotation import feedback
        from validation import queue, services, signals  # noqa: F401  (signals connects the queue-row hook)

        # Writers see validators' reasons on "My examples"; annotation cannot import validation, so we provide them.
        feedback.provide_vote_reasons(services.vote_reasons)
        # ... and what the queue will do with each example, by the queue's own rule (validation.queue.outlook).
        feedback.provide_outlook(queue.outlook)
