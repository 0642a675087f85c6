"""The library's ZOO_* flags (zoo.flags): a value it does not understand raises, naming the variable."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from zoo import flags, trunk

ROOT = Path(__file__).resolve().parents[2]


def test_a_typo_in_a_flag_raises_with_its_name_instead_of_meaning_on(monkeypatch):
    monkeypatch.setenv("ZOO_FIRST_TOKEN", "of")
    with pytest.raises(ValueError, match="ZOO_FIRST_TOKEN='of'"):
        trunk.first_token_enabled()


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("on", True), ("Yes", True), ("TRUE", True),
                                                 ("0", False), ("off", False), ("no", False), ("False", False),
                                                 ("", True), (None, True)])
def test_flags_accept_the_usual_spellings_and_default_when_unset(value, expected):
    environ = {} if value is None else {"ZOO_SHARE_TRUNK": value}
    assert flags.flag("ZOO_SHARE_TRUNK", True, environ=environ) is expected


def test_choices_and_integers_refuse_what_they_do_not_understand():
    assert flags.choice("ZOO_OCCLUSION_PRECISION", "auto", ("auto", "bf16", "fp32"), aliases={"float32": "fp32"},
                        environ={"ZOO_OCCLUSION_PRECISION": "Float32"}) == "fp32"
    with pytest.raises(ValueError, match="ZOO_OCCLUSION_PRECISION='bf61'"):
        flags.choice("ZOO_OCCLUSION_PRECISION", "auto", ("auto", "bf16", "fp32"),
                     environ={"ZOO_OCCLUSION_PRECISION": "bf61"})
    assert flags.integer("ZOO_TORCH_THREADS", 1, environ={}) == 1
    with pytest.raises(ValueError, match="ZOO_TORCH_THREADS='two'"):
        flags.integer("ZOO_TORCH_THREADS", 1, environ={"ZOO_TORCH_THREADS": "two"})
    with pytest.raises(ValueError, match="ZOO_TORCH_THREADS=-1"):
        flags.integer("ZOO_TORCH_THREADS", 1, minimum=0, environ={"ZOO_TORCH_THREADS": "-1"})


def test_every_zoo_flag_is_read_through_the_readers_and_listed_and_documented():
    """No ZOO_* variable is read from os.environ directly; each one named is listed in zoo.flags.FLAGS and
    documented in docs/modelzoo.md."""
    named, direct = set(), []
    for path in [*sorted((ROOT / "zoo").rglob("*.py")), ROOT / "torchserve" / "handler.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("ZOO_") \
                    and node.value.isupper() and node.value != "ZOO_FILE":
                named.add(node.value)
            key = node.args[0] if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in {"get", "getenv"} and node.args else node.slice if isinstance(node, ast.Subscript) else None
            if isinstance(key, ast.Constant) and str(key.value).startswith("ZOO_"):
                direct.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert named <= set(flags.FLAGS), sorted(named - set(flags.FLAGS))
    assert not direct, f"read ZOO_* flags with zoo.flags (flag, choice, integer): {direct}"
    doc = (ROOT / "docs" / "modelzoo.md").read_text(encoding="utf-8")
    assert [name for name in flags.FLAGS if f"`{name}`" not in doc] == []


def test_the_hub_stays_offline_unless_the_environment_says_otherwise(monkeypatch):
    import zoo

    for name in zoo.HUB_OFFLINE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    zoo.stay_offline()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "0"
