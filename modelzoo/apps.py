from django.apps import AppConfig
from django.core import checks


@checks.register(checks.Tags.compatibility)
def check_device(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """ZOO_DEVICE asking for CUDA where torch sees none (or misspelt) stops `manage.py check`, runserver and
    migrate at start with the reason, never a silent CPU run (zoo.device)."""
    from zoo import device

    try:
        device.check()
    except device.DeviceError as exc:
        return [checks.Error(str(exc), hint="set ZOO_DEVICE=auto or cpu, or run where torch sees the GPU "
                                            "(docs/modelzoo.md, \"Putting your own model in the loop\")",
                             id="modelzoo.E001")]
    return []


class ModelzooConfig(AppConfig):
    name = "modelzoo"

    def ready(self) -> None:
        from modelzoo.encoders import validate_encoder
        from tasks.kinds import base as kinds_base

        # The settings forms check a task's encoder against what the site holds (allowed folders, the task's uploads).
        if validate_encoder not in kinds_base.ENCODER_CHECKS:
            kinds_base.ENCODER_CHECKS.append(validate_encoder)

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
