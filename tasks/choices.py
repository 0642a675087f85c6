"""The names task settings accept from registries that live above `tasks`, written once, here.

A task's settings are validated in `tasks` (tasks/kinds/base.py), which may not import the apps that hold these
parts (tests/site/test_import_layers.py). So their names are written here, where both can see them: each
registry registers its entries under these names and checks, when its module loads, that it holds them
(`zoo.registry.Registry.require`), so a setting and its registry never drift apart.

- Context sampling: `annotation.sampling.STRATEGIES` holds exactly `SAMPLING` (the task setting `sampling`).
- Hardness scores for seeding: `hardness.scores.SCORES` holds `SEEDING_SCORES` (the task setting
  `seeding.score`) and more (data maps, entropy, margin: the Hard-Bench study and contexts' scores); the weak span
  scorer of a QA task has `SPAN_SEEDING_SCORES` (`hardness.services`, `hardness.weak`).

Registries that live below `tasks` (the model library's explanation methods and language model providers) are
read directly where the settings are declared. Nothing here imports anything: the hardness library reads it
without Django.
"""

from __future__ import annotations

# --- context sampling (annotation.sampling) ------------------------------------------------------------------
LEAST_USED = "least_used"
HARDNESS_FIRST = "hardness_first"
UNIFORM = "uniform"
SAMPLING: tuple[str, ...] = (LEAST_USED, HARDNESS_FIRST, UNIFORM)
DEFAULT_SAMPLING = HARDNESS_FIRST

# --- hardness scores a round's seeding may use (hardness.scores) ---------------------------------------------
LOSS = "loss"
GRADNORM = "gradnorm"
GRADNORM_DEEP = "gradnorm_deep"
EL2N = "el2n"
AFLITE = "aflite"  # AFLite's filter over the weak scorer's frozen features (hardness.aflite)
SEEDING_SCORES: tuple[str, ...] = (LOSS, GRADNORM, GRADNORM_DEEP, EL2N, AFLITE)
# The weak span scorer (QA) has no per-sample gradients of an encoder block, and no labels for AFLite's probes.
SPAN_SEEDING_SCORES: tuple[str, ...] = tuple(name for name in SEEDING_SCORES if name not in (GRADNORM_DEEP, AFLITE))
DEFAULT_SEEDING_SCORE = LOSS
