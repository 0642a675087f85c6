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
        # A link worker who is ineligible, declines consent or withdraws goes back to the platform without a
        # completion code (the batch's screen-out address): the study's stop pages ask us for that address.
        from crowd import lifecycle
        from study import exits
        from tasks import gates

        exits.provide(lifecycle.exit_url)
        # A link worker whose assignment ended (returned, timed out, screened out) does no more work on the task.
        gates.register("crowd", lifecycle.ended_gate)
