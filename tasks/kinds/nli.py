from pydantic import Field

from tasks.kinds.classification import ClassificationConfig, ClassificationKind


class NLIConfig(ClassificationConfig):
    labels: list[str] = Field(default_factory=lambda: ["entailment", "neutral", "contradiction"], min_length=2)
    context_fields: list[str] = Field(default_factory=lambda: ["premise"])
    input_fields: list[str] = Field(default_factory=lambda: ["hypothesis"], min_length=1)
    instructions: str = (
        "Read the premise, choose a relation (entailment, neutral or contradiction) and write a hypothesis "
        "that has that relation to the premise but that the model classifies wrongly."
    )


class NLIKind(ClassificationKind):
    name = "nli"
    label = "Natural language inference"
    config_class = NLIConfig
