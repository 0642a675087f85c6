"""The export schema: one typed schema per task that every format follows (issue 39, item 9).

Nested fields (the context, the input, a span target, the predictions, the model versions) have the same shape in
JSONL (objects and arrays) and in Parquet (Arrow structs and lists), derived from the task's kind and config:

- `context`: a struct of the task's context fields (`context_fields`), strings;
- `input`: a struct of its input fields (`input_fields`), strings;
- `target`, `validated_label`, `reliability_label`: a label (string) for label kinds; for span kinds (QA) a struct
  `{text, start, alternatives}`;
- `ensemble_prediction`: `{label, probs: {<each label>: float64}}` for label kinds, `{text, start, end, score}`
  for span kinds;
- `model_predictions`: a list of `{model_version, name, prediction, opponent, fooled, seconds, left_out}`, the
  prediction shaped as the ensemble's (span kinds: with the member's `candidates`);
- `model_versions`: a list of int64.

Every value is projected onto its shape before any format sees it (`Column.project`): every struct field is
present (null when the stored value has none), in the schema's order, with the schema's type, so the files agree
whatever the database returned (PostgreSQL's jsonb reorders keys) and `datasets` infers one struct instead of a
`Json` column. A stored key the schema does not name is left out of every format and counted (`Dropped`); the
dataset card lists such keys. A key added to a verdict row (annotation.scoring, modelzoo.opponent) needs a field
here: `tests/exports/test_schema.py` checks a real verdict's keys against it.

CSV is flat: a nested value is written as the JSON text of its projected value (a plain string stays itself).
The card states the schema (a table, and `dataset_info.features` in its YAML header so that
`load_dataset(<unzipped bundle>, <format>)` gives every format its declared types).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from tasks.models import Task

INT, FLOAT, BOOL, STR, JSON = "int", "float", "bool", "str", "json"

# Column name -> kind, in file order. JSON columns are the database's JSON fields: their shape per task is
# `kind_shapes` (objects in JSONL, structs and lists in Parquet, JSON text in CSV; a plain string stays itself).
COLUMNS: dict[str, str] = {
    "example_id": INT,
    "task": STR,
    "round": INT,
    "split": STR,
    "context_id": INT,
    "context": JSON,
    "input": JSON,
    "target": JSON,
    "validated_label": JSON,
    "label": STR,
    "reliability_outcome": STR,
    "reliability_label": JSON,
    "reliability": FLOAT,
    "consensus": STR,
    "votes_correct": INT,
    "votes_incorrect": INT,
    "votes_flagged": INT,
    "fooled": BOOL,
    "ensemble_prediction": JSON,
    "model_predictions": JSON,
    "model_versions": JSON,
    "hardness_score": FLOAT,
    "data_map_region": STR,
    "annotator_id": STR,
    "created_at": STR,
    "exclusion": STR,
    # Provenance of the writing assistant (annotation.assistant): null without it; else as_suggested, edited or
    # own (written from scratch with suggestions shown), the suggestion it came from, the edit distance from it,
    # and the provider and model that wrote it.
    "assistance": STR,
    "suggested_text": STR,
    "edit_distance": INT,
    "assistant_model": STR,
    # The study (study.models): the arm its writer was randomly assigned to (the arm's key; null outside a study)
    # and the interface language it was written in (null when not recorded).
    "arm": STR,
    "language": STR,
}


# What each column holds, for the dataset card's schema table.
DESCRIPTIONS: dict[str, str] = {
    "example_id": "the example's id on the platform",
    "task": "the task's slug",
    "round": "the round it was written in",
    "split": "train, dev or test (stored once, never moved)",
    "context_id": "the context shown to the writer",
    "context": "what the writer was shown (the task's context fields)",
    "input": "what the writer wrote (the task's input fields)",
    "target": "the label the writer intended (QA: the answer span)",
    "validated_label": "the label validators settled on (the plain consensus rule); empty without one",
    "label": "the label to learn: validated_label, else target (QA: the answer text)",
    "reliability_outcome": "correct / incorrect / flagged, weighing validators by their estimated reliability",
    "reliability_label": "the label that outcome gives",
    "reliability": "the posterior probability of that outcome",
    "consensus": "unvalidated, verified, disputed, rejected or flagged",
    "votes_correct": "counted votes: correct",
    "votes_incorrect": "counted votes: incorrect",
    "votes_flagged": "counted votes: flagged",
    "fooled": "the server's verdict: did the example fool the models in the loop",
    "ensemble_prediction": "the ensemble's prediction",
    "model_predictions": "each model's prediction (a language-model opponent's row has opponent = true)",
    "model_versions": "the model versions that scored it",
    "hardness_score": "the context's hardness score, where hardness seeding scored it",
    "data_map_region": ("easy-to-learn, ambiguous or hard-to-learn: the example's region in the newest data map "
                        "(dataset cartography) of a retraining that trained on it; empty where none"),
    "annotator_id": "a salted hash of the writer, stable within this task",
    "created_at": "when it was written (ISO 8601, UTC)",
    "exclusion": "why it is in the excluded file (empty elsewhere)",
    "assistance": "empty without the writing assistant; as_suggested, edited or own with it",
    "suggested_text": "the suggestion it came from",
    "edit_distance": "characters changed from that suggestion",
    "assistant_model": "the provider and model that suggested it",
    "arm": "the study arm (condition) its writer was randomly assigned to: the arm's key; empty outside a study",
    "language": "the interface language it was written in (e.g. en, es, ar); empty when not recorded",
}

STRING, INT64, FLOAT64, BOOLEAN = "string", "int64", "float64", "bool"
DTYPES = {STR: STRING, INT: INT64, FLOAT: FLOAT64, BOOL: BOOLEAN}
ARROW = {STRING: pa.string(), INT64: pa.int64(), FLOAT64: pa.float64(), BOOLEAN: pa.bool_()}


@dataclass(frozen=True)
class Scalar:
    dtype: str


@dataclass(frozen=True)
class Struct:
    fields: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class ListOf:
    item: Node


Node = Scalar | Struct | ListOf


def struct(*fields: tuple[str, Node]) -> Struct:
    return Struct(tuple(fields))


def arrow_type(node: Node) -> pa.DataType:
    if isinstance(node, Scalar):
        return ARROW[node.dtype]
    if isinstance(node, ListOf):
        return pa.list_(arrow_type(node.item))
    return pa.struct([pa.field(name, arrow_type(child)) for name, child in node.fields])


def notation(node: Node) -> str:
    """A short type for people: `string`, `list<int64>`, `struct<label: string, probs: struct<…>>`."""
    if isinstance(node, Scalar):
        return node.dtype
    if isinstance(node, ListOf):
        return f"list<{notation(node.item)}>"
    return "struct<" + ", ".join(f"{name}: {notation(child)}" for name, child in node.fields) + ">"


def yaml_features(name: str, node: Node, indent: str = "") -> list[str]:
    """The Hugging Face card's YAML for one feature (`dataset_info.features`), as `datasets` writes it."""
    head = f"{indent}- name: {json.dumps(name)}"
    return [head, *_yaml_body(node, indent + "  ")]


