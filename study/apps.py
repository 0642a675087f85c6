from django.apps import AppConfig


class StudyConfig(AppConfig):
    name = "study"
    verbose_name = "Studies"

    def ready(self) -> None:
        from study import gate
        from tasks import gates

        # Consent, the pre-survey (eligibility) and the arm come before any work on the task (tasks.gates).
        gates.register("study", gate.pending)
