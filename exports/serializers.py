from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from exports.formats import FORMATS
from exports.models import DatasetSnapshot


class SnapshotSerializer(serializers.ModelSerializer):
    round = serializers.IntegerField(source="round.number")
    published_by = serializers.SerializerMethodField()
    can_download = serializers.SerializerMethodField()
    bundle_url = serializers.SerializerMethodField()
    splits = serializers.ListField(child=serializers.CharField(), read_only=True,
                                   help_text="the splits that hold rows (the others have empty files)")

    class Meta:
        model = DatasetSnapshot
        fields = [
            "round",
            "version",
            "audience",
            "published_at",
            "published_by",
            "sha256",
            "content_sha256",
            "size_bytes",
            "formats",
            "counts",
            "validated",
            "splits",
            "include_excluded",
            "can_download",
            "bundle_url",
        ]

    def get_published_by(self, snapshot: DatasetSnapshot) -> str:
        # Owners are named on the task page already; the API only says whether a person published it.
        return "owner" if snapshot.published_by_id else "system"

    def get_can_download(self, snapshot: DatasetSnapshot) -> bool:
        return snapshot.pk in self.context.get("allowed", set())

    def get_bundle_url(self, snapshot: DatasetSnapshot) -> str | None:
        if not self.get_can_download(snapshot):
            return None
        path = reverse("exports-round-bundle", args=[snapshot.task.slug, snapshot.round.number])
        return self.context["request"].build_absolute_uri(f"{path}?version={snapshot.version}")


class SnapshotListSerializer(serializers.Serializer):
    task = serializers.CharField()
    count = serializers.IntegerField()
    can_use_live = serializers.BooleanField(help_text="you may download the live (unpublished) data")
    results = SnapshotSerializer(many=True)


class PublishSerializer(serializers.Serializer):
    audience = serializers.ChoiceField(DatasetSnapshot.Audience.choices, default=DatasetSnapshot.Audience.RESEARCHERS)
    formats = serializers.ListField(child=serializers.ChoiceField(sorted(FORMATS)), required=False, allow_empty=False)
    include_excluded = serializers.BooleanField(default=False)
