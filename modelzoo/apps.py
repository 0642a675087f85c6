from django.apps import AppConfig


class ModelzooConfig(AppConfig):
    name = "modelzoo"

    def ready(self) -> None:
        from modelzoo.registration import on_ensemble_deployed
        from modelzoo.signals import ensemble_deployed

        # A newly deployed ensemble is registered on TorchServe at once (when TorchServe is the backend).
        ensemble_deployed.connect(on_ensemble_deployed, dispatch_uid="modelzoo-register-deployed-ensemble")

        # A process that scores (runserver, a Celery worker) loads and warms the open rounds' ensembles in the
        # background when it starts and whenever another process deploys one (modelzoo.warmup).
        from modelzoo import warmup

        warmup.start_if_serving()

        from dynabench_site import health
        from modelzoo.health import check_models

        # Nothing can be scored without the model backend: the site is down unless it answers (degraded at worst).
        health.register("models", check_models, order=50, label="Model server", keeps_up=(health.OK, health.DEGRADED))
