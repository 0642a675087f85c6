"""Every choice list follows from its registry.

The fifteen registries of pluggable parts are one helper (`zoo.registry.Registry`: register, lookup, names, and
one error for an unknown name). No module outside a registry's home writes a list of its names (a tuple, list,
set, dict or `Literal[...]` holding two or more of them, or a script's array): settings validation, the task
schema, the settings form, the OpenAPI enums, command options and the create page's config are derived from the
registry. Explanation methods (`zoo.explain_methods.METHOD_SPECS`), export formats (`exports.formats.FORMATS`),
context sampling strategies (`annotation.sampling.STRATEGIES`, named in `tasks.choices`) and aggregation
strategies (`zoo.aggregation.STRATEGIES`) are distinctive enough to check stricter: any string literal of one of
their names outside its home fails."""

from __future__ import annotations

import ast
import json
import os
import re
from functools import cache
from pathlib import Path

import pytest

from exports.formats import FORMATS
from zoo.explain_methods import DEFAULT_METHOD, METHOD_SPECS, METHODS

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {".venv", "tests", "docs", "node_modules", "var", ".git", "migrations", "shared",
                "bench"}  # benchmarks name the methods and formats they measure (their report's rows)

# The modules that may name them: the registries themselves, and names that only look alike.
EXPLANATION_HOMES = {"zoo/explain_methods.py"}
FORMAT_HOMES = {f"exports/formats/{name}" for name in ("jsonl.py", "csv_format.py", "parquet.py")}
LOOKALIKES = {
    "modelzoo/data.py",  # the function `jsonl` (reads a JSONL file of labelled rows), in `__all__`
    "modelzoo/management/commands/train_model.py",  # its option --jsonl (a file to train on)
}


@cache
def project_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        found += [Path(folder) / f for f in sorted(files) if f.endswith((".py", ".js"))]
    return found


@cache
def sources() -> list[tuple[str, str, frozenset[str]]]:
    """(path, text, its Python string literals) of every project module, read and parsed once."""
    out = []
    for path in project_files():
        text = path.read_text(errors="ignore")
        literals = frozenset(node.value for node in ast.walk(ast.parse(text))
                             if isinstance(node, ast.Constant) and isinstance(node.value, str)) \
            if path.suffix == ".py" else frozenset()
        out.append((path.relative_to(ROOT).as_posix(), text, literals))
    return out


def literal_homes(names: set[str]) -> dict[str, set[str]]:
    """name -> the project modules that hold it as a string literal (Python) or a quoted string / object key (JS)."""
    found: dict[str, set[str]] = {name: set() for name in names}
    for rel, text, literals in sources():
        for name in names:
            if name in literals or (rel.endswith(".js") and re.search(
                    rf"([\"'`]){re.escape(name)}\1|[{{,]\s*{re.escape(name)}\s*:", text)):
                found[name].add(rel)
    return found


def test_explanation_methods_are_named_in_their_registry_only():
    homes = literal_homes(set(METHODS))
    assert all(homes[name] for name in METHODS)  # the scan sees the registry itself
    strays = {name: sorted(where - EXPLANATION_HOMES - LOOKALIKES) for name, where in homes.items()}
    assert strays == {name: [] for name in METHODS}, "derive the list from zoo.explain_methods.METHOD_SPECS"


def test_export_formats_are_named_in_their_registry_only():
    homes = literal_homes(set(FORMATS))
    assert all(homes[name] for name in FORMATS)
    strays = {name: sorted(where - FORMAT_HOMES - LOOKALIKES) for name, where in homes.items()}
    assert strays == {name: [] for name in FORMATS}, "derive the list from exports.formats.FORMATS"


def test_every_explanation_method_runs_and_every_list_follows_the_registry(settings):
    from dynabench_site import env
    from modelzoo.services import explanation_method
    from tasks.kinds.base import TaskConfig
    from zoo import explain

    assert set(explain.GRADIENTS) | {explain.OCCLUSION} == set(METHOD_SPECS)
    assert TaskConfig.model_json_schema()["properties"]["explanation_method"]["enum"] == list(METHODS)
    assert TaskConfig().explanation_method == DEFAULT_METHOD
    for name in METHODS:
        assert env.env_choice("M", DEFAULT_METHOD, METHODS, environ={"M": name}) == name
        settings.MODEL_EXPLANATION_METHOD = name
        assert explanation_method() == name


