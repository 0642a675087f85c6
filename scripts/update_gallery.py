"""Copy the persona walks' pictures of each persona's main page (var/screenshots/, written by
`pytest tests/site/test_persona_walks.py`) into docs/gallery/, smaller: 1400 px pictures at 1000 px wide, every
picture in 256 colours. Run it after the walks when the pages change:

    .venv/bin/python -m pytest tests/site/test_persona_walks.py && .venv/bin/python scripts/update_gallery.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
SOURCE, TARGET = ROOT / "var" / "screenshots", ROOT / "docs" / "gallery"
MAIN_PAGES = ("anonymous-home", "new-signup-welcome", "annotator-create", "annotator-verdict", "validator-validate",
              "expert-queue", "owner-console", "owner-settings", "owner-close-round", "researcher-task",
              "anonymous-dashboard", "admin-console")
WIDE, WIDE_TO = 1400, 1000
# pictures of other browser tests, copied when a run made them: tests/annotation/test_assistant_page.py; the
# guidelines gate, My examples, how validators judge and a failed quiz (issue 39: tests/annotation/
# test_guidelines_gate.py, test_my_examples.py, tests/validation/test_judging.py, tests/crowd/test_qualification.py)
OTHER_PAGES = ("annotator-assistant-1400", "leaderboard-weights-refused-420", "data-map-dashboard", "data-map-none",
               *(f"{name}-{width}" for name in ("annotator-guidelines-first", "annotator-guidelines-changed",
                                                 "annotator-my-examples", "validator-judging", "validator-quiz-result",
                                                 "owner-publish", "researcher-downloads", "annotator-training-notice",
                                                 "home-training-notice", "annotator-opponent-row", "leaderboard-test-sets", "chat",
                                                 "chat-pairwise", "chat-judge", "arena",
                                                 "leaderboard-weights", "predictions-upload", "predictions-report",
                                                 "study-create-ar", "owner-webhooks", "owner-webhook-log")
                 for width in (1400, 420)),
               # the study walked (issue 42: tests/study/test_participant_walk.py), in Spanish and in Arabic
               *(f"study-{who}-{step}-{width}" for who in ("es-P-ES", "ar-P-AR")
                 for step in ("join", "consent", "pre-survey", "create", "post-survey") for width in (1400, 420)),
               *(f"study-{name}-{width}" for name in ("ar-P-NO-ineligible", "owner-webhook-log")
                 for width in (1400, 420)),
               "study-owner-arms-1400")


def shrink(source: Path, target: Path) -> int:
    image = Image.open(source).convert("RGB")
    if image.width == WIDE:
        image = image.resize((WIDE_TO, round(image.height * WIDE_TO / WIDE)), Image.LANCZOS)
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
    return target.stat().st_size


def main() -> int:
    missing = [f"{name}-{width}.png" for name in MAIN_PAGES for width in (1400, 420)
               if not (SOURCE / f"{name}-{width}.png").is_file()]
    if missing:
        print(f"missing in {SOURCE}: {', '.join(missing)} (run the persona walks first)", file=sys.stderr)
        return 1
    TARGET.mkdir(parents=True, exist_ok=True)
    total = sum(shrink(SOURCE / f"{name}-{width}.png", TARGET / f"{name}-{width}.png")
                for name in MAIN_PAGES for width in (1400, 420))
    others = [name for name in OTHER_PAGES if (SOURCE / f"{name}.png").is_file()]
    total += sum(shrink(SOURCE / f"{name}.png", TARGET / f"{name}.png") for name in others)
    print(f"{len(MAIN_PAGES) * 2 + len(others)} pictures, {total / 1e6:.1f} MB in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
