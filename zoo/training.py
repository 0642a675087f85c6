"""Fine-tuning: the pretrained encoder + a fresh head (classification, span extraction, ... — `zoo.heads`).

Django-free, so the hardness module and scripts can use it directly. `train()` takes `TrainExample`s (a model
input as the task kind forms it, and a target), a `TrainSpec`, and writes a complete artifact folder.
Seeded and reproducible on CPU; batches are padded dynamically to their longest member.

Where it computes is the device policy's (`zoo.device`: ZOO_DEVICE, or a device passed in): on a GPU the model
and each batch move there, the forward and loss run under autocast (bfloat16 where the card has it, else float16
with a loss scaler) and the batch size is the one the card takes (`device.batch_size_for`); on the CPU nothing
changes (float32, the asked batch). The artifact is always written from CPU tensors, and records the device
(`device.describe`) and the encoder (name and family).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy
import torch

from zoo import device as devices
from zoo import dynamics as cartography
from zoo import encoder as enc
from zoo import encoders
from zoo.heads import HEADS, get_head
from zoo.runtime import ZOO_FILE, configure_threads

TINY = "tiny"
Progress = Callable[[int, int, dict[str, float]], None]  # (step, total_steps, {"loss": ...})


@dataclass
class TrainSpec:
    head: str  # a registered head (zoo.heads): "classification" | "qa"
    labels: list[str] = field(default_factory=list)  # labelled heads only (classification), in id order
    epochs: int = 2
    lr: float = 5e-5
    batch_size: int = 16
    max_length: int = 128
    seed: int = 0
    weight_decay: float = 0.01
    warmup: float = 0.1
    encoder: str = enc.ENCODER_NAME  # a name or folder zoo.encoders resolves ("tiny": a small random BERT, tests)

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {', '.join(HEADS)}")
        get_head(self.head).check_labels(self.labels)
        if self.epochs < 1 or self.lr <= 0 or self.batch_size < 1 or self.max_length < 8:
            raise ValueError("epochs, lr, batch_size and max_length must be positive (max_length >= 8)")


@dataclass
class TrainExample:
    model_input: dict[str, str]
    target: Any  # a label, or {"text", "start"} for QA
    key: str | None = None  # the example's key (training dynamics are keyed by it; None: its position)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    numpy.random.seed(seed)


def build_model(spec: TrainSpec) -> torch.nn.Module:
    """A fresh model for the spec: pretrained encoder + new head, or a tiny random one."""
    head = get_head(spec.head)
    kwargs = head.config_overrides(spec.labels)
    source = encoders.resolve(spec.encoder)
    return source.model(head.auto_model, source.config(**kwargs))


def load_tokenizer(spec: TrainSpec) -> Any:
    """The tokenizer of the spec's encoder."""
    return encoders.resolve(spec.encoder).tokenizer()


# -- batches ----------------------------------------------------------------------------------------


def collate(tokenizer: Any, batch: list[dict], target_keys: Sequence[str]) -> dict[str, torch.Tensor]:
    """Pad the tokens to the longest feature; the targets (the head's loss keywords) become tensors as they are."""
    targets = {k: torch.tensor([f[k] for f in batch]) for k in target_keys}
    padded = tokenizer.pad([{k: v for k, v in f.items() if k not in target_keys} for f in batch], return_tensors="pt")
    return {**dict(padded), **targets}


# -- training loop ----------------------------------------------------------------------------------


def the_device(device: torch.device | str | None = None) -> torch.device:
    """The device training runs on: `device` as given, else the policy's (`zoo.device.resolve`: ZOO_DEVICE)."""
    return device if isinstance(device, torch.device) else devices.resolve(device)


def encoder_meta(encoder: str) -> dict[str, Any]:
    """What an artifact records of its base encoder: the name (or folder) and the family."""
    try:
        source = encoders.resolve(encoder)
    except encoders.EncoderError:
        return {"name": encoder, "family": None}
    return {"name": encoders.stored_name(source), "family": source.family}


