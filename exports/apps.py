from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"

    def ready(self) -> None:
        from exports import schema  # noqa: F401  (registers the OpenAPI authentication extension)