def test_export_formats_say_what_a_bundle_and_the_card_need():
    from exports import services

    assert tuple(FORMATS) == services.DEFAULT_FORMATS
    assert all(fmt.name == name and fmt.datasets_loader for name, fmt in FORMATS.items())
    assert not FORMATS["parquet"].compressible and FORMATS["jsonl"].compressible  # Parquet is compressed already
    assert FORMATS["jsonl"].datasets_loader == "json"


def test_the_openapi_format_enum_is_the_export_registry(api, db):
    schema = api.get("/api/schema/?format=json").json()
    params = schema["paths"]["/api/tasks/{slug}/rounds/{number}/dataset/"]["get"]["parameters"]
    [fmt] = [p for p in params if p["name"] == "format"]
    assert sorted(fmt["schema"]["enum"]) == sorted(FORMATS)  # drf-spectacular sorts enums


@pytest.mark.django_db
def test_the_create_page_carries_every_explanation_method(client, open_round, personas):
    client.force_login(personas.annotator)
    html = client.get(f"/tasks/{open_round.task.slug}/create/").content.decode()
    match = re.search(r'<script id="create-config" type="application/json">(.*?)</script>', html, re.S)
    config = json.loads(match.group(1))
    assert config["explanation_methods"] == [
        {"name": s.name, "label": s.label, "approximate": s.approximate} for s in METHOD_SPECS.values()
    ]


def test_backends_and_kinds_are_keyed_by_their_own_names():
    from tasks.kinds import KINDS, kind_choices
    from tasks.models import Task
    from zoo.serving import BACKENDS, DEFAULT_BACKEND

    assert all(backend.name == name for name, backend in BACKENDS.items()) and DEFAULT_BACKEND in BACKENDS
    assert all(kind.name == name for name, kind in KINDS.items())
    assert [value for value, _ in Task._meta.get_field("kind").choices] == [name for name, _ in kind_choices()]


@pytest.mark.django_db
def test_a_bundle_asks_each_format_whether_it_compresses(open_round, monkeypatch):
    import io
    import zipfile

    from exports.bundle import write_bundle
    from exports.formats.csv_format import CsvFormat

    monkeypatch.setattr(CsvFormat, "compressible", False)  # the format says so; its suffix does not matter
    sink = io.BytesIO()
    write_bundle(open_round, sink, list(FORMATS), version="live")
    stored = {i.filename for i in zipfile.ZipFile(sink).infolist() if i.compress_type == zipfile.ZIP_STORED}
    assert stored == {f"data/{part}.{fmt.extension}" for part in ("train", "dev", "test")
                      for fmt in FORMATS.values() if not fmt.compressible}
    assert "data/train.csv" in stored


# --- the fifteen registries: one helper, names written once, every derived list equal to its registry --------

# label -> ("module:NAME" of the registry, the modules that may write its names). A home ending in "/" is a folder.
REGISTRIES = {
    "task kinds": ("tasks.kinds:KINDS", {"tasks/kinds/"}),
    "model heads": ("zoo.heads:HEADS", {"zoo/heads/"}),
    "serving backends": ("zoo.serving:BACKENDS", {"zoo/serving/"}),
    "explanation methods": ("zoo.explain_methods:METHOD_SPECS", EXPLANATION_HOMES),
    "language model providers": ("zoo.llm:PROVIDERS", {"zoo/llm/__init__.py", "zoo/llm/local.py",
                                                       "zoo/llm/openai_http.py"}),
    "aggregation strategies": ("zoo.aggregation:STRATEGIES", {"zoo/aggregation.py"}),
    "hardness scores": ("hardness.scores:SCORES", {"hardness/scores.py", "tasks/choices.py"}),
    "hardness selections": ("hardness.selection:SELECTIONS", {"hardness/selection.py"}),
    "export formats": ("exports.formats:FORMATS", FORMAT_HOMES),
    "context sampling": ("annotation.sampling:STRATEGIES", {"tasks/choices.py"}),
    "training recipes": ("zoo.recipes:RECIPES", {"zoo/recipes.py"}),
    "base encoders": ("zoo.encoders:ENCODERS", {"zoo/encoders.py"}),
    "trainers": ("zoo.trainers:TRAINERS", {"zoo/trainers.py", "modelzoo/trainers.py"}),
    "health checks": ("dynabench_site.health:CHECKS", {"dynabench_site/health.py"}),
    "stuck work": ("dynabench_site.health:STUCK_WORK", set()),  # each app registers its own, one name each
}
# Lists that hold names of a registry but are not a copy of it, with why (module, registry label).
NOT_COPIES = {
    ("modelzoo/management/commands/demo_models.py", "task kinds"): "DEMO_TASKS: the demo's task slugs",
    ("modelzoo/management/commands/demo_models.py", "model heads"): "DEMO_RECIPE: the demo's training settings "
                                                                     "for the heads its tasks use",
    ("tasks/management/commands/load_demo.py", "task kinds"): "BASE_DATA: keyed by the demo's task slugs",
    ("research/hardbench/pool.py", "hardness scores"): "DEFAULT_STRATEGIES: the study's chosen comparison",
}


