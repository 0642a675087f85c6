from django.utils.translation import gettext_noop
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
    label = gettext_noop("Natural language inference")
    config_class = NLIConfig
    # Training settings on top of the classification head's (lr 1e-4, the checkpoint with the fewest dev mistakes;
    # modelzoo.ensemble_training.default_recipe), for the demo's round-1 models and every round's retraining alike.
    # Sentence pairs need the whole encoder: every block of all-MiniLM-L6-v2 fine-tuned, one pass over SNLI dev cut
    # to 250 updates of 16 per member: the demo's 3 members reach SNLI test accuracy 0.726 in ≈ 500 CPU-s on one
    # thread. One member, 400 updates: 0.756 with every block, 0.732 with the top 3 (bench/bench_nli_demo.py,
    # docs/benchmarks/demo.md).
    recipe_defaults = {"top_layers": 6, "epochs": 1, "max_steps": 250}
