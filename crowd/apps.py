from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"

    def ready(self) -> None:
        from crowd import badges, demo
        from tasks import badges as shown_badges
        from tasks.signals import demo_task_loaded

        # The leaderboards (validation, rounds) show badges; they sit below us, so we provide them.
        shown_badges.provide(badges.by_username)
        demo_task_loaded.connect(demo.load_quizzes, dispatch_uid="crowd.demo_quizzes")
