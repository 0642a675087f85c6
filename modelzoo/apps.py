from django.apps import AppConfig


class ModelzooConfig(AppConfig):
    name = "modelzoo"

    def ready(self) -> None:
        from modelzoo.registration import on_ensemble_deployed
        from modelzoo.signals import ensemble_deployed

        # A newly deployed ensemble is registered on TorchServe at once (when TorchServe is the backend).
        ensemble_deployed.connect(on_ensemble_deployed, dispatch_uid="modelzoo-register-deployed-ensemble")