def registry(label: str):
    import importlib

    module, _, name = REGISTRIES[label][0].partition(":")
    return getattr(importlib.import_module(module), name)


def at_home(rel: str, homes: set[str]) -> bool:
    return any(rel == home or (home.endswith("/") and rel.startswith(home)) for home in homes)


def lists_in(rel: str, text: str) -> list[tuple[str, int, frozenset[str]]]:
    """(module, line, the strings it holds) of every list-like literal of a module with two strings or more:
    Python tuples, lists, sets, dict keys and `Literal[...]` subscripts; a script's arrays and object literals."""
    found = []
    if rel.endswith(".py"):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                items = node.elts
            elif isinstance(node, ast.Dict):
                items = [key for key in node.keys if key is not None]
            else:
                continue
            strings = frozenset(i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str))
            if len(strings) >= 2:
                found.append((rel, node.lineno, strings))
    else:
        for match in re.finditer(r"\[[^\[\]]*\]|\{[^{}]*\}", text):
            strings = frozenset(m.group(2) or m.group(3) for m in re.finditer(
                r"([\"'`])([\w.-]+)\1|[{,]\s*([A-Za-z_]\w*)\s*:", match.group(0)))
            if len(strings) >= 2:
                found.append((rel, text[:match.start()].count("\n") + 1, strings))
    return found


@cache
def name_lists() -> list[tuple[str, int, frozenset[str]]]:
    return [found for rel, text, _ in sources() for found in lists_in(rel, text)]


@pytest.mark.parametrize("label", sorted(REGISTRIES))
def test_every_registry_is_the_one_helper_and_names_an_unknown_name_the_same_way(label):
    from zoo.registry import Registry

    entries = registry(label)
    assert isinstance(entries, Registry) and len(entries) >= 1
    assert entries.names() == tuple(entries)
    with pytest.raises(Exception) as unknown:
        entries.lookup("no-such-name")
    assert str(unknown.value) == (f"unknown {entries.what} 'no-such-name'; choose one of: "
                                  f"{', '.join(entries.names())}")
    with pytest.raises(ValueError, match="registered twice"):
        entries.register(entries.names()[0], entries[entries.names()[0]])


@pytest.mark.parametrize("label", sorted(REGISTRIES))
def test_no_module_copies_a_registrys_names_as_a_list(label):
    """A list holding two or more names of a registry, outside its home, is a copy that drifts when an entry is
    added; derive it from the registry (or, for a registry above the module's layer, from `tasks.choices`)."""
    names, homes = set(registry(label)), REGISTRIES[label][1]
    copies = sorted(f"{rel}:{line}: {sorted(strings & names)}" for rel, line, strings in name_lists()
                    if len(strings & names) >= 2 and not at_home(rel, homes) and (rel, label) not in NOT_COPIES)
    assert copies == []


def test_the_scan_finds_the_copies_it_replaced():
    """The copy test is not vacuous: the hand-written lists this helper replaced, and a script's array, fail it."""
    copied = {
        "tasks/kinds/base.py": 'sampling: Literal["least_used", "hardness_first", "uniform"] = "hardness_first"',
        "tasks/kinds/qa.py": 'score: Literal["loss", "gradnorm", "el2n"] = Field("loss")',
        "rounds/options.py": 'recipe: Literal["cached-top", "full"] = Field("cached-top")',
        "frontend/static/js/x.js": 'const providers = ["local", "openai"];',
    }
    seen = {rel: strings for path, text in copied.items() for rel, _, strings in lists_in(path, text)}
    assert seen["tasks/kinds/base.py"] == set(registry("context sampling"))
    assert seen["tasks/kinds/qa.py"] <= set(registry("hardness scores"))
    assert seen["rounds/options.py"] == set(registry("training recipes"))
    assert seen["frontend/static/js/x.js"] == set(registry("language model providers"))
    assert any(len(strings & set(registry("hardness scores"))) >= 2 for rel, _, strings in name_lists()
               if rel == "research/hardbench/pool.py")  # the allowed study list is seen, and allowed by name


