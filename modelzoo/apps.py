from django.apps import AppConfig


class ModelzooConfig(AppConfig):
    name = "modelzoo"

    def ready(self) -> None:
        from modelzoo.registration import on_ensemble_deployed
        from modelzoo.signals import ensemble_deployed

        # A newly deployed ensemble is registered on TorchServe at once (when TorchServe is the backend).
        ensemble_deployed.connect(on_ensemble_deployed, dispatch_uid="modelzoo-register-deployed-ensemble")

        from dynabench_site import health
        from modelzoo.health import check_models

        # Nothing can be scored without the model backend: the site is down unless it answers (degraded at worst).
        health.register("models", check_models, order=50, label="Model server", keeps_up=(health.OK, health.DEGRADED))
