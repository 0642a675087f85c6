"""The interface of a model head: what the zoo needs to know about one kind of model output.

A spec is stateless; `zoo.heads.get_head(name)` returns the one instance. Who asks what:
- training: `check_labels`, `config_overrides`, `auto_model`, `features`, `target_keys`;
- prediction (runtime, in process and in TorchServe): `segments`, `truncation`, `needs_offsets`, `decode`;
- explanations: `target_of` (what to explain for a prediction), `ensemble_target` (the ensemble's answer from
  its members' predictions), `occlusion_target` (the probability word occlusion explains, and the tokens it must
  keep), `explained_logits` (which logits the gradient methods attribute);
- the zoo's services: `default_max_length`, `default_strategy` (ensemble aggregation), `labelled`;
- researchers' uploads: `architecture_suffix`, `labelled`; round seeding: `probabilities`; the demo:
  `small_data_epochs`; training (demo and rounds): `recipe_defaults`.
Metrics are not the head's: a task kind scores predictions against its targets (`TaskKind.evaluate`), with
its own settings (e.g. QA's answer alternatives).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch

Pick = Callable[[Any], torch.Tensor]  # model output -> the logit (one per batch row) an attribution explains


OCCLUSION_TOKENS = 4096  # rows x tokens per member that word occlusion may run


class Example(Protocol):
    """A training example (`zoo.training.TrainExample`): the model input and its target."""

    model_input: dict[str, str]
    target: Any


@dataclass(frozen=True)
class ExplainedLogits:
    """What an explanation attributes: `name` is recorded as its target (a label, or "start" for QA); `logits`
    maps each word list of the explanation ("words", QA also "end_words") to the logit it attributes."""

    name: str
    logits: dict[str, Pick]


# (model output of a perturbed batch, kept positions per row, the unperturbed input's segment ids)
#   -> probabilities [rows, candidates]: one column per label (classification) or one for the answer (QA)
RowProbability = Callable[[Any, list[list[int]], list[int | None]], torch.Tensor]


@dataclass(frozen=True)
class OcclusionTarget:
    """What word occlusion explains: `probability` of the answer in every perturbed row; `protected` token
    positions are replaced by [MASK] rather than deleted (a QA answer span must survive its own occlusion)."""

    probability: RowProbability
    protected: frozenset[int] = frozenset()


class HeadSpec(ABC):
    name: ClassVar[str]  # the registry name, stored in ModelVersion.head and zoo.json
    auto_model: ClassVar[Any]  # the transformers Auto class that builds and loads the model
    architecture_suffix: ClassVar[str]  # config.json "architectures" end in it, e.g. BertForQuestionAnswering
    default_max_length: ClassVar[int]  # tokens; longer inputs are truncated
    default_strategy: ClassVar[str]  # ensemble aggregation (zoo.aggregation)
    labelled: ClassVar[bool]  # predicts one of the task's labels (they go to zoo.json and config.id2label)
    probabilities: ClassVar[bool]  # predictions carry one probability per label ("probs"), e.g. for seeding
    small_data_epochs: ClassVar[int]  # epochs that move a model trained on a few dozen rows (the demo)
    target_keys: ClassVar[tuple[str, ...]]  # the model's loss keywords that `features` fill in
    truncation: ClassVar[bool | str] = True  # the tokenizer's truncation for (first, second) segments
    needs_offsets: ClassVar[bool] = False  # decoding needs the tokens' character offsets
    occlusion_needs_target: ClassVar[bool] = False  # occlusion must know the answer before its forward batch
    explained_name: ClassVar[str] = ""  # the explanation's "target" when it is not a label (QA: "answer")
    # cached-top recipe settings this head trains best with (zoo.recipes.RecipeSpec fields), for the demo
    # and the round pipeline alike; settings MODELZOO_RECIPE and explicit overrides come on top
    recipe_defaults: ClassVar[dict[str, Any]] = {}

    # -- training ---------------------------------------------------------------------------------

    def check_labels(self, labels: Sequence[str]) -> None:
        """Raise ValueError when a model of this head cannot be trained with these labels (default: any do)."""
        return None

    def config_overrides(self, labels: Sequence[str]) -> dict[str, Any]:
        """Settings for the model's transformers config (e.g. the number of labels)."""
        return {}

    @abstractmethod
    def features(self, tokenizer: Any, examples: Sequence[Example], labels: Sequence[str],
                 max_length: int) -> list[dict[str, Any]]:
        """One tokenized feature per example, with its target under the loss keyword(s) `target_keys`."""

    # -- prediction -------------------------------------------------------------------------------

    def segments(self, model_input: dict[str, str]) -> tuple[str, str | None]:
        """The model input as (first text, second text or None), the order the tokenizer takes them."""
        return model_input["text"], model_input.get("text_pair")

    @abstractmethod
    def decode(self, encoding: Any, output: Any, inputs: Sequence[dict[str, str]],
               labels: Sequence[str]) -> list[dict[str, Any]]:
        """One prediction per input (`zoo.types`: ClassPrediction, SpanPrediction, ...) from a batch."""

    # -- explanation ------------------------------------------------------------------------------

    @abstractmethod
    def target_of(self, prediction: dict[str, Any]) -> Any:
        """The target that explains this prediction: its label, or its span's character offsets."""

    def occlusion_max_features(self, n_tokens: int) -> int:
        """How many rows word occlusion may run per member for an input of `n_tokens` tokens: one row per word
        up to this many words; beyond it, words are deleted in groups (the cost bound): a budget of
        OCCLUSION_TOKENS tokens per member (a 20-token sentence goes word by word; an NLI pair of 120 tokens
        gets 34 rows; 16 rows of a 256-token QA passage, which cost ~0.05-0.3 s each on one CPU thread)."""
        return max(8, OCCLUSION_TOKENS // max(n_tokens, 1))

    def occlusion_single_segment(self, model_input: dict[str, str]) -> int:
        """The segment whose words occlusion always deletes one by one when the budget makes it group the rest:
        the writer's own text. The platform puts the given context first and the writer's input second
        (`tasks.kinds`), so the second text of a pair; the first when there is one (the QA question: QA inputs
        have no `text_pair`)."""
        return 1 if model_input.get("text_pair") else 0

    @abstractmethod
    def ensemble_target(self, predictions: Sequence[dict[str, Any]]) -> Any:
        """The target of the ensemble's answer, from its members' predictions of one input (the head's
        default aggregation: mean probabilities, best mean span)."""

    @abstractmethod
    def occlusion_target(self, target: Any, labels: Sequence[str], offsets: list[list[int]],
                         seq_ids: list[int | None]) -> OcclusionTarget:
        """What word occlusion of one tokenized input measures for `target`."""

    @abstractmethod
    def explained_logits(self, target: Any, labels: Sequence[str], offsets: list[list[int]],
                         seq_ids: list[int | None]) -> ExplainedLogits:
        """The logits an explanation of `target` attributes, for one tokenized input."""