def _yaml_body(node: Node, indent: str) -> list[str]:
    if isinstance(node, Scalar):
        return [f"{indent}dtype: {node.dtype}"]
    if isinstance(node, Struct):
        return [f"{indent}struct:", *_fields(node, indent)]
    if isinstance(node.item, Scalar):
        return [f"{indent}list: {node.item.dtype}"]
    if isinstance(node.item, Struct):  # a list of structs: the struct's fields right under `list:`
        return [f"{indent}list:", *_fields(node.item, indent)]
    return [f"{indent}list:", *_yaml_body(node.item, indent + "  ")]


def _fields(node: Struct, indent: str) -> list[str]:
    return [line for name, child in node.fields for line in yaml_features(name, child, indent)]


# -- projection: a stored value onto its shape ----------------------------------------------------------------


@dataclass
class Dropped:
    """Stored keys that the schema does not name (left out of every format), counted by path."""

    keys: Counter[str] = field(default_factory=Counter)


Projector = Callable[[Any], Any]


def _as_string(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # a number or object where text belongs: its JSON text


def _as_float(value: Any) -> float | None:
    return float(value) if value.__class__ is int else None  # an int (never a bool); anything else is no number


def _as_int(value: Any) -> int | None:
    return int(value) if value.__class__ is float and value.is_integer() else None


class _Compiler:
    """Turns a shape into Python source for its projector, compiled once per export: one function per struct, the
    scalars inline (a projection runs for every nested value of every row; calls per field doubled the time)."""

    def __init__(self, dropped: Dropped):
        self.dropped = dropped
        self.functions: list[str] = []
        self.names: dict[str, Any] = {"_as_string": _as_string, "_as_float": _as_float, "_as_int": _as_int,
                                      "_dropped": dropped.keys}
        self.counter = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def expr(self, node: Node, value: str, path: str) -> str:
        """An expression projecting the value of the expression `value` (evaluated once)."""
        t = self.fresh("_t")
        if isinstance(node, Scalar):
            if node.dtype == STRING:
                return f"({t} if ({t} := {value}).__class__ is str or {t} is None else _as_string({t}))"
            if node.dtype == FLOAT64:
                return f"({t} if ({t} := {value}).__class__ is float else _as_float({t}))"
            if node.dtype == INT64:
                return f"({t} if ({t} := {value}).__class__ is int else _as_int({t}))"
            return f"({t} if ({t} := {value}).__class__ is bool else None)"
        if isinstance(node, ListOf):
            x = self.fresh("_x")
            return f"([{self.expr(node.item, x, path + '[]')} for {x} in {t}] if ({t} := {value}).__class__ is list else None)"
        function = self.struct(node, path)
        return f"({function}({t}) if ({t} := {value}).__class__ is dict else None)"

    def struct(self, node: Struct, path: str) -> str:
        function, names = self.fresh("_struct"), self.fresh("_names")
        self.names[names] = frozenset(name for name, _ in node.fields)
        body = ", ".join(f"{name!r}: {self.expr(child, f'_get({name!r})', f'{path}.{name}')}"
                         for name, child in node.fields)
        self.functions.append(
            f"def {function}(value):\n"
            f"    if not value.keys() <= {names}:\n"
            f"        for extra in value.keys() - {names}:\n"
            f"            _dropped[{path!r} + '.' + extra] += 1\n"
            f"    _get = value.get\n"
            f"    return {{{body}}}\n")
        return function


def projector(node: Node, path: str, dropped: Dropped) -> Projector:
    """A function that projects a stored (decoded JSON) value onto `node`: every struct field present (null when
    the value has none), in the schema's order; scalars of the schema's type (an int where a float belongs becomes
    a float, a number where text belongs its JSON text, anything else null); keys the schema does not name are
    left out and counted in `dropped` by their path."""
    compiler = _Compiler(dropped)
    top = compiler.expr(node, "value", path)
    source = "\n".join([*compiler.functions, f"def project(value):\n    return {top}\n"])
    namespace = dict(compiler.names)
    exec(compile(source, f"<projector {path}>", "exec"), namespace)  # noqa: S102 - source built from the schema
    return namespace["project"]


# -- the task's schema ----------------------------------------------------------------------------------------


def _strings(names: list[str]) -> Struct:
    return Struct(tuple((name, Scalar(STRING)) for name in names))


SPAN = struct(("text", Scalar(STRING)), ("start", Scalar(INT64)), ("end", Scalar(INT64)), ("score", Scalar(FLOAT64)))


def kind_shapes(task: Task) -> dict[str, Node]:
    """The nested columns' shapes for `task`, from its kind and config."""
    kind, config = task.kind_impl, task.typed_config
    if kind.answer_is_span:
        target: Node = struct(("text", Scalar(STRING)), ("start", Scalar(INT64)),
                              ("alternatives", ListOf(Scalar(STRING))))
        ensemble: Node = SPAN
        member: Node = Struct((*SPAN.fields, ("candidates", ListOf(SPAN))))
    else:
        labels = list(getattr(config, "labels", []) or [])
        target = Scalar(STRING)
        ensemble = struct(("label", Scalar(STRING)), ("probs", _floats(labels)))
        member = ensemble
    prediction_row = struct(
        ("model_version", Scalar(INT64)), ("name", Scalar(STRING)), ("prediction", member),
        ("opponent", Scalar(BOOLEAN)), ("fooled", Scalar(BOOLEAN)), ("seconds", Scalar(FLOAT64)),
        ("left_out", Scalar(STRING)),
    )
    return {
        "context": _strings(list(config.context_fields)),
        "input": _strings(list(config.input_fields)),
        "target": target,
        "validated_label": target,
        "reliability_label": target,
        "ensemble_prediction": ensemble,
        "model_predictions": ListOf(prediction_row),
        "model_versions": ListOf(Scalar(INT64)),
    }


def _floats(names: list[str]) -> Struct:
    return Struct(tuple((name, Scalar(FLOAT64)) for name in names))


@dataclass(frozen=True)
class Column:
    name: str
    node: Node
    nested: bool  # a JSON column of the database (decoded and projected), as opposed to a plain one


@dataclass
class ExportSchema:
    """The columns of every file of `task`'s exports, with their shapes, and how stored values fit them."""

    task: Task
    columns: list[Column]
    dropped: Dropped = field(default_factory=Dropped)
    _projectors: dict[str, Projector] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._projectors = {c.name: projector(c.node, c.name, self.dropped) for c in self.columns if c.nested}

    def project(self, column: str, value: Any) -> Any:
        return self._projectors[column](value)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def arrow(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, arrow_type(c.node)) for c in self.columns])

    def flat_arrow(self) -> pa.Schema:
        """CSV's columns: nested ones as (JSON) text."""
        return pa.schema([pa.field(c.name, pa.string() if c.nested else arrow_type(c.node)) for c in self.columns])

    def yaml(self, indent: str = "  ", flat: bool = False) -> list[str]:
        lines = []
        for c in self.columns:
            node = Scalar(STRING) if flat and c.nested else c.node
            lines.extend(yaml_features(c.name, node, indent))
        return lines

    def rows(self) -> list[tuple[str, str, bool]]:
        """(column, type, nested) for the card's schema table."""
        return [(c.name, notation(c.node), c.nested and not isinstance(c.node, Scalar)) for c in self.columns]


def export_schema(task: Task) -> ExportSchema:
    shapes = kind_shapes(task)
    columns = [Column(name, shapes[name] if kind == JSON else Scalar(DTYPES[kind]), kind == JSON)
               for name, kind in COLUMNS.items()]
    return ExportSchema(task, columns)
