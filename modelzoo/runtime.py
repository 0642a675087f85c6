"""Load a model artifact and predict / explain with it.

No Django imports: this module (with `explain.py`) is packed into every TorchServe archive, so the
in-process backend and the TorchServe handler run exactly the same code.

An artifact folder holds `config.json` + `model.safetensors` (Hugging Face layout), the tokenizer files,
`zoo.json` (head, labels, max length) and, from training, `label_map.json`, `training.json`, `metrics.json`.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch  # noqa: E402
from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification, AutoTokenizer  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.disable_progress_bar()  # transformers 5 draws a bar for every load and save

try:
    from modelzoo import explain as _explain
except ImportError:  # inside a TorchServe archive the modules sit side by side
    import explain as _explain  # type: ignore[no-redef]

ZOO_FILE = "zoo.json"
MAX_ANSWER_TOKENS = 30
N_BEST = 10
HEAD_CLASSES = {"classification": AutoModelForSequenceClassification, "qa": AutoModelForQuestionAnswering}


def configure_threads() -> int:
    """Torch intra-op threads for this process: ZOO_TORCH_THREADS, default 1. On a small shared machine two
    threads spin-wait for each other whenever one is descheduled: measured 12x slower forward passes under
    load than one thread. 0 leaves torch's own choice."""
    wanted = int(os.environ.get("ZOO_TORCH_THREADS", "1"))
    if wanted > 0 and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return torch.get_num_threads()


def read_meta(path: Path | str) -> dict[str, Any]:
    return json.loads((Path(path) / ZOO_FILE).read_text(encoding="utf-8"))


def load_model(path: Path | str, head: str) -> torch.nn.Module:
    model = HEAD_CLASSES[head].from_pretrained(str(path))
    return model.eval()


class Predictor:
    """One loaded model. Calls are serialised by a lock: explanations hook the embedding layer."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, meta: dict[str, Any]):
        self.model, self.tokenizer, self.meta = model.eval(), tokenizer, meta
        self.head: str = meta["head"]
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
        if self.head == "qa":
            return model_input["question"], model_input["context"]
        return model_input["text"], model_input.get("text_pair")

    def encode(self, inputs: list[dict[str, str]], offsets: bool = False) -> Any:
        pairs = [self.segments(i) for i in inputs]
        firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        truncation = "only_second" if self.head == "qa" else True
        kwargs = {"truncation": truncation, "max_length": self.max_length, "return_offsets_mapping": offsets}
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
            encoding = self.encode(inputs, offsets=self.head == "qa")
            if isinstance(encoding, list):
                return [self.predict([i])[0] for i in inputs]
            output = self.model(**self.model_args(encoding))
            if self.head == "qa":
                return [self._span(encoding, output, row, inp) for row, inp in enumerate(inputs)]
            return [self._label(p) for p in torch.softmax(output.logits.float(), dim=-1)]

    def _label(self, probs: torch.Tensor) -> dict[str, Any]:
        values = probs.tolist()
        best = max(range(len(values)), key=values.__getitem__)
        return {"label": self.labels[best], "probs": dict(zip(self.labels, values, strict=True))}

    def _span(self, encoding: Any, output: Any, row: int, model_input: dict[str, str]) -> dict[str, Any]:
        candidates = best_spans(
            output.start_logits[row], output.end_logits[row], encoding.sequence_ids(row),
            encoding["offset_mapping"][row].tolist(), model_input["context"],
        )
        best = candidates[0] if candidates else {"text": "", "start": 0, "end": 0, "score": 0.0}
        return {**best, "candidates": candidates}

    # -- explanation ------------------------------------------------------------------------------

    def explain(self, model_input: dict[str, str], method: str = "input_x_gradient", target: Any = None) -> dict[str, Any]:
        """Word attributions for one input. `target`: a label (classification) or {"start","end"} character
        offsets (QA); by default the model's own prediction."""
        if target is None:
            prediction = self.predict([model_input])[0]
            target = prediction["label"] if self.head == "classification" else prediction
        with self.lock:
            return _explain.explain(self, model_input, method, target)


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, sequence_ids: list[int | None],
               offsets: list[list[int]], context: str, n_best: int = N_BEST) -> list[dict[str, Any]]:
    """Top spans inside the passage, scored p(start) * p(end) over passage tokens."""
    passage = [i for i, s in enumerate(sequence_ids) if s == 1]
    if not passage:
        return []
    index = torch.tensor(passage)
    log_start = torch.log_softmax(start_logits.float()[index], dim=0)
    log_end = torch.log_softmax(end_logits.float()[index], dim=0)
    k = min(20, len(passage))
    spans = []
    for si in torch.topk(log_start, k).indices.tolist():
        for ei in torch.topk(log_end, k).indices.tolist():
            if si <= ei < si + MAX_ANSWER_TOKENS:
                spans.append((float(log_start[si] + log_end[ei]), passage[si], passage[ei]))
    spans.sort(reverse=True)
    out = []
    for logp, s, e in spans[:n_best]:
        start, end = offsets[s][0], offsets[e][1]
        out.append({"text": context[start:end], "start": start, "end": end, "score": float(torch.exp(torch.tensor(logp)))})
    return out