@pytest.mark.parametrize("label,homes", [
    ("context sampling", {"tasks/choices.py"}),
    ("aggregation strategies", {"zoo/aggregation.py", "zoo/heads/"}),  # a head names its default strategy
])
def test_distinctive_names_are_written_in_their_home_only(label, homes):
    names = set(registry(label))
    found = literal_homes(names)
    assert all(found[name] for name in names)
    strays = {name: sorted(rel for rel in where if not at_home(rel, homes)) for name, where in found.items()}
    assert strays == {name: [] for name in names}


def test_the_public_lookups_keep_their_callers_errors():
    """Each registry's own lookup still raises what its callers catch, with the one message."""
    from annotation import sampling
    from dynabench_site.errors import InvalidInput
    from exports.formats import get_format
    from hardness.scores import ScoringContext, compute
    from hardness.selection import select
    from tasks.kinds import get_kind
    from zoo import aggregation, llm, serving
    from zoo.explain_methods import check_method
    from zoo.heads import get_head

    for lookup in (get_kind, get_head, aggregation.get_strategy, sampling.get_strategy):
        with pytest.raises(KeyError, match="unknown .* 'nope'; choose one of: "):
            lookup("nope")
    with pytest.raises(KeyError, match="unknown score 'nope'; choose one of: loss, "):
        compute("nope", ScoringContext(labels=None, probs=__import__("numpy").zeros((1, 2))))
    with pytest.raises(KeyError, match="unknown selection 'nope'; choose one of: hardest, easiest, random"):
        select("nope", None, [0], 1)
    for lookup in (check_method, serving.make_backend):
        with pytest.raises(ValueError, match="unknown .* 'nope'; choose one of: "):
            lookup("nope")
    with pytest.raises(InvalidInput, match="unknown format 'nope'; choose one of: jsonl, csv, parquet") as bad:
        get_format("nope")
    assert bad.value.status_code == 400
    with pytest.raises(llm.ProviderError, match="unknown provider 'nope'; choose one of: local, openai") as bad:
        llm.provider_class("nope")
    assert bad.value.kind == "config"


def test_the_names_lower_layers_accept_are_registered_above_them():
    """`tasks.choices` holds the names the task settings accept from apps above `tasks`; each registry holds them
    (exactly, for sampling), and the weak span scorer computes every span score."""
    import numpy as np

    from annotation.sampling import STRATEGIES
    from hardness.scores import SCORES
    from hardness.services import SPAN_SCORES
    from hardness.weak import WeakSpanScorer
    from tasks import choices

    assert tuple(STRATEGIES) == choices.SAMPLING and choices.DEFAULT_SAMPLING in STRATEGIES
    assert set(choices.SEEDING_SCORES) <= set(SCORES) and all(SCORES[n].needs_labels for n in choices.SEEDING_SCORES)
    assert SPAN_SCORES == choices.SPAN_SEEDING_SCORES and set(SPAN_SCORES) < set(choices.SEEDING_SCORES)
    span = WeakSpanScorer.__new__(WeakSpanScorer)
    span.span_loss, span.run_error_norms, span.head_gradnorm = np.ones(2), [np.ones(2)], np.ones(2)
    assert all(len(span.score(name)) == 2 for name in SPAN_SCORES)


def test_a_registry_refuses_to_drift_from_the_names_a_setting_accepts():
    from zoo.registry import Registry

    parts = Registry("sampling strategy")
    parts.register("least_used", object())
    with pytest.raises(RuntimeError, match="not registered: uniform"):
        parts.require(("least_used", "uniform"))
    parts.register("uniform", object())
    parts.register("newest", object())
    with pytest.raises(RuntimeError, match="registered but not accepted: newest"):
        parts.require(("least_used", "uniform"), exactly=True)
    parts.require(("least_used", "uniform"))  # a registry may hold more than a setting offers (hardness scores)


