"""AFLite on SST-2 (docs/evaluation/aflite.md): `python -m research.aflite`.

Built on the product's `hardness.aflite` (the filter), `hardness.encoding` (frozen embeddings) and
`rounds.statistics` (Wilson, paired bootstrap, McNemar); never imported by product code.
- `pool`: the SST-2 pool sample and dev, with cached embeddings;
- `experiment`: the split, the filter, the random controls, the models and the figures;
- `report`: the Markdown tables.
"""

from research.aflite.experiment import ExperimentConfig, run

__all__ = ["ExperimentConfig", "run"]
