"""API shapes of the rounds app (what the OpenAPI schema documents; the views build the payloads)."""

from __future__ import annotations

from rest_framework import serializers


class StartSerializer(serializers.Serializer):
    description = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")
    options = serializers.DictField(required=False, default=dict, help_text="pipeline options (rounds.options)")


class IncludeSerializer(serializers.Serializer):
    include = serializers.BooleanField(help_text="true: the model joins the next round's ensemble")


class StepSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    status = serializers.CharField()
    progress = serializers.FloatField()
    message = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    log = serializers.CharField(allow_blank=True)
    attempts = serializers.IntegerField()
    seconds = serializers.FloatField(allow_null=True)
    result = serializers.JSONField(allow_null=True)


class JobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    status = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    from_round = serializers.IntegerField(allow_null=True)
    to_round = serializers.IntegerField(allow_null=True)
    progress = serializers.FloatField(help_text="0 to 1")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    options = serializers.JSONField()
    stale = serializers.BooleanField(help_text="stuck: pending or running, but silent for longer than ROUNDS_PIPELINE_STALE_S")
    comparison = serializers.JSONField(allow_null=True, help_text="the new ensemble against the live one on every test set")
    decision = serializers.CharField(allow_blank=True, help_text="approved or discarded (a run awaiting approval)")
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    actions = serializers.DictField(child=serializers.BooleanField(), help_text="what an owner may do now")
    steps = StepSerializer(many=True)
    url = serializers.CharField()


class RoundsSerializer(serializers.Serializer):
    rounds = serializers.ListField(child=serializers.DictField(), help_text="per round: number, status and figures")


class DashboardSerializer(serializers.Serializer):
    rounds = serializers.ListField(child=serializers.DictField())
    round = serializers.IntegerField(allow_null=True, help_text="the round the time series is for")
    fooling_over_time = serializers.ListField(child=serializers.DictField())
    labels = serializers.DictField()
    ensembles = serializers.DictField()
    annotators = serializers.ListField(child=serializers.DictField())
    seeds = serializers.DictField(allow_null=True, help_text="the round's hardness seeding: score, seeds, a histogram "
                                  "of the seeds' and the rest of the pool's scores, and the fooling rate on seeded "
                                  "contexts and on the others (rounds.dashboard_seeds)")
    before_after = serializers.ListField(
        child=serializers.DictField(), help_text="per round change: the live and the retrained ensemble on every test set")


class LeaderboardSerializer(serializers.Serializer):
    metric = serializers.CharField()
    weights = serializers.DictField(child=serializers.FloatField(),
                                    help_text="the Dynascore weights the rows are ranked by (the caller's, else the owner's)")
    owner_weights = serializers.DictField(child=serializers.FloatField(), help_text="the owner's weights (the default)")
    viewer_weights = serializers.DictField(child=serializers.FloatField(), allow_null=True,
                                           help_text="the caller's weights from the query parameters, if any")
    predictions_only = serializers.BooleanField(help_text="whether a row was scored from a prediction file")
    rows = serializers.ListField(child=serializers.DictField(),
                                 help_text="one per model or prediction file: `rank`, `owner_rank`, `moved` (places up; "
                                           "negative: down), `dynascore`, figures per test set with 95 % intervals; a "
                                           "prediction file's row has `predictions_only` and no throughput or memory")
    columns = serializers.ListField(child=serializers.DictField())


class UploadSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    architecture = serializers.CharField(allow_blank=True)
    size_bytes = serializers.IntegerField()
    model_version = serializers.IntegerField(allow_null=True)
    in_next_ensemble = serializers.BooleanField()
    uploaded_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    stuck = serializers.BooleanField(help_text="evaluating for longer than ROUNDS_UPLOAD_STALE_S")
    queued_at = serializers.DateTimeField(allow_null=True)


class UploadListSerializer(serializers.Serializer):
    uploads = UploadSerializer(many=True)


class UploadRequestSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True)
    files = serializers.ListField(child=serializers.FileField(), help_text="config.json, *.safetensors, tokenizer files")
