"""Load a model artifact and predict / explain with it.

No Django imports: this module (with `explain.py` and the `heads` package) is packed into every TorchServe
archive, so the in-process backend and the TorchServe handler run exactly the same code. What depends on the
kind of output (QA spans, class probabilities) is the model's head spec (`zoo.heads`). The members of an
ensemble that share a frozen trunk (the cached-top recipe's) run it once per batch: `ensemble(predictors)`
(`zoo.trunk`).

Every encoder family of `zoo.encoders.FAMILIES` runs here alike: the model takes only the tokenizer outputs its
forward and config have (`accepted_inputs`: no token types for RoBERTa, XLM-R, DeBERTa-v2/v3, DistilBERT, MPNet),
and offsets are cleaned to the text's own characters (`zoo.offsets`) so that explanations credit words and QA
spans hold no stray space. Device policy: `Predictor.load` puts the model on `zoo.device.resolve()` (ZOO_DEVICE;
CUDA asked for and absent: `DeviceError`), inputs follow it, a GPU forward autocasts (`zoo.device.amp_dtype`), and
answers are Python values.

An artifact folder holds `config.json` + `model.safetensors` (Hugging Face layout), the tokenizer files,
`zoo.json` (head, labels, max length) and, from training, `label_map.json`, `training.json`, `metrics.json`.
"""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any

from zoo import stay_offline

stay_offline()  # before transformers is imported

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from zoo import device as _device  # noqa: E402
from zoo import explain as _explain  # noqa: E402
from zoo import offsets as _offsets  # noqa: E402
from zoo.flags import integer  # noqa: E402
from zoo.heads import get_head  # noqa: E402
from zoo.heads.base import HeadSpec  # noqa: E402
from zoo.trunk import SharedEnsemble  # noqa: E402

hf_logging.disable_progress_bar()  # transformers 5 draws a bar for every load and save

ZOO_FILE = "zoo.json"


def configure_threads() -> int:
    """Torch intra-op threads for this process: ZOO_TORCH_THREADS, default 1. On a small shared machine two
    threads spin-wait for each other whenever one is descheduled: measured 12x slower forward passes under
    load than one thread. 0 leaves torch's own choice."""
    wanted = integer("ZOO_TORCH_THREADS", 1, minimum=0)
    if wanted > 0 and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return torch.get_num_threads()


def read_meta(path: Path | str) -> dict[str, Any]:
    return json.loads((Path(path) / ZOO_FILE).read_text(encoding="utf-8"))


def load_model(path: Path | str, head: str, device: torch.device | None = None) -> torch.nn.Module:
    """The artifact's model in eval mode, on `device` (None: where it loads, the CPU)."""
    model = get_head(head).auto_model.from_pretrained(str(path))
    if device is not None and device.type != "cpu":
        model = model.to(device)
    return model.eval()


def accepted_inputs(model: torch.nn.Module) -> tuple[str, ...]:
    """The tokenizer outputs this model takes: input_ids, attention_mask, and token_type_ids only where its forward
    takes them and its config has more than one token type (RoBERTa and XLM-R have one, DeBERTa-v2/v3 none,
    DistilBERT and MPNet take none: a pair's non-zero types would index past the table, or mean nothing)."""
    names = ["input_ids", "attention_mask"]
    try:
        takes = "token_type_ids" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        takes = True
    if takes and int(getattr(model.config, "type_vocab_size", 2) or 0) > 1:
        names.append("token_type_ids")
    return tuple(names)


