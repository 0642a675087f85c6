from django.utils.translation import gettext_noop
from pydantic import Field

from tasks.kinds.classification import ClassificationConfig, ClassificationKind


class HateSpeechConfig(ClassificationConfig):
    labels: list[str] = Field(default_factory=lambda: ["hateful", "not hateful"], min_length=2)
    context_fields: list[str] = Field(default_factory=lambda: ["prompt"])
    model_context_fields: list[str] | None = Field(default_factory=list)
    input_fields: list[str] = Field(default_factory=lambda: ["text"], min_length=1)
    instructions: str = (
        "Write a statement that a person would label correctly but the model misclassifies: for example "
        "hateful content phrased without slurs, or harmless text that uses words the model finds alarming."
    )


class HateSpeechKind(ClassificationKind):
    name = "hate_speech"
    label = gettext_noop("Hate speech detection")
    config_class = HateSpeechConfig
