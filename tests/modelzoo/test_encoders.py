"""The encoder registry: what a name or folder means, and what is refused, with the reason."""

from __future__ import annotations

import json

import pytest

from zoo import encoders, tiny


def test_the_default_is_the_packaged_minilm():
    source = encoders.resolve(None)
    assert source.name == "all-MiniLM-L6-v2" and source.family == "bert"
    assert (source.path / "model.safetensors").is_file()
    assert encoders.resolve("") == source == encoders.resolve("all-MiniLM-L6-v2")


@pytest.mark.parametrize("family", encoders.FAMILIES)
def test_a_tiny_checkpoint_of_each_family_is_a_usable_encoder_folder(tmp_path, family):
    folder = tiny.tiny_checkpoint(family, tmp_path / family)
    source = encoders.resolve(str(folder))
    assert source.family == family and source.path == folder.resolve()
    tokenizer = source.tokenizer()
    encoded = tokenizer("The food was great.", "A pair.")
    pieces = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    assert tokenizer.unk_token not in pieces  # the family's own tokenizer reads plain English
    assert source.config().model_type == family


def test_an_unknown_name_is_refused_with_the_names_to_choose_from():
    with pytest.raises(encoders.EncoderError) as err:
        encoders.resolve("roberta-large")
    message = str(err.value)
    assert "unknown encoder 'roberta-large'" in message and "all-MiniLM-L6-v2" in message and "tiny-roberta" in message


def test_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(encoders.EncoderError, match="does not exist"):
        encoders.resolve(str(tmp_path / "nowhere"))


def test_a_folder_without_config_is_refused(tmp_path):
    with pytest.raises(encoders.EncoderError, match="no config.json"):
        encoders.resolve(str(tmp_path))


def test_a_family_the_platform_does_not_run_is_refused(tmp_path):
    folder = tiny.tiny_checkpoint("bert", tmp_path / "gpt")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(encoders.EncoderError, match="model_type 'gpt2' is not a family"):
        encoders.resolve(str(folder))


def test_a_config_that_would_load_code_is_refused(tmp_path):
    folder = tiny.tiny_checkpoint("bert", tmp_path / "code")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "evil.Model"}}))
    with pytest.raises(encoders.EncoderError, match="auto_map"):
        encoders.resolve(str(folder))


def test_pickled_weights_are_refused_and_named(tmp_path):
    folder = tiny.tiny_checkpoint("bert", tmp_path / "pickle")
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(encoders.EncoderError, match="pytorch_model.bin: pickled weights are not loaded"):
        encoders.resolve(str(folder))


def test_a_folder_without_tokenizer_is_refused(tmp_path):
    folder = tiny.tiny_checkpoint("roberta", tmp_path / "notok")
    for name in ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json"):
        (folder / name).unlink(missing_ok=True)
    with pytest.raises(encoders.EncoderError, match="no tokenizer"):
        encoders.resolve(str(folder))


def test_mpnet_not_installed_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_MPNET_DIR", str(tmp_path / "absent"))
    with pytest.raises(encoders.EncoderError, match="make mpnet"):
        encoders.resolve("all-mpnet-base-v2")