class Predictor:
    """One loaded model. Calls are serialised by a lock: explanations hook the embedding layer.

    The model computes where its weights are (`device`: `load` puts them on `zoo.device.resolve()`, ZOO_DEVICE);
    inputs are moved there, a GPU forward autocasts to `device.amp_dtype` (bfloat16, else float16), and what
    comes back (predictions, explanations) is plain Python values computed on the CPU side."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, meta: dict[str, Any]):
        self.model, self.tokenizer, self.meta = model.eval(), tokenizer, meta
        self.head: str = meta["head"]
        self.spec: HeadSpec = get_head(self.head)
        self.labels: list[str] = list(meta.get("labels", []))
        self.max_length: int = int(meta.get("max_length", 128))
        self.lock = threading.RLock()
        self.device: torch.device = next(model.parameters()).device
        self.amp_dtype: torch.dtype | None = _device.amp_dtype(self.device)
        self.input_names: tuple[str, ...] = accepted_inputs(model)
        self.clean_offsets: bool = _offsets.needs_cleaning(tokenizer)
        self.autocast_ok = True  # False once a lower-precision forward failed (DeBERTa v1): float32 from then on

    @classmethod
    def load(cls, path: Path | str, device: torch.device | str | None = None) -> Predictor:
        """The artifact at `path` on `device` (default: ZOO_DEVICE through `zoo.device.resolve`; CUDA asked for
        and absent raises `zoo.device.DeviceError`)."""
        where = _device.resolve() if device is None else torch.device(device)
        configure_threads()
        meta = read_meta(path)
        return cls(load_model(path, meta["head"], where), AutoTokenizer.from_pretrained(str(path)), meta)

    # -- encoding ---------------------------------------------------------------------------------

    def segments(self, model_input: dict[str, str]) -> tuple[str, str | None]:
        return self.spec.segments(model_input)

    def encode(self, inputs: list[dict[str, str]], offsets: bool = False) -> Any:
        pairs = [self.segments(i) for i in inputs]
        firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        kwargs = {"truncation": self.spec.truncation, "max_length": self.max_length, "return_offsets_mapping": offsets}
        if all(s is not None for s in seconds):
            encoding = self.tokenizer(firsts, seconds, padding=True, return_tensors="pt", **kwargs)
        elif all(s is None for s in seconds):
            encoding = self.tokenizer(firsts, padding=True, return_tensors="pt", **kwargs)
        else:
            return [self.encode([i], offsets) for i in inputs]  # mixed pairs: caller handles a list
        if offsets and self.clean_offsets:
            self._clean(encoding, pairs)
        return encoding

    @staticmethod
    def _clean(encoding: Any, pairs: list[tuple[str, str | None]]) -> None:
        """Offsets on the text's own characters (`zoo.offsets`: SentencePiece and byte-level BPE pieces). A piece
        left with no character of its own (a lone "▁" or "Ġ") belongs to no segment in `sequence_ids`, as a
        special token does: no word is credited to it and no QA span starts or ends on it."""
        rows = encoding["offset_mapping"].tolist()
        original = [encoding.sequence_ids(r) for r in range(len(rows))]
        cleaned = [_offsets.clean(row, original[r], pairs[r]) for r, row in enumerate(rows)]
        encoding["offset_mapping"] = torch.tensor(cleaned, dtype=encoding["offset_mapping"].dtype)
        segments = [[None if s is None or e <= b else s for s, (b, e) in zip(seq, row, strict=True)]
                    for seq, row in zip(original, cleaned, strict=True)]
        encoding.sequence_ids = lambda batch_index=0: list(segments[batch_index])

    def model_inputs(self, encoding: Any) -> dict[str, torch.Tensor]:
        """The encoding's tensors this model takes (`accepted_inputs`), where the tokenizer left them (the CPU)."""
        return {k: v for k, v in encoding.items() if k in self.input_names}

    def model_args(self, encoding: Any) -> dict[str, torch.Tensor]:
        """`model_inputs` on the model's device."""
        return _device.to_device(self.model_inputs(encoding), self.device)

    # -- prediction -------------------------------------------------------------------------------

    def predict(self, inputs: list[dict[str, str]]) -> list[dict[str, Any]]:
        if not inputs:
            return []
        with self.lock, torch.inference_mode():
            encoding = self.encode(inputs, offsets=self.spec.needs_offsets)
            if isinstance(encoding, list):
                return [self.predict([i])[0] for i in inputs]
            if self.device.type == "cpu":
                output = self.model(**self.model_args(encoding))
            else:
                output = _device.to_cpu(self.forward_amp(self.model_args(encoding)))
            return self.spec.decode(encoding, output, inputs, self.labels)

    def forward_amp(self, args: dict[str, torch.Tensor]) -> Any:
        """The model's output on its device, autocast to the device's precision (GPU) unless the model cannot
        run in it (a RuntimeError other than out-of-memory: float32 from then on)."""
        dtype = self.amp_dtype if self.autocast_ok else None
        try:
            with _device.autocast(self.device, dtype):
                return self.model(**args)
        except RuntimeError as exc:
            if dtype is None or isinstance(exc, torch.OutOfMemoryError):
                raise
            self.autocast_ok = False
            return self.model(**args)

    # -- explanation ------------------------------------------------------------------------------

    def explain(self, model_input: dict[str, str], method: str = _explain.DEFAULT_METHOD,
                target: Any = None) -> dict[str, Any]:
        """Word attributions of this one model for one input (`explain.METHODS`; default word occlusion).
        `target`: what the head explains (a label, or {"start","end"} character offsets for QA); by default
        the model's own prediction. An ensemble's answer is explained by `explain_ensemble`."""
        _explain.check_method(method)
        if target is None:
            target = self.spec.target_of(self.predict([model_input])[0])
        with self.lock:
            return _explain.explain(self, model_input, method, target)


def ensemble(predictors: list[Predictor], share: bool | None = None) -> SharedEnsemble:
    """The members of one ensemble, with the frozen trunk they share found by comparing their tensors
    (`zoo.trunk`; `share=False` or ZOO_SHARE_TRUNK=0: every member runs its own full forward).
    `.predict(inputs)` -> [member][input]; `explain_ensemble` takes it as the list of members."""
    return SharedEnsemble(predictors, share)


def explain_ensemble(predictors: list[Predictor], model_input: dict[str, str], method: str = _explain.DEFAULT_METHOD,
                     target: Any = None) -> dict[str, Any]:
    """Word attributions of the ensemble's answer over all its members (`explain.explain_ensemble`)."""
    return _explain.explain_ensemble(predictors, model_input, method, target)

