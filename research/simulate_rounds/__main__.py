"""python -m research.simulate_rounds <task> --writers R1.jsonl[:N][@PRESET] … --held-out H.jsonl[:N][@PRESET] …

The round simulation through the real services (research/simulate_rounds/replay.py; the options are
research/simulate_rounds/command.py's, `--help` lists them). It writes real rows into the database the settings
name (DATABASE_URL): use a scratch database. Run it from the project's root.

The many-round experiment over arms of collection (standard, static and dynamic adversarial) on frozen features
is `python -m research.simulate_rounds.arms` (research/simulate_rounds/arms.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

PROG = "python -m research.simulate_rounds"


def main(argv: Sequence[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django

    django.setup()
    from research.simulate_rounds.command import Command

    Command().run_from_argv([PROG, "", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
