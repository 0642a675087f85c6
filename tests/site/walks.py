"""A browser that watches what a page does while a persona walks through the site.

Each page of a walk is checked, at the width the walk runs at, for the three things a person notices:
a script error or a failed load in the browser console, a page wider than the window (a horizontal scroll
bar at 420 px), and any request that leaves this site (fonts, logos or scripts from a CDN fail offline
and leak who reads what). Chromium's own logs give all three: the console log, and the Network events of
the performance log (`goog:loggingPrefs`).
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WIDTHS = (1400, 420)
HEIGHT = 900
MAX_SHOT_HEIGHT = 2600  # CSS pixels: enough for a page's first screens, small enough for the gallery


def start_chromium():
    """Headless Chromium with its console and network logs kept for the test to read."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver_path:
        raise RuntimeError("chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="chromium-walks-")
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--hide-scrollbars", f"--window-size={WIDTHS[0]},{HEIGHT}", f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.implicitly_wait(0)
    driver.profile_dir = profile
    return driver


def stop_chromium(driver) -> None:
    driver.quit()
    shutil.rmtree(driver.profile_dir, ignore_errors=True)


class Walk:
    """One persona's walk at one width: `go(path)` opens a page and checks it; `shot(name)` keeps a picture."""

    def __init__(self, driver, base_url: str, persona: str, width: int, shots: Path):
        self.driver, self.base, self.persona, self.width, self.shots = driver, base_url, persona, width, shots
        self.host = urlsplit(base_url).netloc
        self.problems: list[str] = []
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
        self.drain()

    # --- moving ------------------------------------------------------------------------------------
    def go(self, path: str, ready: str | None = None, status: int = 200) -> None:
        """Open a page of the site, wait until it (and `ready`, a CSS selector, if given) is there, check it.
        With an error `status` expected, the console's note that the page itself answered it is no error."""
        self.driver.get(self.base + path)
        self.settle(ready)
        self.check(path, expected=f"{self.base}{path} - Failed to load resource: the server responded with a status "
                                  f"of {status}" if status >= 400 else None)

    def settle(self, ready: str | None = None, timeout: float = 20) -> None:
        wait = WebDriverWait(self.driver, timeout, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
        if ready:
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ready))

    def until(self, condition: Callable, timeout: float = 20) -> None:
        WebDriverWait(self.driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)

    def find(self, selector: str):
        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def text(self, selector: str) -> str:
        return self.find(selector).text

    # --- checking ----------------------------------------------------------------------------------
    def check(self, where: str, overflow: bool = True, expected: str | None = None) -> None:
        """Console errors, horizontal overflow and outside requests since the last check."""
        label = f"{self.persona} at {self.width}px on {where}"
        for entry in self.driver.get_log("browser"):
            if entry["level"] == "SEVERE" and not (expected and entry["message"].startswith(expected)):
                self.problems.append(f"{label}: console error: {entry['message']}")
        for url in self.requests():
            if self.external(url):
                self.problems.append(f"{label}: request to another site: {url}")
        if overflow:
            wide, inner = self.driver.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]")
            if wide > inner:
                culprit = self.driver.execute_script(WIDEST)
                self.problems.append(f"{label}: the page is {wide}px wide in a {inner}px window ({culprit})")

    def requests(self) -> Iterator[str]:
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                yield message["params"]["request"]["url"]

    def external(self, url: str) -> bool:
        scheme = urlsplit(url).scheme
        return scheme in ("http", "https", "ws", "wss") and urlsplit(url).netloc != self.host

    def drain(self) -> None:
        self.driver.get_log("browser")
        self.driver.get_log("performance")

    # --- pictures ----------------------------------------------------------------------------------
    def shot(self, name: str) -> Path:
        """The page as the persona sees it (up to MAX_SHOT_HEIGHT tall), as var/screenshots/<name>-<width>.png."""
        height = min(self.driver.execute_script("return document.documentElement.scrollHeight"), MAX_SHOT_HEIGHT)
        data = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}})
        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / f"{name}-{self.width}.png"
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def close(self) -> None:
        self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# The element that sticks out furthest to the right, to say in a failure which one widens the page.
WIDEST = """
let worst = null, right = window.innerWidth;
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.right > right + 0.5 && r.width > 0) { right = r.right; worst = el; }
}
if (!worst) return 'no element found';
const id = worst.id ? '#' + worst.id : '';
const cls = worst.className && typeof worst.className === 'string' ? '.' + worst.className.trim().split(/\\s+/).join('.') : '';
return worst.tagName.toLowerCase() + id + cls + ' reaches ' + Math.round(right) + 'px';
"""
