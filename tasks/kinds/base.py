"""The shared interface of task kinds, and the settings every task has.

A kind decides how an example's input and target are validated, how a model input is formed,
whether the model was fooled (always on the server), and which metrics apply.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dynabench_site.errors import InvalidInput
from dynabench_site.text import text_problem
from tasks import choices
from zoo import encoders as zoo_encoders
from zoo import explain_methods
from zoo import llm as llm_providers
from zoo.llm import endpoints as llm_endpoints

# Every choice a setting offers is its registry's names, as a Literal (an enum in the schema, a choice on the
# settings page): the model library's registries are read directly; those of the apps above `tasks` (context
# sampling, hardness scores) through the names they register under, written once in `tasks.choices`.
ExplanationMethod = Literal[explain_methods.METHODS]  # type: ignore[valid-type]
SamplingStrategy = Literal[choices.SAMPLING]  # type: ignore[valid-type]
SeedingScore = Literal[choices.SEEDING_SCORES]  # type: ignore[valid-type]
ProviderName = Literal[tuple(llm_providers.PROVIDERS)]  # type: ignore[valid-type]
RATE_RE = re.compile(r"^\d+/(s|sec|m|min|h|hour|d|day)$")


class InputError(InvalidInput, ValueError):
    """Bad example input or target (HTTP 400); `field` names what was wrong (e.g. ``input.text``)."""

    field: str

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)

    def as_dict(self) -> dict[str, list[str]]:
        return {self.field: [self.message]}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ValidationSettings(_Strict):
    scope: Literal["fooling", "all"] = "fooling"
    mode: Literal["quorum", "adaptive"] = "quorum"
    quorum: int = Field(3, ge=1, le=15)
    adaptive_min: int = Field(2, ge=1, le=15)
    lease_seconds: int = Field(120, ge=5, le=3600)
    continue_after_close: bool = True
    # How to judge (Markdown), shown to validators on the validate and expert pages and the validator quiz;
    # empty: the wording validation.guidance derives for the task's kind, labels and fields.
    guidance: str = Field("", max_length=8000, description="How validators judge an example (Markdown), shown on "
                          "the validate and expert pages and the validator quiz. Empty: a default wording for the "
                          "task's kind.")


class SplitSettings(_Strict):
    train: float = Field(0.8, ge=0, le=1)
    dev: float = Field(0.1, ge=0, le=1)
    test: float = Field(0.1, ge=0, le=1)
    seed: int = 0

    @model_validator(mode="after")
    def _sum_to_one(self) -> SplitSettings:
        if abs(self.train + self.dev + self.test - 1.0) > 1e-6:
            raise ValueError("split ratios train + dev + test must add up to 1")
        return self


class DatasetSettings(_Strict):
    licence: str = "CC BY 4.0"
    intended_use: str = "Research on robust and adversarially collected NLP benchmarks."


class DynascoreWeights(_Strict):
    performance: float = Field(4, ge=0)
    throughput: float = Field(1, ge=0)
    memory: float = Field(1, ge=0)
    robustness: float = Field(0, ge=0)
    fairness: float = Field(0, ge=0)


class PaySettings(_Strict):
    """The rates of the pay report (crowd.pay): a bonus per example, per verified fooling example and per
    validation, in `currency`."""

    currency: str = Field("USD", min_length=1, max_length=8)
    per_example: float = Field(0.0, ge=0)
    per_verified_fooling: float = Field(0.5, ge=0)
    per_validation: float = Field(0.02, ge=0)


class CrowdSettings(_Strict):
    """Who qualifies, how validators are checked, and what the crowd is paid (docs/crowd.md)."""

    # A role that needs the quiz is held on this task only by those who passed it (or whom an owner
    # appointed); holding the global role is then not enough. New sign-ups never hold the validator role
    # globally, so they validate a task only after passing its validator quiz either way.
    writers_need_quiz: bool = False
    validators_need_quiz: bool = False
    # Gold items: the share of served items that are gold, and the accuracy a validator must keep once
    # they answered `gold_min_answers` of them (below it: no more items, their votes stop counting).
    gold_rate: float = Field(0.1, ge=0, le=1)
    gold_min_answers: int = Field(4, ge=1, le=1000)
    gold_min_accuracy: float = Field(0.7, ge=0, le=1)
    # The sybil rule always compares external worker ids; comparing sign-up addresses can be turned off
    # for a crowd behind one address (a lab, a classroom).
    same_ip_rule: bool = True
    pay: PaySettings = Field(default_factory=PaySettings)

    def needs_quiz(self, role: str) -> bool:
        return {"annotator": self.writers_need_quiz, "validator": self.validators_need_quiz}.get(role, False)


class SeedingSettings(_Strict):
    """How the next round is seeded (Hard-Bench, docs/seeding.md): a weak model is trained on the candidate
    pool, scores every pool item, and the k hardest per label become the round's seeds."""

    score: SeedingScore = Field(
        choices.DEFAULT_SEEDING_SCORE,
        description="The hardness score of the weak scorer: loss, head gradient norm, gradient norm of the top "
                    "block and head, EL2N (error norm averaged over 3 runs), or AFLite (what linear probes over the "
                    "frozen features cannot predict).")
    k_per_label: int = Field(10, ge=0, le=10000, description="Seeds per label (QA: in all); 0 turns seeding off.")
    pool_max: int = Field(5000, ge=1, le=1_000_000, description="At most this many pool items are scored "
                                                             "(a stable sample: the same items every time).")
    min_steps: int = Field(50, ge=1, le=10000, description="The weak scorer's least number of updates: a small "
                                                           "pool is passed over several times to reach it.")
    seed: int = Field(0, description="Changes the pool sample and the weak scorer's initialisation.")
