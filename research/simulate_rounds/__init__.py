"""Round simulations: research beside the product, importing it (no app imports this package).

- `replay`: labelled files replayed through the real services (submit, the validation queue, the round pipeline),
  one round per writers' file; `python -m research.simulate_rounds` (options: `command`).
- `arms`: the loop over many rounds with three arms of collection (standard, static adversarial, dynamic
  adversarial) drawing from a candidate pool, on frozen features; `python -m research.simulate_rounds.arms`.
"""