def train(examples: Sequence[TrainExample], spec: TrainSpec, out_dir: Path | str,
          progress: Progress | None = None, extra_meta: dict[str, Any] | None = None,
          device: torch.device | str | None = None, dynamics: bool = cartography.RECORD_DYNAMICS) -> dict[str, Any]:
    """Fine-tune and write the artifact to `out_dir` (atomically). Returns the training metrics.
    `device`: where to train (default: ZOO_DEVICE's policy, `zoo.device.resolve`). `dynamics`: record the training
    dynamics of every example (`zoo.dynamics`) and write its data map beside the artifact (DYNAMICS_FILE)."""
    if not examples:
        raise ValueError("no training examples")
    where = the_device(device)
    configure_threads()
    seed_everything(spec.seed)
    tokenizer = load_tokenizer(spec)
    features = get_head(spec.head).features(tokenizer, examples, spec.labels, spec.max_length)
    model = build_model(spec)
    recorder = TrainingDynamics(example_keys(examples)) if dynamics else None
    started = time.perf_counter()
    loss = fit(model, tokenizer, features, spec, progress, device=where, dynamics=recorder)
    seconds = time.perf_counter() - started
    metrics = {"train_loss": loss, "train_examples": len(features), "epochs": spec.epochs, "seconds": round(seconds, 2),
               "examples_per_s": round(len(features) * spec.epochs / max(seconds, 1e-9), 1),
               "device": devices.describe(where)}
    if where.type != "cpu":
        metrics["batch_size"] = devices.batch_size_for(where, spec.batch_size, parameter_count(model))
    save_artifact(model, tokenizer, spec, metrics, Path(out_dir), {"device": devices.describe(where), **(extra_meta or {})})
    if recorder is not None:
        cartography.write(out_dir, recorder.passes)
    return metrics


def example_keys(examples: Sequence[TrainExample]) -> list[str]:
    """Each example's key for its training dynamics: its own, else its position."""
    return [e.key if e.key is not None else f"#{i}" for i, e in enumerate(examples)]


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class Precision:
    """Mixed precision of a training loop on `device`: autocast to the device's precision on a GPU (the CPU's
    `cpu_dtype` on the CPU, None: float32) and, for float16 on a GPU, a loss scaler. `step` does backward,
    clipping and the optimiser step with or without the scaler."""

    def __init__(self, device: torch.device, cpu_dtype: torch.dtype | None = None):
        self.device = device
        self.dtype = cpu_dtype if device.type == "cpu" else devices.amp_dtype(device)
        self.scaler = devices.grad_scaler(device, self.dtype)

    def autocast(self) -> Any:
        if self.device.type == "cpu":
            from zoo import precision

            return precision.autocast(self.dtype)
        return devices.autocast(self.device, self.dtype)

    def step(self, loss: torch.Tensor, params: Any, optimizer: torch.optim.Optimizer) -> None:
        params = list(params)
        if self.scaler is None:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            return
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        self.scaler.step(optimizer)
        self.scaler.update()


def fit(model: torch.nn.Module, tokenizer: Any, features: list[dict], spec: TrainSpec,
        progress: Progress | None, device: torch.device | str | None = None,
        dynamics: TrainingDynamics | None = None) -> float:
    """Train `model` on the features for `spec.epochs` passes on `device` (default: the policy's,
    `zoo.device.resolve`); returns the mean loss of the last epoch. On a GPU the model is moved there and stays
    (`save_artifact` writes CPU tensors); on the CPU the loop is the one it always was. `dynamics`: a recorder
    that keeps, per epoch, the gold-label probability of every feature from the training forward pass."""
    where = the_device(device)
    model.to(where)
    mixed = Precision(where)  # on the CPU: float32, backward, clipping and the step as the loop always did
    batch_size = devices.batch_size_for(where, spec.batch_size, parameter_count(model))  # CPU: the asked size
    generator = torch.Generator().manual_seed(spec.seed)
    target_keys = get_head(spec.head).target_keys
    per_epoch = (len(features) + batch_size - 1) // batch_size
    total = per_epoch * spec.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)
    scheduler = linear_schedule(optimizer, int(total * spec.warmup), total)
    model.train()
    step, recent = 0, []
    for _ in range(spec.epochs):
        order = torch.randperm(len(features), generator=generator).tolist()
        if dynamics is not None:
            dynamics.begin_pass()
        for b in range(per_epoch):
            ids = order[b * batch_size:(b + 1) * batch_size]
            batch = devices.to_device(collate(tokenizer, [features[i] for i in ids], target_keys), where)
            with mixed.autocast():
                output = model(**batch)
            loss = output.loss
            if dynamics is not None:
                dynamics.record(ids, output, batch)
            mixed.step(loss, model.parameters(), optimizer)
            scheduler.step(), optimizer.zero_grad(set_to_none=True)
            # a GPU keeps the losses as tensors (no synchronisation per step); the CPU reads each at once
            value = loss.item() if where.type == "cpu" else loss.detach()
            step, recent = step + 1, (recent + [value])[-per_epoch:]
            if progress:
                progress(step, total, {"loss": float(sum(recent) / len(recent))})
        if dynamics is not None:
            dynamics.end_pass()
    model.eval()
    return round(float(sum(recent) / len(recent)), 4)


