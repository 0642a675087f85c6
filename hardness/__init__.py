"""Hardness: per-example hardness scores, per-label selection and round seeding (Hard-Bench).

Library (no Django): `scores` (registry: loss, gradnorm, gradnorm_deep, el2n, data maps, entropy, margin),
`selection` (hardest / easiest / random per label), `sanity`, `scorers` (weak scorers and the `Scorer`
protocol), `deep` (per-sample gradients with torch.func), `heads` (the weak scorer's linear head),
`classifier` (encoder + linear head, lower blocks optionally frozen).
Django layer: `services.seed_round` (the round pipeline's seed step calls it), command `seed_round`; `weak` trains
the weak scorer on the sampled pool (classification, pairs as two segments, QA spans): docs/seeding.md.
The Hard-Bench reproduction on SST-2 lives outside the app, in `research/hardbench` (docs/hardbench/README.md).
"""
