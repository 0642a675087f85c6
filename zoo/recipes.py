"""Training recipes for an ensemble: several members (different seeds) on one labelled set.

Two recipes (Django-free, like `zoo.training`):

- ``"cached-top"`` (the default, `train_ensemble`): the pretrained encoder's lower layers stay frozen and run
  ONCE over the data; their hidden states are cached (fp16) and every member fine-tunes only the top block(s)
  and its head on that cache. Members differ by seed (head initialisation, dropout) and data order. The
  number of steps is scaled to the data (`epochs` passes, at least `min_steps`, at most `max_steps`), and training
  stops early when the loss on a dev split stops improving; the best checkpoint is kept. The dev split is
  carved from the TRAIN data (a stable hash of the example keys), or given by the caller.
- ``"full"`` (`zoo.training.train`, today's recipe): every member fine-tunes the whole encoder for a
  fixed number of epochs. Kept for comparison (bench/bench_rounds.py runs both).

Every family of `zoo.families` that can be cut into a trunk and a tail trains this way (BERT, RoBERTa, XLM-R,
ELECTRA, DistilBERT, MPNet, DeBERTa v1/v2: the trunk and tail are views of the model's own modules, relative-
position tables frozen with the trunk). ALBERT cannot be cut (one layer group's weights at every depth): its
members are fine-tuned whole, on the same steps, dev split, early stopping and kept checkpoint, at `full_lr`
(recorded in the metrics as `whole_model` with the reason).

On a GPU (`zoo.device`: ZOO_DEVICE or a device passed in) the model, the cache and the batches live there, the
members train under autocast (bfloat16, or float16 with a loss scaler) and the batch is the one the card takes;
on the CPU nothing changes (float32, or bfloat16 where `bf16` asks and the CPU has it natively).

Each member is saved as a complete artifact (full encoder weights: the frozen lower layers as they were, the
trained top layers and head), in the same format as `zoo.training.save_artifact`: serving and
`zoo.runtime` load it like any other model.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from zoo import device as devices
from zoo import dynamics as cartography
from zoo import encoder as enc
from zoo import families, precision
from zoo.heads import HEADS, get_head
from zoo.registry import Registry
from zoo.runtime import configure_threads
from zoo.training import (
    Precision,
    TrainExample,
    TrainingDynamics,
    TrainSpec,
    build_model,
    collate,
    encoder_meta,
    example_keys,
    linear_schedule,
    load_tokenizer,
    parameter_count,
    save_artifact,
    seed_everything,
    the_device,
)

CACHED_TOP = "cached-top"
FULL = "full"
# name -> what it does, in a few words (the round pipeline's `recipe` option offers these names and says this)
RECIPES: Registry[str] = Registry("training recipe")
RECIPES.register(CACHED_TOP, "frozen lower layers encoded once, top blocks per seed, early stopping")
RECIPES.register(FULL, "every layer, `epochs` passes")

Progress = Callable[[int, int, dict[str, float]], None]  # (done, total, {"loss", "member", "phase"})


@dataclass
class RecipeSpec:
    """Settings of the cached-top recipe (one set for every member; members differ by seed only)."""

    head: str
    labels: list[str]
    encoder: str = enc.ENCODER_NAME  # or "tiny" (tests)
    max_length: int = 0  # 0: the head's default
    top_layers: int = 3  # encoder layers fine-tuned (the ones below run once, frozen)
    lr: float = 2e-4
    batch_size: int = 16
    epochs: int = 2  # passes over large data (early stopping may end sooner)
    min_steps: int = 150  # small data: at least this many updates (many passes over a few dozen rows)
    max_steps: int = 2000
    weight_decay: float = 0.01
    warmup: float = 0.06
    dev_fraction: float = 0.1  # carved from the train data when no dev set is given
    dev_min_train: int = 40  # fewer training rows than this: no dev split, no early stopping
    dev_max: int = 200
    evals: int = 8  # dev evaluations over the planned steps (early stopping granularity)
    patience: int = 3  # evaluations without improvement before stopping
    bucket_batches: int = 50  # batches of similar-length rows are formed within runs of this many batches (1: random)
    bf16: bool = False  # train in bfloat16 autocast where the CPU multiplies it natively (AMX: ~1.7x per update)
    select_on: str = "loss"  # early stopping and the kept checkpoint: dev "loss", or dev "error" (classification;
    # ties broken by the loss; a head without labels falls back to the loss)
    full_lr: float = 5e-5  # a family that cannot be split (ALBERT) is fine-tuned whole, at this learning rate

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {', '.join(HEADS)}")
        get_head(self.head).check_labels(self.labels)
        if not self.max_length:
            self.max_length = get_head(self.head).default_max_length
        if self.select_on not in ("loss", "error"):
            raise ValueError('select_on must be "loss" or "error"')
        if self.top_layers < 1 or self.batch_size < 1 or self.lr <= 0 or self.min_steps < 1 or self.epochs < 1:
            raise ValueError("top_layers, batch_size, lr, min_steps and epochs must be positive")

    def train_spec(self, seed: int) -> TrainSpec:
        """The member's settings in the artifact's `training.json` format (`zoo.training.TrainSpec`)."""
        return TrainSpec(head=self.head, labels=list(self.labels), lr=self.lr, batch_size=self.batch_size,
                         max_length=self.max_length, seed=seed, weight_decay=self.weight_decay, encoder=self.encoder)


# -- data -------------------------------------------------------------------------------------------


def stable_fraction(key: str) -> float:
    """A number in [0, 1) fixed by the key (split decisions that do not move between runs)."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16 ** 12