# --- retraining between rounds (rounds pipeline; docs/rounds.md) ---------------------------------------
class RetrainingSettings(_Strict):
    """What closing a round does with the models in the loop (docs/rounds.md)."""

    deploy_tolerance: float = Field(
        1.0, ge=0, le=100,
        description="Points (of the kind's main metric, ×100) a retrained ensemble may lose against the live one "
                    "on any test set before the pipeline stops and asks the owner to approve or discard it.")
    retrain_without_new_data: bool = Field(
        False, description="Retrain even when the closing round brought no new training examples (otherwise the "
                           "live ensemble is kept).")
    new_round_weight: float = Field(
        2.0, ge=1, le=20,
        description="How many times the newest round's training examples count when retraining (the base data and "
                    "earlier rounds count once): each row is repeated the whole part of the weight, and a stable "
                    "share of the rows, the fractional part, once more. 1 treats every row alike.")
    encoder: str = Field(
        "", max_length=500,
        description="The base encoder of the models in the loop (docs/modelzoo.md, \"Putting your own model in the "
                    "loop\"): empty for the site's default (all-MiniLM-L6-v2); a registered name (" + ", ".join(
                        n for n in zoo_encoders.ENCODERS.names() if not n.startswith("tiny")) + "); upload:<id or "
                    "name> to put a model uploaded to this task's leaderboard in the loop; or a checkpoint folder "
                    "inside a folder the operator allows (ZOO_ENCODER_DIRS). A round's pipeline option wins over it.")
    start_from: Literal["pretrained", "live"] = Field(
        "pretrained",
        description="Where each round's retraining starts: \"pretrained\" (the encoder as it was pretrained, trained "
                    "on all the data again each round, as DynaSent recommends) or \"live\" (each member continues "
                    "from the live ensemble's member with the same position: its weights, head included, carry over).")

    @field_validator("encoder", mode="before")
    @classmethod
    def _encoder(cls, value: Any) -> Any:
        if value is None:
            return ""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text:
            return ""
        problem = encoder_problem(text)
        if problem:
            raise ValueError(problem)
        return text
# --- end of retraining settings -------------------------------------------------------------------------


