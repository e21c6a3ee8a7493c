"""Headless Chromium for the tests that look at a page as a browser shows it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def open_chromium(profile: Path) -> Any:
    """A headless Chromium driven by selenium, its console kept; the test skips, saying
    why, where Chromium, its driver or selenium is missing."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "needs chromium and chromedriver (Debian: apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1600",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
