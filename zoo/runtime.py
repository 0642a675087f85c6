"""Load a model artifact and predict / explain with it.

No Django imports: this module (with `explain.py` and the `heads` package) is packed into every TorchServe
archive, so the in-process backend and the TorchServe handler run exactly the same code. What depends on the
kind of output (QA spans, class probabilities) is the model's head spec (`zoo.heads`). The members of an
ensemble that share a frozen trunk (the cached-top recipe's) run it once per batch: `ensemble(predictors)`
(`zoo.trunk`).

An artifact folder holds `config.json` + `model.safetensors` (Hugging Face layout), the tokenizer files,
`zoo.json` (head, labels, max length) and, from training, `label_map.json`, `training.json`, `metrics.json`.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from zoo import stay_offline

stay_offline()  # before transformers is imported

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from zoo import explain as _explain  # noqa: E402
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


def load_model(path: Path | str, head: str) -> torch.nn.Module:
    model = get_head(head).auto_model.from_pretrained(str(path))
    return model.eval()


class Predictor:
    """One loaded model. Calls are serialised by a lock: explanations hook the embedding layer."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, meta: dict[str, Any]):
        self.model, self.tokenizer, self.meta = model.eval(), tokenizer, meta
        self.head: str = meta["head"]
        self.spec: HeadSpec = get_head(self.head)
        self.labels: list[str] = list(meta.get("labels", []))
        self.max_length: int = int(meta.get("max_length", 128))
        self.lock = threading.RLock()

    @classmethod
    def load(cls, path: Path | str) -> Predictor:
        configure_threads()
        meta = read_meta(path)
        return cls(load_model(path, meta["head"]), AutoTokenizer.from_pretrained(str(path)), meta)

    # -- encoding ---------------------------------------------------------------------------------

    def segments(self, model_input: dict[str, str]) -> tuple[str, str | None]:
        return self.spec.segments(model_input)

    def encode(self, inputs: list[dict[str, str]], offsets: bool = False) -> Any:
        pairs = [self.segments(i) for i in inputs]
        firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        kwargs = {"truncation": self.spec.truncation, "max_length": self.max_length, "return_offsets_mapping": offsets}
        if all(s is not None for s in seconds):
            return self.tokenizer(firsts, seconds, padding=True, return_tensors="pt", **kwargs)
        if all(s is None for s in seconds):
            return self.tokenizer(firsts, padding=True, return_tensors="pt", **kwargs)
        return [self.encode([i], offsets) for i in inputs]  # mixed pairs: caller handles a list

    @staticmethod
    def model_args(encoding: Any) -> dict[str, torch.Tensor]:
        return {k: v for k, v in encoding.items() if k in ("input_ids", "attention_mask", "token_type_ids")}

    # -- prediction -------------------------------------------------------------------------------

    def predict(self, inputs: list[dict[str, str]]) -> list[dict[str, Any]]:
        if not inputs:
            return []
        with self.lock, torch.inference_mode():
            encoding = self.encode(inputs, offsets=self.spec.needs_offsets)
            if isinstance(encoding, list):
                return [self.predict([i])[0] for i in inputs]
            output = self.model(**self.model_args(encoding))
            return self.spec.decode(encoding, output, inputs, self.labels)

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