def encoder_problem(text: str) -> str | None:
    """Why an encoder setting cannot be right whatever the site holds (a stored config is only checked this far:
    a folder or an upload that later goes away must not make the task unreadable); the settings forms also run the
    site's deeper check on save (`check_encoder_setting`)."""
    if text in zoo_encoders.ENCODERS or text.startswith("upload:"):
        return None if text != "upload:" else "upload: names no upload; give upload:<id> or upload:<name>"
    if "/" in text or "\\" in text or text.startswith(("~", ".")):
        return None if text.startswith("/") else f"encoder folder {text!r} must be an absolute path"
    return (f"unknown encoder {text!r}: name one of {', '.join(zoo_encoders.ENCODERS.names())}, upload:<id> (a "
            f"model uploaded to this task), or the path of a checkpoint folder the site allows (ZOO_ENCODER_DIRS)")


# The site's check of an encoder setting against what it holds (folders it allows, the task's uploads, the checkpoint
# itself): installed by the model zoo's app config (modelzoo.apps), since tasks never imports the model zoo. A check
# raises ValueError (zoo.encoders.EncoderError) with the reason.
ENCODER_CHECKS: list[Callable[[str, Any], Any]] = []


def check_encoder_setting(config: TaskConfig, task: Any = None) -> str | None:
    """The reason the config's retraining.encoder cannot be used on this site, or None (forms call it on save)."""
    value = config.retraining.encoder
    if not value:
        return None
    for check in ENCODER_CHECKS:
        try:
            check(value, task)
        except ValueError as exc:
            return str(exc)
    return None


# --- language models in the loop (docs/llm.md) ---------------------------------------------------------
def _endpoint_choices(schema: dict[str, Any]) -> None:
    """The schema's enum of endpoint names: the operator's, read when the schema is made (the settings form)."""
    from django.conf import settings

    schema["enum"] = llm_endpoints.names(settings.LLM_ENDPOINTS)


class LLMProviderSettings(_Strict):
    """Which generative model answers (zoo.llm): the packaged local model, or one of the endpoints the site's
    operator configured (LLM_ENDPOINTS; LLM_BASE_URL is the one named "default"), picked by name. A task never
    names an address or a key: the operator's key goes only to the operator's endpoint (docs/SECURITY.md).

    Stored configs from before (`base_url`, `api_key_env`) still load: an address the operator has configured
    becomes that endpoint's name, any other becomes "default" (`_from_addresses`); saving stores the new form."""

    provider: ProviderName = Field("local", description=llm_providers.described())
    endpoint: str = Field(llm_endpoints.DEFAULT, max_length=40, pattern=r"^[a-z][a-z0-9_-]{0,39}$",
                          json_schema_extra=_endpoint_choices,
                          description="HTTP only: which of the site's endpoints answers (its address and key are "
                                      "the operator's).")
    model: str = Field("", max_length=200, description="HTTP only: empty: the endpoint's own model; else one of the "
                                                       "models the operator lists for the endpoint.")
    timeout_s: float = Field(20.0, ge=0.5, le=300, description="Seconds one call may take before it is given up.")

    @model_validator(mode="before")
    @classmethod
    def _from_addresses(cls, data: Any) -> Any:
        """A stored config that named its own `base_url` / `api_key_env`: the operator's endpoint at that address
        (with that key variable, if one matches), else "default". Neither field is accepted from now on in the
        same object as `endpoint`."""
        if not isinstance(data, dict) or not ({"base_url", "api_key_env"} & set(data)):
            return data
        from django.conf import settings

        data = dict(data)
        base_url, key_env = data.pop("base_url", ""), data.pop("api_key_env", "")
        if "endpoint" in data:
            raise ValueError("base_url and api_key_env are no longer task settings: pick one of the site's "
                             "endpoints by name (endpoint)")
        if not isinstance(base_url, str) or not isinstance(key_env, str):
            return data
        try:
            configured = llm_endpoints.parse(settings.LLM_ENDPOINTS)
        except ValueError:
            configured = {}
        default = configured.get(llm_endpoints.DEFAULT)
        url = base_url.strip() or (default.url if default else "")
        data["endpoint"] = (llm_endpoints.matching(configured, url, key_env) if url else None) or llm_endpoints.DEFAULT
        return data


