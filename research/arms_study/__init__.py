"""The arms comparison's worked example (docs/study/arms-comparison.md): a two-arm study built on a scratch database
from real data, scored by a model trained through the platform, and compared by `rounds.arms` exactly as the round
dashboard, the API and `manage.py compare_arms` compare a real study. `python -m research.arms_study`."""
