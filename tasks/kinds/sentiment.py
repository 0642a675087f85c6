from django.utils.translation import gettext_noop
from pydantic import Field

from tasks.kinds.classification import ClassificationConfig, ClassificationKind


class SentimentConfig(ClassificationConfig):
    labels: list[str] = Field(default_factory=lambda: ["positive", "negative", "neutral"], min_length=2)
    # A prompt sentence is shown for inspiration (as in DynaSent round 2) but not fed to the model.
    context_fields: list[str] = Field(default_factory=lambda: ["prompt"])
    model_context_fields: list[str] | None = Field(default_factory=list)
    input_fields: list[str] = Field(default_factory=lambda: ["text"], min_length=1)
    instructions: str = (
        "Write a sentence whose sentiment is clear to a person but that the model gets wrong. "
        "The prompt is there for inspiration; you do not have to use it."
    )


class SentimentKind(ClassificationKind):
    name = "sentiment"
    label = gettext_noop("Sentiment analysis")
    config_class = SentimentConfig
