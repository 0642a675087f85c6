"""Page tests at a phone's and a desktop's width with the `browser` fixture (tests/conftest.py): the window's
width, a picture of the page for docs/gallery/ (var/screenshots/<name>-<width>.png, copied by
scripts/update_gallery.py), and whether an element is in view. The persona walks (tests/site/walks.py) do the
same with their own Chromium, which also reads the console and network logs."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from tests.site.walks import HEIGHT, MAX_SHOT_HEIGHT, WIDTHS

SHOTS = Path(settings.VAR_DIR) / "screenshots"
__all__ = ["SHOTS", "WIDTHS", "in_view", "shot", "sized", "too_wide"]


@contextmanager
def sized(browser, width: int) -> Iterator[None]:
    """The window `width` CSS pixels wide (and walks.HEIGHT tall) while the block runs."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    try:
        yield
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def shot(browser, name: str, width: int) -> Path:
    """The page from its top (at most walks.MAX_SHOT_HEIGHT tall) as var/screenshots/<name>-<width>.png."""
    height, inner = browser.execute_script("return [document.documentElement.scrollHeight, window.innerHeight]")
    height = min(height, MAX_SHOT_HEIGHT)
    # A page that fits the window is taken as shown: beyond the viewport, Chromium lays a short right-to-left page
    # out again shifted sideways in the picture (the page itself is not: tests/study/test_participant_walk.py).
    data = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": height > inner,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}-{width}.png"
    path.write_bytes(base64.b64decode(data["data"]))
    return path


def in_view(browser, element) -> bool:
    """The whole element lies inside the window (nothing of it above, below or beside what is shown)."""
    return browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight + 0.5"
        " && r.right <= window.innerWidth + 0.5;", element)


def too_wide(browser) -> str | None:
    """Which element makes the page wider than the window, if one does (a horizontal scroll bar on a phone)."""
    wide, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    if wide <= inner:
        return None
    return browser.execute_script(
        "let worst = null, right = window.innerWidth;"
        "for (const el of document.querySelectorAll('body *')) { const r = el.getBoundingClientRect();"
        "  if (r.right > right + 0.5 && r.width > 0) { right = r.right; worst = el; } }"
        "return worst ? worst.tagName.toLowerCase() + (worst.id ? '#' + worst.id : '') + ' reaches ' + Math.round(right)"
        " + 'px' : 'no element found';")
