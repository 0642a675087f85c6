"""TorchServe handler for model-zoo archives (classification and QA; predictions and explanations).

An ensemble archive (zoo/archive.py `build_ensemble_archive`) holds every member of a round's ensemble
(`members/<i>/`: weights, config, tokenizer, zoo.json; `ensemble.json` names them in order) and the model
library whole (the `zoo` package), so TorchServe runs the very code the in-process backend runs, and one
worker process (one Python runtime, one tokenizer shared by members whose tokenizer files are the same)
answers all members in one request. A single-model archive (`build_mar`) is served as an ensemble of one.
No Django here or in what it imports.

Requests (JSON):
  POST /predictions/<model>   {"inputs": [model_input, ...], "members": [i, ...]?}
        -> {"predictions": [[per input] per member], "members": [model version id per member]}
  POST /explanations/<model>  {"input": model_input, "method": ..., "target": ..., "member": i}
        -> that member's explanation (runtime.Predictor.explain)
  POST /explanations/<model>  {"input": model_input, "method": ..., "target": ..., "ensemble": true, "members": [...]?}
        -> zoo.explain.explain_ensemble(predictors, ...) (when the packed serving code has it)
`members` (indices into ensemble.json, default all) lets a caller ask part of the ensemble (evaluating one
member). Requests that TorchServe batches together are answered with one forward pass per member; members
run in parallel threads (ZOO_MEMBER_THREADS, default min(members, CPUs)), one torch thread each.
Members that share a frozen trunk (the cached-top recipe's: bit-identical embeddings and lower layers, found at
load by comparing the tensors, `zoo.trunk`) run it once per batch, then their own top layers and heads in
those threads; `"share_trunk": false` in ensemble.json or ZOO_SHARE_TRUNK=0 turns that off.

Device: the worker computes on the GPU TorchServe gives it (`gpu_id` in the context's system properties) when
ZOO_DEVICE is auto or cuda, on the CPU with ZOO_DEVICE=cpu (`zoo.device.pinned`); ZOO_DEVICE=cuda where torch
sees no CUDA fails the worker's start with `zoo.device.DeviceError` saying so (`zoo.device.check`), never a
silent CPU run. Inputs go to that device, a GPU forward autocasts (bfloat16, else float16), answers are the
same JSON. Any encoder family the library runs (`zoo.encoders.FAMILIES`) is served alike.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ts.torch_handler.base_handler import BaseHandler

ENSEMBLE_FILE = "ensemble.json"
log = logging.getLogger(__name__)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "vocab.json",
                   "merges.txt", "spm.model", "sentencepiece.bpe.model", "spiece.model", "added_tokens.json")


class ZooHandler(BaseHandler):
    def initialize(self, context: Any) -> None:
        model_dir = context.system_properties["model_dir"]
        if model_dir not in sys.path:
            sys.path.insert(0, model_dir)
        # Importable only now: the archive's own copy of the library (`zoo/`) sits in model_dir.
        from zoo import device as zoo_device
        from zoo import explain as zoo_explain
        from zoo.flags import integer
        from zoo.runtime import Predictor, configure_threads, load_model, read_meta
        from zoo.trunk import SharedEnsemble, sharing_enabled

        self.device = worker_device(zoo_device, context)  # DeviceError here: the worker does not start
        log.info("zoo worker device: %s", zoo_device.describe(self.device))
        configure_threads()  # ZOO_TORCH_THREADS, default 1: parallelism comes from members and workers
        _limit_malloc_arenas()
        self.explain_module = zoo_explain
        listing, share = _members(Path(model_dir))
        tokenizers: dict[str, Any] = {}
        self.predictors, self.member_ids = [], []
        for member in listing:
            folder = Path(model_dir) / member["dir"]
            key = _tokenizer_key(folder)
            if key not in tokenizers:
                from transformers import AutoTokenizer

                tokenizers[key] = AutoTokenizer.from_pretrained(str(folder))
            meta = read_meta(folder)
            self.predictors.append(Predictor(load_model(folder, meta["head"], self.device), tokenizers[key], meta))
            self.member_ids.append(member.get("id"))
        self.ensemble = SharedEnsemble(self.predictors, share=share and sharing_enabled())
        wanted = integer("ZOO_MEMBER_THREADS", 0, minimum=0) or min(len(self.predictors), os.cpu_count() or 1)
        self.pool = ThreadPoolExecutor(max_workers=max(1, wanted), thread_name_prefix="member") if wanted > 1 else None
        if self.ensemble is not None:
            self.ensemble.pool = self.pool  # members' top layers in parallel after their shared trunk
            log.info("ensemble members and shared trunk layers: %s", self.ensemble.describe())
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

    # -- explanations -----------------------------------------------------------------------------

    def _explain_each(self, bodies: list[Any], replies: list[Any], context: Any) -> None:
        for i, body in enumerate(bodies):
            if body is None or not _is_explain(context, i, body):
                continue
            bodies[i] = None
            try:
                replies[i] = self._explain(body)
            except LookupError as exc:
                replies[i] = self._error(i, 400, str(exc))
            except (KeyError, ValueError, TypeError) as exc:
                replies[i] = self._error(i, 400, f"cannot explain this input: {exc!r}")

    def _explain(self, body: dict[str, Any]) -> Any:
        method = body.get("method", self.explain_module.DEFAULT_METHOD)  # the archive's own zoo.explain_methods
        target = body.get("target")
        if body.get("ensemble"):
            explain_ensemble = getattr(self.explain_module, "explain_ensemble", None)
            if explain_ensemble is None:
                raise LookupError("this archive's serving code cannot explain an ensemble")
            indices = self._indices(body.get("members"))
            predictors = (self.ensemble.subset(indices) if self.ensemble is not None
                          else [self.predictors[m] for m in indices])
            return explain_ensemble(predictors, body["input"], method, target)
        [member] = self._indices([body.get("member", 0)])
        return self.predictors[member].explain(body["input"], method, target)

    # -- predictions ------------------------------------------------------------------------------

    def _predict_together(self, bodies: list[Any], replies: list[Any]) -> None:
        wanted: list[tuple[int, list[dict[str, Any]], list[int]]] = []  # (request, inputs, member indices)
        for i, body in enumerate(bodies):
            if body is None:
                continue
            try:
                items = body.get("inputs", [body]) if isinstance(body, dict) else body
                members = self._indices(body.get("members") if isinstance(body, dict) else None)
                if not isinstance(items, list):
                    raise LookupError("'inputs' must be a list of model inputs")
            except LookupError as exc:
                replies[i] = self._error(i, 400, str(exc))
                continue
            wanted.append((i, items, members))
        if not wanted:
            return
        # One forward per member over the inputs of every request that asks it; members asked by the same
        # requests get the same batch, so those that share a trunk run it once.
        per_member: dict[int, list[tuple[int, list[dict[str, Any]]]]] = {}
        for i, items, members in wanted:
            for m in members:
                per_member.setdefault(m, []).append((i, items))
        by_asks: dict[tuple[int, ...], list[int]] = {}
        for m, asks in per_member.items():
            by_asks.setdefault(tuple(i for i, _ in asks), []).append(m)
        results: dict[int, Any] = {}
        for members in by_asks.values():
            results.update(self._run(members, [x for _, items in per_member[members[0]] for x in items]))
        answers: dict[tuple[int, int], list[Any]] = {}
        for m, asks in per_member.items():
            outcome, start = results[m], 0
            for i, items in asks:
                answers[(i, m)] = outcome if isinstance(outcome, Exception) else outcome[start:start + len(items)]
                start += len(items)
        for i, _items, members in wanted:
            failed = next((answers[(i, m)] for m in members if isinstance(answers[(i, m)], Exception)), None)
            if failed is not None:
                replies[i] = self._error(i, 400, f"cannot predict this input: {failed!r}")
            else:
                replies[i] = {"predictions": [answers[(i, m)] for m in members],
                              "members": [self.member_ids[m] for m in members]}

    def _run(self, members: list[int], inputs: list[dict[str, Any]]) -> dict[int, Any]:
        """{member: its predictions of `inputs`, or the exception that input raised}."""
        if self.ensemble is not None:
            try:
                return dict(zip(members, self.ensemble.predict(inputs, members), strict=True))
            except (KeyError, ValueError, TypeError) as exc:
                return {m: exc for m in members}

        def one(m: int) -> Any:
            try:
                return self.predictors[m].predict(inputs)
            except (KeyError, ValueError, TypeError) as exc:
                return exc

        if self.pool is None or len(members) == 1:
            return {m: one(m) for m in members}
        futures = {m: self.pool.submit(one, m) for m in members}
        return {m: f.result() for m, f in futures.items()}

    def _indices(self, members: Any) -> list[int]:
        if members is None:
            return list(range(len(self.predictors)))
        if not isinstance(members, list) or not members or not all(isinstance(m, int) for m in members):
            raise LookupError("'members' must be a non-empty list of member indices")
        bad = [m for m in members if not 0 <= m < len(self.predictors)]
        if bad:
            raise LookupError(f"no member {bad[0]} in an ensemble of {len(self.predictors)}")
        return members

    def _error(self, index: int, status: int, message: str) -> dict[str, str]:
        self.context.set_response_status(code=status, phrase=message[:200], idx=index)
        return {"error": message}


def worker_device(zoo_device: Any, context: Any) -> Any:
    """The torch device of this worker: ZOO_DEVICE checked first (CUDA asked for and absent: DeviceError), then
    the GPU TorchServe gave the worker (`gpu_id`) unless ZOO_DEVICE=cpu (`zoo.device.pinned`)."""
    zoo_device.check()
    properties = getattr(context, "system_properties", None) or {}
    gpu_id = properties.get("gpu_id")
    gpu_index = int(gpu_id) if gpu_id is not None and str(gpu_id).strip() not in ("", "-1") else None
    return zoo_device.pinned(gpu_index=gpu_index)


def _limit_malloc_arenas(arenas: int = 2) -> None:
    """At most `arenas` glibc malloc arenas in this worker (what MALLOC_ARENA_MAX=2 does, whoever started
    TorchServe): the member threads would otherwise each keep an arena of freed memory."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


def _members(model_dir: Path) -> tuple[list[dict[str, Any]], bool]:
    """(the members in order, whether they may share a frozen trunk)."""
    listing = model_dir / ENSEMBLE_FILE
    if listing.is_file():
        data = json.loads(listing.read_text(encoding="utf-8"))
        return data["members"], bool(data.get("share_trunk", True))
    return [{"id": None, "name": model_dir.name, "dir": "."}], True  # a single-model archive


def _tokenizer_key(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        path = folder / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-") + b"\0")
    return digest.hexdigest()


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