def enum_at(schema: dict, *path: str) -> list:
    node = schema
    for key in path:
        node = node["properties"][key]
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rpartition("/")[2]]
        elif "allOf" in node:
            node = schema["$defs"][node["allOf"][0]["$ref"].rpartition("/")[2]]
    return node["enum"]


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["sentiment", "nli", "hate_speech", "qa", "classification"])
def test_every_kinds_settings_offer_exactly_the_registries_names(kind):
    """The schema's enums, the settings form's choices and the validation of a stored config, for every kind."""
    from pydantic import ValidationError

    from tasks import choices
    from tasks.config_form import ConfigForm
    from tests.factories import TaskFactory
    from zoo.llm import PROVIDERS

    assert set(registry("task kinds")) == {"sentiment", "nli", "hate_speech", "qa", "classification", "chat"}
    task = TaskFactory(slug=f"reg-{kind.replace('_', '-')}", kind=kind)
    impl = task.kind_impl
    scores = choices.SPAN_SEEDING_SCORES if impl.answer_is_span else choices.SEEDING_SCORES
    expected = {
        ("sampling",): list(registry("context sampling")),
        ("explanation_method",): list(METHODS),
        ("seeding", "score"): list(scores),
        ("assistant", "provider", "provider"): list(PROVIDERS),
        ("opponent", "provider", "provider"): list(PROVIDERS),
    }
    schema = impl.config_class.model_json_schema()
    form = ConfigForm(task=task)
    for path, names in expected.items():
        assert enum_at(schema, *path) == names, path
        field = "__".join(path)
        if field in form.fields:
            assert [value for value, _ in form.fields[field].choices] == names, field
    assert {"sampling", "explanation_method", "seeding__score"} <= set(form.fields)
    for name in registry("context sampling"):
        assert impl.parse_config({"sampling": name}).sampling == name
    for name in scores:
        assert impl.parse_config({"seeding": {"score": name}}).seeding.score == name
    for name in PROVIDERS:
        assert impl.parse_config({"assistant": {"provider": {"provider": name}}}).assistant.provider.provider == name
    for bad in ({"sampling": "newest"}, {"seeding": {"score": "datamap_variability"}},
                {"opponent": {"provider": {"provider": "gpt"}}}):
        with pytest.raises(ValidationError):
            impl.parse_config(bad)


def test_the_openapi_kind_and_head_enums_are_their_registries(api, db):
    schema = api.get("/api/schema/?format=json").json()["components"]["schemas"]
    assert sorted(schema["KindEnum"]["enum"]) == sorted(registry("task kinds"))
    assert sorted(schema["HeadEnum"]["enum"]) == sorted(registry("model heads"))


def test_model_fields_and_pipeline_options_follow_their_registries():
    from modelzoo.models import ModelVersion
    from rounds.options import BadOptions, PipelineOptions, pipeline_options

    assert [v for v, _ in ModelVersion._meta.get_field("head").choices] == list(registry("model heads"))
    recipe = PipelineOptions.model_json_schema()["properties"]["recipe"]
    assert recipe["enum"] == list(registry("training recipes"))
    assert all(f'"{name}"' in recipe["description"] for name in registry("training recipes"))
    for name in registry("training recipes"):
        assert pipeline_options({"recipe": name}).recipe == name
    with pytest.raises(BadOptions, match="recipe"):
        pipeline_options({"recipe": "distilled"})


def test_command_options_follow_their_registries():
    from django.core.management import load_command_class

    def choices_of(app: str, command: str, option: str) -> list:
        parser = load_command_class(app, command).create_parser("manage.py", command)
        [action] = [a for a in parser._actions if option in a.option_strings]
        return list(action.choices)

    assert choices_of("hardness", "seed_round", "--score") == list(__import__("tasks.choices").choices.SEEDING_SCORES)
    assert choices_of("modelzoo", "demo_models", "--recipe") == ["auto", *registry("training recipes")]
    assert choices_of("exports", "export_round", "--format") == [*FORMATS, "bundle"]


def test_the_site_settings_accept_every_backend_and_name_the_choices_for_another():
    import subprocess
    import sys

    script = ("import os; os.environ['MODEL_BACKEND'] = os.environ['PICK']; "
              "import dynabench_site.settings as s; print(s.MODEL_BACKEND)")
    for name in [*registry("serving backends"), "onnx"]:
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PICK": name}, timeout=120)
        if name == "onnx":
            assert done.returncode != 0 and all(n in done.stderr for n in registry("serving backends"))
        else:
            assert done.returncode == 0 and done.stdout.strip() == name