class AssistantSettings(_Strict):
    """The writing assistant on the create page: the writer asks for suggestions for the current context and
    intended label; each comes back already scored by the live ensemble (docs/llm.md)."""

    enabled: bool = Field(False, description="Offer suggestions on the create page.")
    provider: LLMProviderSettings = Field(default_factory=LLMProviderSettings)
    candidates: int = Field(3, ge=1, le=5, description="Suggestions per request.")
    max_tokens: int = Field(48, ge=8, le=256, description="The longest suggestion, in tokens.")
    temperature: float = Field(0.9, ge=0.0, le=2.0)
    seed: int | None = Field(None, ge=0, le=2**31 - 1, description="A fixed sampling seed: the same request gives "
                             "the same suggestions (for studies that must be repeatable). Unset, every request "
                             "differs.")
    examples: int = Field(4, ge=0, le=8, description="Verified fooling examples of the round shown to the model "
                                                      "as few-shot examples.")


class OpponentSettings(_Strict):
    """A language model as an opponent: its label is the label word it finds most likely after a prompt built
    from the instructions and the example's fields, with per-label offsets fitted on a dev split. It has its own
    "fooled" flag and never changes the ensemble's verdict (docs/llm.md)."""

    enabled: bool = Field(False, description="Score every example with the language model too.")
    provider: LLMProviderSettings = Field(default_factory=LLMProviderSettings)
    label_words: dict[str, str] = Field(default_factory=dict, description="How a label is said to the model "
                                        "(label -> word); unset labels are said as written.")
    timeout_s: float = Field(10.0, ge=0.5, le=120, description="An opponent slower than this is left out of that "
                                                                 "verdict (the verdict says so).")
# --- end of language model settings ---------------------------------------------------------------------


