"""What a model artifact's config.json and model.safetensors may contain: the pure checks of an upload.

Everything is read from the JSON documents alone (config.json, the safetensors header), no weight is loaded
and no model built. The site's upload flow (rounds/uploads.py) reads the files, calls these and refuses the
upload with the messages they return.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any

MB = 1024 * 1024
WEIGHTS = "model.safetensors"
CODE_KEYS = {"auto_map", "trust_remote_code", "custom_pipelines", "custom_code"}
ARCHITECTURES = {"bert", "distilbert", "roberta", "xlm-roberta", "electra", "mpnet", "deberta", "deberta-v2", "albert"}
# Bounds on the sizes a config may ask for: the model is built from the config before its weights load.
SIZE_BOUNDS = {"hidden_size": 8192, "dim": 8192, "embedding_size": 8192, "vocab_size": 1_000_000,
               "num_hidden_layers": 96, "n_layers": 96, "num_attention_heads": 256, "n_heads": 256,
               "intermediate_size": 65536, "hidden_dim": 65536, "max_position_embeddings": 65536,
               "type_vocab_size": 1024, "num_labels": 1000}
MINIMA = {"type_vocab_size": 0}  # DeBERTa (v1, v2/v3) has no token types: 0
LAYER = re.compile(r"(?:^|\.)layers?\.(\d+)\.")
OUTPUT_LAYERS = ("classifier.out_proj.weight", "classifier.weight", "qa_outputs.weight")
SAFETENSORS_DTYPES = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}
MAX_HEADER = 100 * MB


def code_keys(value: Any, path: str = "") -> list[str]:
    """Keys anywhere in a JSON document that would make transformers import code."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in CODE_KEYS and inner not in (None, False, {}, []):
                found.append(f"{path}{key}")
            found += code_keys(inner, f"{path}{key}.")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += code_keys(inner, f"{path}{i}.")
    return found


def size_problems(config: dict[str, Any]) -> list[str]:
    """Sizes in config.json must be whole numbers within bounds (a huge one would exhaust memory at load)."""
    return [f"config.json: {key} must be a whole number between {MINIMA.get(key, 1)} and {bound}, not {config[key]!r}"
            for key, bound in SIZE_BOUNDS.items()
            if key in config and (not isinstance(config[key], int) or isinstance(config[key], bool)
                                  or not MINIMA.get(key, 1) <= config[key] <= bound)]


def parse_header(head: bytes, size: int) -> tuple[dict[str, dict[str, Any]], str | None]:
    """(the tensors a safetensors file declares: name -> dtype, shape, offsets; None) from the file's first bytes
    (`head`: the 8-byte length and the JSON header) and its size, or ({}, why it is not a valid safetensors
    file: a renamed pickle, a truncated file)."""
    if len(head) < 8:
        return {}, "too short to be a safetensors file"
    (length,) = struct.unpack("<Q", head[:8])
    if length <= 1 or 8 + length > size or length > MAX_HEADER:
        return {}, "not a safetensors file (bad header length; a renamed pickle?)"
    try:
        header = json.loads(head[8 : 8 + length].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}, "not a safetensors file (the header is not JSON; a renamed pickle?)"
    tensors = {k: v for k, v in header.items() if k != "__metadata__"} if isinstance(header, dict) else {}
    if not tensors or any(not _valid_tensor(v) for v in tensors.values()):
        return {}, "the safetensors header lists no valid tensors"
    end = max(v["data_offsets"][1] for v in tensors.values())
    if 8 + length + end != size:
        return {}, f"the header describes {end} bytes of tensors but the file holds {size - 8 - length} (truncated?)"
    return tensors, None


def _valid_tensor(spec: Any) -> bool:
    if not isinstance(spec, dict) or spec.get("dtype") not in SAFETENSORS_DTYPES:
        return False
    shape, offsets = spec.get("shape"), spec.get("data_offsets")
    whole = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0)  # noqa: E731
    return (isinstance(shape, list) and all(whole(d) for d in shape) and isinstance(offsets, list)
            and len(offsets) == 2 and all(whole(o) for o in offsets) and offsets[0] <= offsets[1])


def dimension_problems(config: dict[str, Any], tensors: dict[str, dict[str, Any]], outputs: int) -> list[str]:
    """config.json's sizes against the tensors in model.safetensors: word embeddings (vocab_size × hidden or
    embedding size), the number of encoder layers, and the output layer (`outputs`: the task's labels, or 2
    start/end logits for QA). One message per mismatch."""
    shapes = {name: spec["shape"] for name, spec in tensors.items()}
    hidden = config.get("hidden_size", config.get("dim"))
    width, vocab = config.get("embedding_size") or hidden, config.get("vocab_size")
    layers = config.get("num_hidden_layers", config.get("n_layers"))
    problems = []
    if hidden is None or vocab is None or layers is None:
        problems.append("config.json must give hidden_size, vocab_size and num_hidden_layers")
    embeddings = next((shape for name, shape in shapes.items() if name.endswith("word_embeddings.weight")), None)
    if embeddings is None:
        problems.append(f"{WEIGHTS} has no word embeddings (a tensor named …word_embeddings.weight)")
    elif vocab is not None and embeddings != [vocab, width]:
        problems.append(f"config.json gives vocab_size {vocab} and hidden size {width}, but the word embeddings "
                        f"in {WEIGHTS} are {' × '.join(map(str, embeddings))}")
    found = {int(m.group(1)) for name in shapes if (m := LAYER.search(name))}
    if layers is not None and config.get("model_type") != "albert" and len(found) != layers:  # albert shares one
        problems.append(f"config.json gives num_hidden_layers {layers}, but {WEIGHTS} holds {len(found)} encoder layers")
    labels = config.get("num_labels")
    id2label = config.get("id2label")
    if labels is not None and isinstance(id2label, dict) and id2label and labels != len(id2label):
        problems.append(f"config.json: num_labels {labels} does not match id2label's {len(id2label)} labels")
    head = next((name for name in OUTPUT_LAYERS if name in shapes), None)
    if head is None:
        problems.append(f"{WEIGHTS} has no output layer ({' or '.join(OUTPUT_LAYERS)})")
    elif not shapes[head] or shapes[head][0] != outputs:
        size = shapes[head][0] if shapes[head] else 0
        problems.append(f"the output layer {head} in {WEIGHTS} has {size} outputs; this task needs {outputs}")
    return problems