# -- training dynamics (dataset cartography, `zoo.dynamics`) -----------------------------------------


@torch.no_grad()
def gold_probability(output: Any, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(probability of the gold target, whether it is the argmax) per row of a batch, from the forward pass's
    output: a classifier's label (`labels`), or a span's start and end (`start_positions`, `end_positions`: the
    product of the two probabilities, right when both argmaxes are). None for an output it cannot read."""
    if "labels" in batch and getattr(output, "logits", None) is not None and output.logits.dim() == 2:
        probs = torch.softmax(output.logits.detach().float(), dim=-1)
        gold = batch["labels"].to(probs.device)
        return probs.gather(1, gold[:, None]).squeeze(1), probs.argmax(-1) == gold
    if "start_positions" in batch and getattr(output, "start_logits", None) is not None:
        start = torch.softmax(output.start_logits.detach().float(), dim=-1)
        end = torch.softmax(output.end_logits.detach().float(), dim=-1)
        s, e = batch["start_positions"].to(start.device), batch["end_positions"].to(end.device)
        p = start.gather(1, s[:, None]).squeeze(1) * end.gather(1, e[:, None]).squeeze(1)
        return p, (start.argmax(-1) == s) & (end.argmax(-1) == e)
    return None


class TrainingDynamics:
    """Records the training dynamics of one model: for every pass over the data, each training row's gold-label
    probability and correctness from the training forward pass (no extra forward pass: the cartography code reads
    the same logits). On a GPU the values stay there until the pass ends (one transfer per pass, no
    synchronisation per step). A pass becomes a checkpoint only when it saw every row (`zoo.dynamics.Passes`)."""

    def __init__(self, keys: Sequence[str]):
        self.passes = cartography.Passes(list(keys))
        self._ids: list[list[int]] = []
        self._values: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._open = False
        self.unreadable = False  # the output had nothing to read (a head without a gold target)

    def begin_pass(self) -> None:
        if self._open:
            self.end_pass()
        self._ids, self._values, self._open = [], [], True

    def record(self, ids: Sequence[int], output: Any, batch: dict[str, torch.Tensor]) -> None:
        if not self._open or self.unreadable:
            return
        read = gold_probability(output, batch)
        if read is None:
            self.unreadable = True
            return
        self._ids.append(list(ids))
        self._values.append(read)

    def end_pass(self) -> None:
        """Close the pass: a checkpoint when every row was seen (the last one it saw counts for a row seen twice),
        else counted as dropped."""
        if not self._open:
            return
        self._open = False
        n = len(self.passes.keys)
        if self.unreadable or not self._values:
            return
        probs = torch.cat([p for p, _ in self._values]).float().cpu().tolist()
        right = torch.cat([c for _, c in self._values]).cpu().tolist()
        ids = [i for chunk in self._ids for i in chunk]
        seen_p: list[float | None] = [None] * n
        seen_c: list[bool] = [False] * n
        for i, p, c in zip(ids, probs, right, strict=True):
            seen_p[i], seen_c[i] = p, c
        self._ids, self._values = [], []
        if any(p is None for p in seen_p):
            self.passes.dropped += 1
            return
        self.passes.add(seen_p, seen_c)  # type: ignore[arg-type]


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


# -- artifact ---------------------------------------------------------------------------------------


def save_artifact(model: torch.nn.Module, tokenizer: Any, spec: TrainSpec, metrics: dict[str, Any], out_dir: Path,
                  extra_meta: dict[str, Any]) -> Path:
    """Write into a sibling temporary folder, then rename: a half-written artifact is never visible."""
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if any(p.device.type != "cpu" for p in model.parameters()):
        model.to("cpu")  # artifacts hold CPU tensors, whatever trained them
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    encoder = encoder_meta(spec.encoder)
    _write(tmp / ZOO_FILE, {"format": 1, "head": spec.head, "labels": spec.labels, "max_length": spec.max_length,
                            "encoder": spec.encoder, "encoder_family": encoder["family"]})
    _write(tmp / "label_map.json", {label: i for i, label in enumerate(spec.labels)})
    _write(tmp / "training.json", {"spec": asdict(spec), "torch": torch.__version__, "encoder": encoder,
                                   **extra_meta})
    _write(tmp / "metrics.json", metrics)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True), encoding="utf-8")
