from django.apps import AppConfig


def _score_pending(sender, round, versions, **kwargs) -> None:  # noqa: A002 - the signal's argument name
    """Examples submitted while the round had no models were answered "pending": score them now."""
    from annotation.jobs import score_pending_of_round

    score_pending_of_round(round.pk)


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # The task API shows figures derived from examples; tasks cannot import annotation, so we provide them.
        from annotation.models import Example
        from modelzoo.signals import ensemble_deployed
        from tasks import figures

        ensemble_deployed.connect(_score_pending, dispatch_uid="annotation-score-pending-on-deploy")

        figures.provide(
            task_figures=lambda task: Example.objects.filter(round__task=task).figures(),
            round_figures=lambda task: Example.objects.filter(round__task=task).figures_by("round__number"),
            empty=Example.objects.none().figures(),
        )

        from annotation.scoring_health import stuck_scoring
        from dynabench_site import health

        # /healthz's stuck work: scoring, by the rule of the console's health page (annotation.scoring_health).
        health.register_stuck("scoring", stuck_scoring, order=10)
