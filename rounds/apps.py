import logging

from django.apps import AppConfig


def _evaluate_deployed(sender, round, versions, **kwargs) -> None:  # noqa: A002 - the signal's argument name
    from rounds.evaluation import evaluate_round_ensemble
    from zoo.types import BackendError

    try:
        evaluate_round_ensemble(round, log=lambda _m: None)
    except BackendError as exc:  # TorchServe not up yet: deploying must not fail; the scores come with the next run
        logging.getLogger(__name__).warning("round %s deployed, but its ensemble could not be scored for the "
                                            "leaderboard yet: %s", round, exc)


class RoundsConfig(AppConfig):
    name = "rounds"

    def ready(self) -> None:
        from modelzoo.signals import ensemble_deployed

        # An ensemble deployed outside the pipeline (demo models, train_model --deploy) is scored at once, so
        # the leaderboard ranks the in-loop models from the moment their round opens.
        ensemble_deployed.connect(_evaluate_deployed, dispatch_uid="rounds-evaluate-deployed-ensemble")

        from dynabench_site import health
        from rounds.health import stuck_pipelines, stuck_uploads

        # /healthz's stuck work: pipeline runs and uploads, by the rules of the console (rounds.health).
        health.register_stuck("pipelines", stuck_pipelines, order=20)
        health.register_stuck("uploads_evaluating_too_long", stuck_uploads, order=30)

        from exports.records import register_data_map_source
        from rounds.datamaps import regions_by_example

        # The round dataset export's data_map_region column: the newest data map of a retraining (rounds.datamaps).
        register_data_map_source(regions_by_example)
