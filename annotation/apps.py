from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # The task API shows figures derived from examples; tasks cannot import annotation, so we provide them.
        from annotation.models import Example
        from tasks import figures

        figures.provide(
            task_figures=lambda task: Example.objects.filter(round__task=task).figures(),
            round_figures=lambda task: Example.objects.filter(round__task=task).figures_by("round__number"),
            empty=Example.objects.none().figures(),
        )
