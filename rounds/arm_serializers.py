"""API shape of the arms comparison (GET /api/tasks/<slug>/arms/comparison/; rounds.arms builds the payload)."""

from __future__ import annotations

from rest_framework import serializers


class ShareSerializer(serializers.Serializer):
    successes = serializers.IntegerField()
    n = serializers.IntegerField(help_text="the denominator: collected examples (MER, vMER) or decided ones (rejection)")
    value = serializers.FloatField(allow_null=True, help_text="successes / n; null when n is 0")
    low = serializers.FloatField(allow_null=True, help_text="95 % Wilson interval, lower bound")
    high = serializers.FloatField(allow_null=True, help_text="95 % Wilson interval, upper bound")


class TimesSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="examples with a recorded time")
    median = serializers.FloatField(allow_null=True, help_text="seconds")
    low = serializers.FloatField(allow_null=True, help_text="95 % bootstrap interval of the median, lower bound")
    high = serializers.FloatField(allow_null=True, help_text="95 % bootstrap interval of the median, upper bound")
    mean = serializers.FloatField(allow_null=True, help_text="seconds")


class ArmRowSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    model_in_loop = serializers.BooleanField()
    assistant = serializers.BooleanField()
    active = serializers.BooleanField()
    participants = serializers.IntegerField(help_text="people assigned to the arm (withdrawn ones left out)")
    writers = serializers.IntegerField(help_text="people with examples in the scope")
    examples = serializers.IntegerField(help_text="collected: not retracted")
    scored = serializers.IntegerField(help_text="examples with a verdict")
    fooled = serializers.IntegerField()
    verified_fooled = serializers.IntegerField()
    decided = serializers.IntegerField(help_text="verified + rejected + flagged by the validators")
    rejected = serializers.IntegerField()
    mer = ShareSerializer(help_text="fooled / collected")
    vmer = ShareSerializer(help_text="verified fooled / collected")
    rejection_rate = ShareSerializer(help_text="rejected / decided")
    time = TimesSerializer()


class ArmTestSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(choices=["mer", "vmer", "rejection_rate", "time"])
    label = serializers.CharField()
    test = serializers.CharField(help_text="Fisher's exact test, Pearson's chi-square test, Mann–Whitney U test or "
                                           "Kruskal–Wallis H test")
    arms = serializers.IntegerField(help_text="arms compared (those with examples)")
    statistic = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True, help_text="two-sided; null with too few examples")
    p_holm = serializers.FloatField(allow_null=True, help_text="Holm-adjusted across the metrics")
    reason = serializers.CharField(allow_blank=True, help_text="why there is no p-value, or a note on it")


class LeftOutSerializer(serializers.Serializer):
    examples = serializers.IntegerField()
    people = serializers.IntegerField()


class ArmsComparisonSerializer(serializers.Serializer):
    task = serializers.CharField()
    round = serializers.IntegerField(allow_null=True, help_text="null: all rounds")
    arms = ArmRowSerializer(many=True)
    compared_arms = serializers.ListField(child=serializers.CharField())
    tests = ArmTestSerializer(many=True)
    left_out = LeftOutSerializer(help_text="examples of people who withdrew consent, not counted")
    min_per_arm = serializers.IntegerField(help_text="rows every arm needs for a test")
    correction = serializers.CharField()
