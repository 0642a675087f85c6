"""TorchServe handler for model-zoo archives (classification and QA; predictions and explanations).

Each archive carries this file, the artifact (weights, config, tokenizer, zoo.json) and the zoo's serving
code as a `modelzoo` package (`runtime.py`, `explain.py`, `heads/`; see modelzoo/archive.py), so TorchServe
runs the very code the in-process backend runs. No Django here or in what it imports.

Requests (JSON):
  POST /predictions/<model>   {"inputs": [model_input, ...]}                 -> {"predictions": [...]}
  POST /explanations/<model>  {"input": model_input, "method": ..., "target": ...} -> an explanation
Requests that TorchServe batches together are answered with one forward pass.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ts.torch_handler.base_handler import BaseHandler


class ZooHandler(BaseHandler):
    def initialize(self, context: Any) -> None:
        model_dir = context.system_properties["model_dir"]
        if model_dir not in sys.path:
            sys.path.insert(0, model_dir)
        # Importable only now: the archive's own modelzoo package sits in model_dir.
        from modelzoo.runtime import Predictor, configure_threads

        configure_threads()  # ZOO_TORCH_THREADS, default 1: one worker per core

        self.predictor = Predictor.load(model_dir)
        self.context = context
        self.initialized = True

    def handle(self, data: list[dict[str, Any]], context: Any) -> list[Any]:
        self.context = context
        bodies, replies = [], [None] * len(data)
        for i, request in enumerate(data):
            try:
                bodies.append(_body(request))
            except ValueError as exc:
                bodies.append(None)
                replies[i] = self._error(i, 400, str(exc))
        self._explain_each(bodies, replies, context)
        self._predict_together(bodies, replies)
        return replies

    def _explain_each(self, bodies: list[Any], replies: list[Any], context: Any) -> None:
        for i, body in enumerate(bodies):
            if body is None or not _is_explain(context, i, body):
                continue
            try:
                replies[i] = self.predictor.explain(body["input"], body.get("method", "input_x_gradient"), body.get("target"))
            except (KeyError, ValueError, TypeError) as exc:
                replies[i] = self._error(i, 400, f"cannot explain this input: {exc!r}")
            bodies[i] = None

    def _predict_together(self, bodies: list[Any], replies: list[Any]) -> None:
        owners, inputs = [], []
        for i, body in enumerate(bodies):
            if body is not None:
                items = body.get("inputs", [body]) if isinstance(body, dict) else body
                owners += [i] * len(items)
                inputs += items
        if not inputs:
            return
        try:
            predictions = self.predictor.predict(inputs)
        except (KeyError, ValueError, TypeError) as exc:
            for i in set(owners):
                replies[i] = self._error(i, 400, f"cannot predict this input: {exc!r}")
            return
        for i in dict.fromkeys(owners):
            replies[i] = {"predictions": [p for o, p in zip(owners, predictions, strict=True) if o == i]}

    def _error(self, index: int, status: int, message: str) -> dict[str, str]:
        self.context.set_response_status(code=status, phrase=message[:200], idx=index)
        return {"error": message}


def _body(request: dict[str, Any]) -> Any:
    raw = request.get("body", request.get("data"))
    if isinstance(raw, bytes | bytearray):
        raw = raw.decode("utf-8")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the body is not JSON: {exc.msg}") from None
    if not isinstance(raw, dict | list):
        raise ValueError("the body must be a JSON object")
    return raw


def _is_explain(context: Any, index: int, body: Any) -> bool:
    header = context.get_request_header(index, "explain") if context else None
    return header == "True" or (isinstance(body, dict) and "input" in body and "inputs" not in body)
