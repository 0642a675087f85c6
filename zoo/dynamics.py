"""Training dynamics and data maps (Swayamdipta et al. 2020, "Dataset Cartography: Mapping and Diagnosing Datasets
with Training Dynamics"). Django-free and torch-free: the training loops (`zoo.training.fit`, the cached-top recipe's
`zoo.recipes._fit_member`) collect, for every training example, the probability the model gave its gold label in
the training forward pass of each pass over the data (`zoo.training.TrainingDynamics`, as the cartography code
reads the logits of its training loop: dropout on, no extra forward pass); this module turns those per-pass
probabilities into the three statistics and the regions.

Per example, over its checkpoints (one checkpoint = one *complete* pass over the training data; a pass cut short
by the step budget or by early stopping is not a checkpoint, as the paper's epochs are whole):

- confidence: the mean probability of the gold label;
- variability: the standard deviation of that probability (the population one, numpy's `std`, as the
  cartography code computes it);
- correctness: the share of checkpoints at which the gold label was the model's argmax.

Rows that share a key (a round's rows repeated by `retraining.new_round_weight`) are one example: at each
checkpoint their probabilities (and correctness) are averaged first.

Regions (the paper's three; they name the map's areas, the cut below is this module's, stated in every map's
`settings`):

- ambiguous: variability in the top third (above the 2/3 quantile of variability, `AMBIGUOUS_QUANTILE`; the paper
  selects the 33 % most variable examples as "ambiguous");
- hard-to-learn: not ambiguous, and confidence below `CONFIDENCE_THRESHOLD` (0.5: on average the model gave the
  gold label less than even odds — low confidence, low variability);
- easy-to-learn: the rest (high confidence, low variability).

A data map needs at least `MIN_CHECKPOINTS` (2) checkpoints: with one, every variability is 0 and the map is
degenerate, so none is made and the reason says how many complete passes the training made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

EASY, AMBIGUOUS, HARD = "easy-to-learn", "ambiguous", "hard-to-learn"
REGIONS = (EASY, AMBIGUOUS, HARD)
AMBIGUOUS_QUANTILE = 2 / 3  # variability above this quantile: ambiguous (the top third)
CONFIDENCE_THRESHOLD = 0.5  # below it (and not ambiguous): hard-to-learn
MIN_CHECKPOINTS = 2
DYNAMICS_FILE = "dynamics.json"  # written into a member's artifact folder beside metrics.json
RECORD_DYNAMICS = True  # the training loops record dynamics unless a caller turns it off
FORMAT = 1
METHOD = ("training dynamics (Swayamdipta et al. 2020): gold-label probability from the training forward pass, "
          "one checkpoint per complete pass over the training data")


@dataclass
class Passes:
    """What a training loop recorded: the key of each training row (feature order), and for each complete pass the
    gold-label probability and correctness of every row. `dropped`: passes begun but not completed."""

    keys: list[str]
    probs: list[list[float]] = field(default_factory=list)
    correct: list[list[bool]] = field(default_factory=list)
    dropped: int = 0

    def add(self, probs: Sequence[float], correct: Sequence[bool]) -> None:
        if len(probs) != len(self.keys) or len(correct) != len(self.keys):
            raise ValueError(f"a checkpoint holds one value per training row ({len(self.keys)})")
        self.probs.append([float(p) for p in probs])
        self.correct.append([bool(c) for c in correct])

    @property
    def checkpoints(self) -> int:
        return len(self.probs)


@dataclass
class Entry:
    key: str
    confidence: float
    variability: float
    correctness: float
    region: str | None = None
    rows: int = 1  # training rows with this key (copies of a repeated round)

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "confidence": round(self.confidence, 4), "variability": round(self.variability, 4),
               "correctness": round(self.correctness, 4), "region": self.region}
        if self.rows != 1:
            out["rows"] = self.rows
        return out


def statistics(passes: Passes) -> list[Entry]:
    """Confidence, variability and correctness per key (rows of one key averaged at each checkpoint first), in the
    order each key first appears. No checkpoint: no entries."""
    if not passes.checkpoints:
        return []
    order: dict[str, list[int]] = {}
    for i, key in enumerate(passes.keys):
        order.setdefault(key, []).append(i)
    probs = numpy.asarray(passes.probs, dtype=numpy.float64)  # checkpoints x rows
    right = numpy.asarray(passes.correct, dtype=numpy.float64)
    out = []
    for key, rows in order.items():
        p = probs[:, rows].mean(axis=1)  # one value per checkpoint
        c = right[:, rows].mean(axis=1)
        out.append(Entry(key, float(p.mean()), float(p.std()), float(c.mean()), rows=len(rows)))
    return out


def thresholds(entries: Sequence[Entry], quantile: float = AMBIGUOUS_QUANTILE,
               confidence: float = CONFIDENCE_THRESHOLD) -> dict[str, Any]:
    """The cut of the regions for these entries: the variability above which an example is ambiguous (the
    `quantile` of their variability) and the confidence below which a non-ambiguous one is hard-to-learn."""
    values = [e.variability for e in entries]
    cut = float(numpy.quantile(values, quantile)) if values else 0.0
    return {"ambiguous_quantile": round(quantile, 4), "variability_threshold": round(cut, 6),
            "confidence_threshold": confidence,
            "rule": (f"ambiguous: variability > {cut:.4f} (the {quantile:.0%} quantile: the most variable third); "
                     f"else hard-to-learn: confidence < {confidence:g}; else easy-to-learn")}


def region(entry: Entry, cut: dict[str, Any]) -> str:
    if entry.variability > cut["variability_threshold"]:
        return AMBIGUOUS
    return HARD if entry.confidence < cut["confidence_threshold"] else EASY


@dataclass
class DataMap:
    """A data map as it is stored (`rounds.DataMap` holds the same fields): `entries` empty and `reason` set when
    the training made fewer than MIN_CHECKPOINTS complete passes."""

    checkpoints: int
    entries: list[dict[str, Any]]
    counts: dict[str, int]
    settings: dict[str, Any]
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "checkpoints": self.checkpoints, "entries": self.entries, "counts": self.counts,
                "settings": self.settings, "reason": self.reason}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DataMap:
        return cls(int(data.get("checkpoints", 0)), list(data.get("entries") or []), dict(data.get("counts") or {}),
                   dict(data.get("settings") or {}), str(data.get("reason") or ""))


def data_map(passes: Passes, quantile: float = AMBIGUOUS_QUANTILE,
             confidence: float = CONFIDENCE_THRESHOLD) -> DataMap:
    """The statistics and regions of every example, with the counts per region and the cut used."""
    settings: dict[str, Any] = {"method": METHOD, "min_checkpoints": MIN_CHECKPOINTS, "passes_dropped": passes.dropped,
                                "training_rows": len(passes.keys)}
    n = passes.checkpoints
    if n < MIN_CHECKPOINTS:
        cut_short = f" ({passes.dropped} pass cut short by the step budget or early stopping)" if passes.dropped else ""
        reason = (f"the training made {n} complete pass{'es' if n != 1 else ''} over its data"
                  f"{cut_short}; a data map needs at least {MIN_CHECKPOINTS} (with one checkpoint every "
                  f"variability is 0)")
        return DataMap(n, [], {}, settings, reason)
    entries = statistics(passes)
    cut = thresholds(entries, quantile, confidence)
    for e in entries:
        e.region = region(e, cut)
    counts = {name: sum(1 for e in entries if e.region == name) for name in REGIONS}
    return DataMap(n, [e.to_json() for e in entries], counts, {**settings, **cut})


def write(folder: Path | str, passes: Passes) -> DataMap:
    """The data map of `passes`, written to `folder`/DYNAMICS_FILE (a member's artifact)."""
    made = data_map(passes)
    Path(folder, DYNAMICS_FILE).write_text(json.dumps(made.to_json(), ensure_ascii=False), encoding="utf-8")
    return made


def read(folder: Path | str) -> DataMap | None:
    """The data map a training wrote into `folder`, or None (trained before dynamics were recorded, or with it off)."""
    path = Path(folder, DYNAMICS_FILE)
    if not path.is_file():
        return None
    return DataMap.from_json(json.loads(path.read_text(encoding="utf-8")))


def agreement(maps: Sequence[Sequence[dict[str, Any]]]) -> float | None:
    """The share of keys (present in every map) whose region is the same in all of them: how much the members of
    an ensemble (different seeds) agree on the map. None with fewer than two maps or no shared key."""
    if len(maps) < 2:
        return None
    regions = [{e["key"]: e.get("region") for e in entries} for entries in maps]
    shared = set(regions[0]).intersection(*regions[1:])
    if not shared:
        return None
    same = sum(1 for k in shared if len({r[k] for r in regions}) == 1)
    return same / len(shared)

