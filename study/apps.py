from django.apps import AppConfig


class StudyConfig(AppConfig):
    name = "study"
    verbose_name = "Studies"

    def ready(self) -> None:
        from study import gate
        from tasks import gates

        # Consent, the pre-survey (eligibility) and the arm come before any work on the task (tasks.gates).
        gates.register("study", gate.pending)

        # The owner's translations of the task's texts, for the task pages below the study app (tasks.texts).
        from study import texts
        from tasks import texts as task_texts

        task_texts.register("study", texts.text)

        # An arm's own target ensemble is served again when the model server starts (modelzoo.registration).
        from modelzoo import registration
        from study import arms

        registration.provide_ensembles(arms.served_ensembles)
