"""The Hard-Bench reproduction on SST-2 (docs/hardbench/README.md): `python -m research.hardbench`.

Built on the hardness library (scores, selection, sanity, deep, heads, classifier):
- `data`: reading the shared SST-2 files;
- `pool`: the settings, the weak scorer's scores over the pool (cached), and the k-shot selections;
- `target`: the target model's runs (dev accuracy after every epoch);
- `report`: the Markdown report and its figure;
- `reproduction.run`: all of it, resumable (`runs.jsonl`).
"""

from research.hardbench.pool import HardbenchConfig, strategy_parts
from research.hardbench.reproduction import run

__all__ = ["HardbenchConfig", "run", "strategy_parts"]
