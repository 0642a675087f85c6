"""The study API's bodies (study.api): what a participant sends and reads, what an owner sets and downloads.

Request bodies refuse fields they do not know (400 naming them); the questions and answers themselves are checked by
`study.surveys` (400 naming `questions.<n>.<field>` or `answers.<key>` and why)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from study.models import Question, Study, Survey

KINDS = "the question's kind: " + ", ".join(Question.Kind.values)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not declare: a misspelt field is a 400, never silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(str(name)[:40] for name in set(data) - set(self.fields))
            if unknown:
                accepted = ", ".join(self.fields)
                raise serializers.ValidationError({name: [f"is not an accepted field; accepted: {accepted}"]
                                                   for name in unknown[:5]})
        return super().to_internal_value(data)


# --- the participant's side ----------------------------------------------------------------------------------


class ConsentStatusSerializer(serializers.Serializer):
    version = serializers.IntegerField(allow_null=True, help_text="the current version (null: no consent text)")
    agreed = serializers.BooleanField(help_text="you agreed to the current version and have not withdrawn")
    agreed_version = serializers.IntegerField(allow_null=True, help_text="the latest version you agreed to")
    agreed_at = serializers.DateTimeField(allow_null=True)
    withdrawn_at = serializers.DateTimeField(allow_null=True)
    language = serializers.CharField(allow_null=True, help_text="the language you read it in")


class ConsentSerializer(serializers.Serializer):
    task = serializers.CharField(help_text="the task's slug")
    version = serializers.IntegerField()
    text = serializers.CharField(help_text="Markdown, in your language where the owner translated it")
    published_at = serializers.DateTimeField()
    status = ConsentStatusSerializer()
    withdraw_url = serializers.CharField(help_text="POST {\"confirm\": true} here to withdraw")


class ConsentDecisionSerializer(StrictSerializer):
    version = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="the version you read")
    agree = serializers.BooleanField(help_text="true: you agree and take part; false: you decline (no work)")


class ConsentDecisionResultSerializer(serializers.Serializer):
    agreed = serializers.BooleanField()
    status = ConsentStatusSerializer()
    next_url = serializers.CharField(allow_null=True, help_text="the next step's page, if one is pending")
    exit_url = serializers.CharField(allow_null=True, help_text="declined: the way back to the crowd platform")


class WithdrawSerializer(StrictSerializer):
    confirm = serializers.BooleanField(help_text="must be true: withdrawal is final for this task's study")


class WithdrawResultSerializer(serializers.Serializer):
    withdrawn_at = serializers.DateTimeField()
    exit_url = serializers.CharField(allow_null=True)


class PublicQuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    kind = serializers.CharField(help_text=KINDS)
    text = serializers.CharField(help_text="in your language where translated")
    choices = serializers.ListField(child=serializers.CharField(), help_text="the values to send")
    labels = serializers.ListField(child=serializers.CharField(), help_text="the choices as shown (translated)")
    required = serializers.BooleanField()
    settings = serializers.DictField(help_text="number: min, max, integer; text: max_length")


class PublicSurveySerializer(serializers.Serializer):
    phase = serializers.ChoiceField(choices=Survey.Phase.choices)
    title = serializers.CharField(allow_blank=True)
    intro = serializers.CharField(allow_blank=True, help_text="Markdown")
    questions = PublicQuestionSerializer(many=True)
    answered = serializers.BooleanField()
    submitted_at = serializers.DateTimeField(allow_null=True)


class AnswersSerializer(StrictSerializer):
    answers = serializers.DictField(
        help_text="question key -> answer: a choice's value (single, Likert), a list of values (multiple), a "
                  "number, a text; optional questions may be left out")


class AnswerResultSerializer(serializers.Serializer):
    eligible = serializers.BooleanField()
    next_url = serializers.CharField(allow_null=True, help_text="the next step's page (ineligible: the stop page)")


# --- the owner's side ----------------------------------------------------------------------------------------


class StudySettingsSerializer(StrictSerializer):
    enabled = serializers.BooleanField(required=False)
    languages = serializers.ListField(child=serializers.CharField(max_length=10), required=False, max_length=20)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    assignment = serializers.ChoiceField(choices=Study.Assignment.choices, required=False)


class StudyFiguresSerializer(serializers.Serializer):
    consent_version = serializers.IntegerField(allow_null=True)
    consented = serializers.IntegerField(help_text="live records for the current version")
    consented_any = serializers.IntegerField(help_text="people who agreed to any version")
    withdrawn = serializers.IntegerField()
    participants = serializers.IntegerField()
    eligible = serializers.IntegerField()
    ineligible = serializers.IntegerField()
    per_version = serializers.ListField(child=serializers.DictField())
    surveys = serializers.ListField(child=serializers.DictField())


class StudySerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    seed = serializers.IntegerField()
    assignment = serializers.CharField()
    languages = serializers.ListField(child=serializers.CharField())
    figures = StudyFiguresSerializer()


class ConsentVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    text = serializers.CharField()
    created_at = serializers.DateTimeField()


class ConsentPublishSerializer(StrictSerializer):
    text = serializers.CharField(allow_blank=True, help_text="Markdown; a changed text is a new version",
                                 trim_whitespace=False)


class QuestionDefinitionSerializer(serializers.Serializer):
    key = serializers.CharField()
    kind = serializers.CharField(help_text=KINDS)
    text = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField(), required=False)
    required = serializers.BooleanField(required=False, default=True)
    settings = serializers.DictField(required=False, help_text="number: min, max, integer; text: max_length")
    eligibility = serializers.DictField(required=False, allow_null=True,
                                        help_text='{"allowed": [...]}, {"any_of": [...]} (multiple) or '
                                                  '{"min": x, "max": y} (number)')


class SurveyDefinitionSerializer(serializers.Serializer):
    phase = serializers.ChoiceField(choices=Survey.Phase.choices, read_only=True)
    title = serializers.CharField(allow_blank=True, required=False)
    intro = serializers.CharField(allow_blank=True, required=False)
    active = serializers.BooleanField(required=False)
    questions = QuestionDefinitionSerializer(many=True)


class ConsentRecordSerializer(serializers.Serializer):
    person_id = serializers.CharField(help_text="the pseudonymous id the task's datasets use")
    version = serializers.IntegerField()
    agreed_at = serializers.DateTimeField()
    withdrawn_at = serializers.DateTimeField(allow_null=True)
    language = serializers.CharField(allow_blank=True)


class ConsentRecordsSerializer(serializers.Serializer):
    records = ConsentRecordSerializer(many=True)


class AnswerRowSerializer(serializers.Serializer):
    person_id = serializers.CharField()
    language = serializers.CharField(allow_blank=True)
    submitted_at = serializers.DateTimeField()
    eligible = serializers.BooleanField()
    answers = serializers.DictField()


class SurveyAnswersSerializer(serializers.Serializer):
    phase = serializers.CharField()
    questions = serializers.ListField(child=serializers.CharField(), help_text="the answer columns (keys)")
    rows = AnswerRowSerializer(many=True)
    withdrawn_left_out = serializers.IntegerField(help_text="responses of people who withdrew, not listed")
