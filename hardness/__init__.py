"""Hardness: per-example hardness scores, per-label selection and round seeding (Hard-Bench).

Library (no Django): `scores` (registry: loss, gradnorm, gradnorm_deep, el2n, data maps, entropy, margin),
`selection` (hardest / easiest / random per label), `sanity`, `scorers` (weak scorers and the `Scorer`
protocol), `deep` (per-sample gradients with torch.func), `target` and `hardbench` (the reproduction).
Django layer: `services.seed_round` (the round pipeline's seed step calls it), commands `hardbench` and `seed_round`.
See docs/hardbench/README.md.
"""