def carve_dev(examples: Sequence[TrainExample], keys: Sequence[str] | None, spec: RecipeSpec
              ) -> tuple[list[TrainExample], list[TrainExample]]:
    """(train, dev): a stable `dev_fraction` of the train data by key hash (at most `dev_max`); no dev split
    when the data is too small to spare one."""
    examples = list(examples)
    if len(examples) < spec.dev_min_train or spec.dev_fraction <= 0:
        return examples, []
    keys = list(keys) if keys is not None else [repr(sorted(e.model_input.items())) for e in examples]
    ranked = sorted(range(len(examples)), key=lambda i: stable_fraction(keys[i]))
    n_dev = min(spec.dev_max, max(4, int(len(examples) * spec.dev_fraction)))
    dev_ids = set(ranked[:n_dev])
    return [e for i, e in enumerate(examples) if i not in dev_ids], [examples[i] for i in sorted(dev_ids)]


def plan_steps(n_train: int, spec: RecipeSpec) -> int:
    """Updates per member: `epochs` passes, but at least `min_steps` (a few dozen rows need many passes) and
    at most `max_steps`; early stopping may end sooner."""
    per_epoch = max(1, -(-n_train // spec.batch_size))
    return max(1, min(spec.max_steps, max(spec.min_steps, per_epoch * spec.epochs)))


class CachedStates:
    """The frozen lower layers' output for every feature (fp16, unpadded), and the features' targets."""

    def __init__(self, states: list[torch.Tensor], targets: dict[str, list[int]]):
        self.states, self.targets = states, targets

    def __len__(self) -> int:
        return len(self.states)

    def lengths(self) -> list[int]:
        return [s.shape[0] for s in self.states]

    def batch(self, ids: Sequence[int]) -> dict[str, torch.Tensor]:
        longest = max(self.states[i].shape[0] for i in ids)
        where = self.states[ids[0]].device
        hidden = torch.zeros(len(ids), longest, self.states[ids[0]].shape[1], device=where)
        mask = torch.zeros(len(ids), longest, dtype=torch.long, device=where)
        for row, i in enumerate(ids):
            n = self.states[i].shape[0]
            hidden[row, :n] = self.states[i].float()
            mask[row, :n] = 1
        out = {"inputs_embeds": hidden, "attention_mask": mask}
        out.update({k: torch.tensor([v[i] for i in ids], device=where) for k, v in self.targets.items()})
        return out


class TokenBatches:
    """The features themselves, for a member trained whole (a family that cannot be split): the same interface
    as `CachedStates` (lengths, batches with the targets), padded input ids instead of hidden states."""

    def __init__(self, tokenizer: Any, features: list[dict], target_keys: Sequence[str], device: torch.device):
        self.tokenizer, self.features, self.target_keys, self.device = tokenizer, features, tuple(target_keys), device
        self.targets = {k: [f[k] for f in features] for k in self.target_keys}

    def __len__(self) -> int:
        return len(self.features)

    def lengths(self) -> list[int]:
        return [len(f["input_ids"]) for f in self.features]

    def batch(self, ids: Sequence[int]) -> dict[str, torch.Tensor]:
        return devices.to_device(collate(self.tokenizer, [self.features[i] for i in ids], self.target_keys),
                                 self.device)


def length_bucketed_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator,
                            bucket_batches: int = 50) -> list[list[int]]:
    """One pass over the rows in batches of similar length, in random order: the rows are shuffled, every run of
    `bucket_batches` batches' worth of rows is sorted by length and cut into batches, and the batches are
    shuffled. Each row appears exactly once; a batch is padded to its own longest row, so with short, varied
    rows (SST-2 phrases: 13 tokens on average, up to 65) a batch carries about 2.5x fewer padded positions than
    a purely random one, for the same randomness of the data order at the scale of a bucket."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    chunk = batch_size * max(1, bucket_batches)
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda i: lengths[i])
        batches += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def training_dtype(spec: RecipeSpec) -> torch.dtype | None:
    """bfloat16 when the spec asks for it and the CPU multiplies it natively (else float32: emulated bfloat16
    would be slower); the weights, the optimiser and the saved artifact stay float32 either way."""
    return torch.bfloat16 if spec.bf16 and precision.native_bf16() else None


MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
ENCODE_BATCH = {"cpu": 32, "cuda": 128}  # rows per batch of the one pass over the frozen layers


@torch.inference_mode()
def encode_lower(model: torch.nn.Module, tokenizer: Any, features: list[dict], target_keys: Sequence[str],
                 frozen: int, batch_size: int = 32, tick: Callable[[], None] | None = None,
                 device: torch.device | None = None, autocast: Any = None) -> CachedStates:
    """Run embeddings + the first `frozen` layers once over every feature (sorted by length: little padding),
    through the family's trunk view (`zoo.families.trunk_view`). On a GPU (`device`) the states stay there;
    `autocast`: a context factory for the forward (a GPU's mixed precision)."""
    import contextlib

    where = device or torch.device("cpu")
    trunk = families.trunk_view(model, frozen)
    model.eval()
    accepted = set(getattr(tokenizer, "model_input_names", MODEL_INPUTS)) & set(MODEL_INPUTS)
    order = sorted(range(len(features)), key=lambda i: len(features[i]["input_ids"]))
    states: list[torch.Tensor | None] = [None] * len(features)
    for start in range(0, len(order), batch_size):
        ids = order[start:start + batch_size]
        padded = tokenizer.pad([{k: v for k, v in features[i].items() if k not in target_keys} for i in ids],
                               return_tensors="pt")
        args = devices.to_device({k: v for k, v in padded.items() if k in accepted}, where)
        with autocast() if autocast else contextlib.nullcontext():
            hidden = trunk(**args).last_hidden_state
        for row, i in enumerate(ids):
            n = len(features[i]["input_ids"])
            states[i] = hidden[row, :n].to(torch.float16).clone()
        if tick:
            tick()
    return CachedStates(states, {k: [f[k] for f in features] for k in target_keys})


def _reset_head(model: torch.nn.Module) -> None:
    """A fresh head for this member's seed (everything outside the encoder: classifier, qa_outputs)."""
    std = getattr(model.config, "initializer_range", 0.02)
    for child in model.children():
        if child is model.base_model:
            continue
        for module in child.modules():
            if isinstance(module, torch.nn.Linear):
                torch.nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)


def _trainable(model: torch.nn.Module, frozen: int) -> list[torch.nn.Parameter]:
    """Everything but the trunk (`families.trunk_modules`: embeddings, relative-position tables, layers[:frozen])
    trains; the trunk's parameters stop asking for gradients."""
    keep: list[torch.nn.Parameter] = []
    lower: set[int] = set()
    for module in families.trunk_modules(model, frozen):
        lower |= {id(p) for p in module.parameters()}
    for p in model.parameters():
        p.requires_grad_(id(p) not in lower)
        if id(p) not in lower:
            keep.append(p)
    return keep


@torch.no_grad()
def _dev_loss(model: torch.nn.Module, cache: CachedStates | TokenBatches, batch_size: int) -> tuple[float, float | None]:
    """(mean loss, error rate or None) on the dev cache; the error rate when the model predicts labels."""
    model.eval()
    total, n, wrong = 0.0, 0, 0
    labelled = "labels" in cache.targets
    lengths = cache.lengths()
    order = sorted(range(len(cache)), key=lambda i: lengths[i])  # little padding
    for start in range(0, len(order), batch_size):
        ids = order[start:start + batch_size]
        batch = cache.batch(ids)
        output = model(**batch)
        total += float(output.loss) * len(ids)
        if labelled:
            wrong += int((output.logits.argmax(-1) != batch["labels"]).sum())
        n += len(ids)
    model.train()
    return total / max(n, 1), (wrong / max(n, 1) if labelled else None)


def _better(spec: RecipeSpec, loss: float, error: float | None, best: tuple) -> bool:
    """Whether this dev evaluation improves on the best one: a lower loss, or with select_on="error" a lower
    error rate (an equal one with a lower loss)."""
    if spec.select_on == "error" and error is not None and best[2] is not None:
        return error < best[2] - 1e-9 or (abs(error - best[2]) <= 1e-9 and loss < best[0] - 1e-4)
    return loss < best[0] - 1e-4


# -- the recipe -------------------------------------------------------------------------------------


def train_ensemble(examples: Sequence[TrainExample], spec: RecipeSpec, out_dirs: Sequence[Path | str],
                   seeds: Sequence[int], *, dev: Sequence[TrainExample] | None = None,
                   keys: Sequence[str] | None = None, progress: Progress | None = None,
                   extra_meta: Sequence[dict[str, Any]] | dict[str, Any] | None = None,
                   device: torch.device | str | None = None,
                   dynamics: bool = cartography.RECORD_DYNAMICS) -> list[dict[str, Any]]:
    """Train one member per seed with the cached-top recipe and write each to its `out_dirs` entry
    (atomically). `dev`: labelled examples for early stopping (default: carved from `examples` by `keys`).
    `device`: where to train (default: ZOO_DEVICE's policy). Returns each member's metrics (train/dev loss,
    steps, whether it stopped early, seconds, the device). `dynamics`: record each member's training dynamics
    (one checkpoint per complete pass over the train rows, keyed by `keys`) and write its data map into its
    artifact (`zoo.dynamics.DYNAMICS_FILE`)."""
    if not examples:
        raise ValueError("no training examples")
    if len(out_dirs) != len(seeds):
        raise ValueError("one output folder per seed")
    where = the_device(device)
    configure_threads()
    started = time.perf_counter()
    head = get_head(spec.head)
    if keys is not None and len(keys) == len(examples):  # the keys travel with the rows (dev carving, dynamics)
        examples = [e if e.key == k else TrainExample(e.model_input, e.target, k) for e, k in zip(examples, keys, strict=True)]
    train_rows, dev_rows = (list(examples), list(dev)) if dev is not None else carve_dev(examples, keys, spec)
    tokenizer = load_tokenizer(spec.train_spec(0))
    seed_everything(0)
    base = build_model(spec.train_spec(0))
    whole = families.split_problem(base)  # None: the family splits into a frozen trunk and a trained tail
    frozen = 0 if whole else max(0, len(families.layers(base)) - spec.top_layers)
    if where.type != "cpu":
        base.to(where)
    mixed = Precision(where, training_dtype(spec))
    batch_size = devices.batch_size_for(where, spec.batch_size, parameter_count(base))
    train_features = head.features(tokenizer, train_rows, spec.labels, spec.max_length)
    dev_features = head.features(tokenizer, dev_rows, spec.labels, spec.max_length) if dev_rows else []

    steps = plan_steps(len(train_features), spec)
    encode_batch = ENCODE_BATCH.get(where.type, 32)
    cache_batches = 0 if whole else -(-len(train_features) // encode_batch) + -(-len(dev_features) // encode_batch)
    total = cache_batches + steps * len(seeds)
    done = [0]

    def tick(stats: dict[str, float] | None = None) -> None:
        done[0] += 1
        if progress:  # encoding: {"phase": 0, "batches"}; a member's update: {"member", "step", "steps", "loss"}
            progress(min(done[0], total), total, stats or {"phase": 0.0, "batches": float(cache_batches)})

    t0 = time.perf_counter()
    dev_cache: CachedStates | TokenBatches | None
    if whole:
        train_cache = TokenBatches(tokenizer, train_features, head.target_keys, where)
        dev_cache = TokenBatches(tokenizer, dev_features, head.target_keys, where) if dev_features else None
    else:
        amp = mixed.autocast if where.type != "cpu" else None
        train_cache = encode_lower(base, tokenizer, train_features, head.target_keys, frozen, encode_batch, tick,
                                   where, amp)
        dev_cache = encode_lower(base, tokenizer, dev_features, head.target_keys, frozen, encode_batch, tick,
                                 where, amp) if dev_features else None
    cache_seconds = time.perf_counter() - t0

    metas = extra_meta if isinstance(extra_meta, Sequence) else [extra_meta or {}] * len(seeds)
    described, encoder = devices.describe(where), encoder_meta(spec.encoder)
    results = []
    for index, (seed, out_dir) in enumerate(zip(seeds, out_dirs, strict=True)):
        member_started = time.perf_counter()
        model = copy.deepcopy(base)
        seed_everything(seed)
        _reset_head(model)
        recorder = TrainingDynamics(example_keys(train_rows)) if dynamics else None
        metrics = _fit_member(model, train_cache, dev_cache, spec, seed, frozen, steps, index, tick,
                              mixed=mixed, batch_size=batch_size, whole=bool(whole), dynamics=recorder)
        metrics.update({"recipe": CACHED_TOP, "train_examples": len(train_features), "dev_examples": len(dev_features),
                        "frozen_layers": frozen, "cache_seconds": round(cache_seconds, 2),
                        "seconds": round(time.perf_counter() - member_started, 2), "device": described,
                        "encoder": encoder})
        if whole:
            metrics["whole_model"] = f"every layer trained (lr {spec.full_lr}): {whole}"
        if where.type != "cpu":
            metrics["batch_size"] = batch_size
        meta = {"recipe": {"name": CACHED_TOP, **asdict(spec)}, "device": described, **(metas[index] or {})}
        save_artifact(model, tokenizer, spec.train_spec(seed), metrics, Path(out_dir), meta)
        if recorder is not None:
            cartography.write(out_dir, recorder.passes)
        del model
        results.append(metrics)
        done[0] = cache_batches + steps * (index + 1)  # a member that stopped early skips its remaining steps
        if progress:  # this member is finished: its own final loss and the steps it took
            progress(done[0], total, {"member": float(index), "loss": metrics["train_loss"], "finished": 1.0,
                                      "step": float(metrics["steps"]), "steps": float(steps)})
    for m in results:
        m["ensemble_seconds"] = round(time.perf_counter() - started, 2)
    return results


def _fit_member(model: torch.nn.Module, cache: CachedStates | TokenBatches, dev: CachedStates | TokenBatches | None,
                spec: RecipeSpec, seed: int, frozen: int, steps: int, index: int,
                tick: Callable[[dict[str, float]], None], *, mixed: Precision | None = None,
                batch_size: int | None = None, whole: bool = False,
                dynamics: TrainingDynamics | None = None) -> dict[str, Any]:
    """One member's updates: the tail (`families.tail_view`: layers[frozen:], pooler, head) on the cached
    states, or, `whole`, the whole model on the tokens. `dynamics`: records each row's gold-label probability
    from these forward passes, one checkpoint per complete pass (`length_bucketed_batches` call)."""
    mixed = mixed or Precision(torch.device("cpu"), training_dtype(spec))
    batch_size = batch_size or spec.batch_size
    model.train()
    if whole:
        params, runner, lr = list(model.parameters()), model, spec.full_lr
    else:
        params, runner, lr = _trainable(model, frozen), families.tail_view(model, frozen, None), spec.lr
    runner.train()
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=spec.weight_decay)
    scheduler = linear_schedule(optimizer, int(steps * spec.warmup), steps)
    eval_every = max(1, steps // max(1, spec.evals))
    best: tuple[float, list[torch.Tensor], float | None] | None = None  # (dev loss, weights, dev error)
    dev_losses: list[float] = []
    dev_errors: list[float] = []
    bad, step, recent, stopped = 0, 0, [], False
    batches: list[list[int]] = []
    try:
        while step < steps and not stopped:
            if not batches:
                batches = length_bucketed_batches(cache.lengths(), batch_size, generator, spec.bucket_batches)
                if dynamics is not None:
                    dynamics.begin_pass()  # closes the pass before it (a checkpoint: every row was seen)
            ids = batches.pop()
            batch = cache.batch(ids)
            with mixed.autocast():
                output = runner(**batch)
            loss = output.loss
            if dynamics is not None:
                dynamics.record(ids, output, batch)
            mixed.step(loss, params, optimizer)
            scheduler.step(), optimizer.zero_grad()
            step += 1
            recent = (recent + [loss.item()])[-50:]
            tick({"member": float(index), "loss": sum(recent) / len(recent), "step": float(step), "steps": float(steps)})
            if dev is not None and (step % eval_every == 0 or step == steps):
                with mixed.autocast():
                    dev_loss, dev_error = _dev_loss(runner, dev, 64)
                dev_losses.append(round(dev_loss, 4))
                if dev_error is not None:
                    dev_errors.append(round(dev_error, 4))
                if best is None or _better(spec, dev_loss, dev_error, best):
                    best, bad = (dev_loss, [p.detach().clone() for p in params], dev_error), 0
                else:
                    bad += 1
                    stopped = bad >= spec.patience and step < steps
    finally:
        for p in model.parameters():
            p.requires_grad_(True)
    if dynamics is not None:
        dynamics.end_pass()  # the last pass: a checkpoint only if it was completed (not cut short)
    if best is not None:
        with torch.no_grad():
            for p, kept in zip(params, best[1], strict=True):
                p.copy_(kept)
    model.eval()
    return {"train_loss": round(sum(recent) / max(len(recent), 1), 4), "steps": step, "planned_steps": steps,
            "stopped_early": stopped, "dev_loss": best[0] if best else None, "dev_losses": dev_losses,
            **({"dev_error": best[2], "dev_errors": dev_errors} if best and best[2] is not None else {}),
            "seed": seed}
