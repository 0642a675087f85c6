"""python -m research.arms_study [--per-arm N] [--participants K] [--withdraw W] [--train N] [--seed S] [--json FILE]

A two-arm study on a SCRATCH database (a fresh SQLite file in a temporary folder unless --database names another;
never the site's database), built from real data under DATA_DIR (default ../shared/data):

- the model writers face: the platform's classifier (all-MiniLM-L6-v2 with a classification head, trained by
  `modelzoo.services.train_model` on a stable sample of SST-2 **train**, one epoch), deployed as round 1's ensemble;
- arm `loop` ("model in the loop"): sentences of DynaSent round 1 **dev**, which were selected with a model in the
  loop (Potts et al. 2021: review sentences kept when round 0's model got them wrong, with a share of others);
- arm `standard`: the SST-2 **dev** sentences that DynaSent revalidated (`sst_dev_validated`): standard collection;
- the writer's label: the source's own label (the Yelp review's star rating for DynaSent R1, 1–2 negative and 4–5
  positive; the SST phrase label for SST-2, 0–1 negative and 3–4 positive; middle values left out);
- validation: DynaSent's own five crowd annotators per sentence (the same protocol for both corpora): verified when
  their majority label is the writer's label, rejected otherwise (another label, or no majority);
- the verdict: the deployed ensemble's prediction and the platform's rule (`tasks.kinds.decide`), as scoring does;
- participants: simulated. `--participants` people per arm, balanced and seeded; each arm's sentences are dealt at
  random to its people, and `--withdraw` of the `loop` people withdraw consent (left out of the comparison).

Dev sentences are only written and scored here, never trained on. No times are recorded in these corpora, so the
time columns stay empty. Prints the comparison (`rounds.arms.as_text`) and, with --json, writes it as JSON.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m research.arms_study", description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=None, help="a scratch DATABASE_URL (default: a new SQLite file)")
    parser.add_argument("--per-arm", type=int, default=300, help="sentences per arm (default 300)")
    parser.add_argument("--participants", type=int, default=10, help="simulated participants per arm (default 10)")
    parser.add_argument("--withdraw", type=int, default=1, help="participants of arm `loop` who withdraw (default 1)")
    parser.add_argument("--train", type=int, default=1000, help="SST-2 train sentences the model learns (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the comparison as JSON here")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    scratch = None
    if args.database is None:
        scratch = tempfile.mkdtemp(prefix="arms-study-")
        os.environ["DATABASE_URL"] = f"sqlite:///{scratch}/study.sqlite3"
        os.environ["MODEL_STORE"] = f"{scratch}/models"
    else:
        os.environ["DATABASE_URL"] = args.database
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    from research.arms_study.build import build

    data, seconds = build(per_arm=args.per_arm, participants=args.participants, withdraw=args.withdraw,
                          train=args.train, seed=args.seed, log=lambda m: print(m, file=sys.stderr))
    seconds = {"migrate": round(seconds.pop("start") - started, 1), **seconds,
               "total": round(time.perf_counter() - started, 1)}
    from rounds.arms import as_text

    print(as_text(data), end="")
    print("\nSeconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items()))
    if args.json:
        import json

        args.json.write_text(json.dumps({**data, "seconds": seconds}, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