class TaskConfig(_Strict):
    """Settings common to all kinds; kinds subclass it."""

    instructions: str = ""
    context_fields: list[str] = Field(default_factory=list)
    input_fields: list[str] = Field(default_factory=lambda: ["text"], min_length=1)
    max_input_chars: int = Field(500, ge=1, le=20000)
    sampling: SamplingStrategy = choices.DEFAULT_SAMPLING
    submission_rate: str = "30/min"
    # How the verdict's word map is made (zoo.explain): word occlusion over the ensemble (faithful by
    # construction), or the gradient methods input x gradient / integrated gradients; the choices are
    # zoo.explain_methods' registry.
    explanation_method: ExplanationMethod = explain_methods.DEFAULT_METHOD
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    splits: SplitSettings = Field(default_factory=SplitSettings)
    dataset: DatasetSettings = Field(default_factory=DatasetSettings)
    dynascore: DynascoreWeights = Field(default_factory=DynascoreWeights)
    crowd: CrowdSettings = Field(default_factory=CrowdSettings)
    seeding: SeedingSettings = Field(default_factory=SeedingSettings)
    retraining: RetrainingSettings = Field(default_factory=RetrainingSettings, title="Retraining between rounds")
    assistant: AssistantSettings = Field(default_factory=AssistantSettings, title="Writing assistant")
    opponent: OpponentSettings = Field(default_factory=OpponentSettings, title="Language model opponent")

    @field_validator("context_fields", "input_fields")
    @classmethod
    def _identifiers(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
                raise ValueError(f"field name {name!r} must be lower-case letters, digits or _")
        if len(set(names)) != len(names):
            raise ValueError("field names must be unique")
        return names

    @field_validator("submission_rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        if not RATE_RE.match(value):
            raise ValueError("submission_rate must look like '30/min' (number/s|min|hour|day)")
        return value


def clean_text(field: str, value: Any, max_chars: int) -> str:
    """A text people write (example inputs, answers, reasons), trimmed, within `max_chars`, and passing the
    site's text rule (dynabench_site.text: no surrogates, controls, bidi controls, mark stacks, blank text);
    the rule's positions are offsets into the text as sent."""
    if not isinstance(value, str):
        raise InputError(field, "must be a string")
    text = value.strip()
    if not text:
        raise InputError(field, "must not be empty")
    if len(text) > max_chars:
        raise InputError(field, f"is {len(text)} characters long; the limit is {max_chars}")
    problem = text_problem(value)
    if problem is not None:
        raise InputError(field, problem)
    return text


class TaskKind(ABC):
    """One kind of task. Subclasses are registered in tasks.kinds and stay stateless."""

    name: ClassVar[str]
    label: ClassVar[str]
    # The model head its models have, by name (a head spec in zoo.heads; tasks never imports the zoo).
    head: ClassVar[str]
    # What a target is: one label of the task's label set, or a span of the context ({"text", "start"}).
    target_is_label: ClassVar[bool] = True
    # Training settings this kind's models need on top of their head's (zoo.heads `recipe_defaults`), e.g. a larger
    # share of the encoder fine-tuned for sentence pairs; read by modelzoo.ensemble_training.default_recipe.
    recipe_defaults: ClassVar[dict[str, Any]] = {}
    answer_is_span: ClassVar[bool] = False
    # The verdict seam (docs/ARCHITECTURE.md, "The verdict"): who answers an example — the round's encoder
    # "ensemble", or "language_models" (the chat kind's blinded targets) — and who judges a failure — a "rule"
    # (`is_fooled`: the label, QA's F1) or "people" (the writer's claim, confirmed by validators). A generative
    # kind has no encoder head and no retraining between rounds.
    generative: ClassVar[bool] = False
    answered_by: ClassVar[str] = "ensemble"
    judged_by: ClassVar[str] = "rule"
    config_class: ClassVar[type[TaskConfig]]
    metrics: ClassVar[tuple[str, ...]]

    def default_config(self) -> dict[str, Any]:
        return self.config_class().model_dump()

    def parse_config(self, raw: dict[str, Any] | None) -> TaskConfig:
        """Validate a stored or submitted config (pydantic.ValidationError on a bad one)."""
        return self.config_class.model_validate(raw or {})

    def clean_input(self, config: TaskConfig, context: dict[str, Any], raw: Any) -> dict[str, str]:
        if not isinstance(raw, dict):
            raise InputError("input", f"must be an object with the fields {', '.join(config.input_fields)}")
        unknown = sorted(set(raw) - set(config.input_fields))
        if unknown:
            raise InputError("input", f"unknown field(s) {', '.join(unknown)}; expected {', '.join(config.input_fields)}")
        cleaned = {}
        for name in config.input_fields:
            if name not in raw:
                raise InputError(f"input.{name}", "is required")
            cleaned[name] = clean_text(f"input.{name}", raw[name], config.max_input_chars)
        return cleaned

    def model_context_fields(self, config: TaskConfig) -> list[str]:
        """Context fields the model reads (the others are shown to writers only)."""
        return list(config.context_fields)

    @abstractmethod
    def clean_target(self, config: TaskConfig, context: dict[str, Any], raw: Any) -> Any: ...

    @abstractmethod
    def model_input(self, config: TaskConfig, context: dict[str, Any], inputs: dict[str, str]) -> dict[str, str]: ...

    @abstractmethod
    def is_fooled(self, config: TaskConfig, target: Any, prediction: dict[str, Any]) -> bool: ...

    @abstractmethod
    def evaluate(self, config: TaskConfig, targets: list[Any], predictions: list[dict[str, Any]]) -> dict[str, float]: ...

    @abstractmethod
    def target_label(self, target: Any) -> str:
        """A short string for a target: the label, or the answer text (used for per-label selection)."""
