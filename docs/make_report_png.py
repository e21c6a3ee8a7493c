"""Regenerate `docs/report.png`, the picture of the demo's report on the README and the home page.

The caption says it is the demo tournament's report, so the picture is made from the demo
and nothing else: the script runs `tournaments/demo.toml` into a scratch folder (30 games,
about 40 seconds on two cores), writes its report with `arbiter report`, and screenshots
the page in headless Chromium through selenium (Debian: `apt-get install chromium
chromium-driver`; `pip install selenium`). Run it from the repository root:

    python docs/make_report_png.py            # writes docs/report.png
    python docs/make_report_png.py -o x.png   # or another file

The repository's store of the demo is not touched: the run has its own copy of the file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 1200  # the page's width in CSS pixels; the height is the page's own


def arbiter(*args: str, cwd: Path) -> None:
    """Run `arbiter ARGS` from this checkout, so that the picture shows this version."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "arbiter", *args], cwd=cwd, env=env, check=True)


def screenshot(page: Path, out: Path, profile: Path) -> None:
    """The whole page as headless Chromium draws it, `WIDTH` pixels wide."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        sys.exit(
            "make_report_png: needs chromium and chromedriver on PATH "
            "(Debian: apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--disable-dev-shm-usage",
        f"--window-size={WIDTH},1000",
        "--force-device-scale-factor=1",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.get(page.as_uri())
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(WIDTH, int(height) + 200)  # room for the browser's own frame
        inner = driver.execute_script("return window.innerHeight")
        driver.set_window_size(WIDTH, int(height) + 200 + int(height) - int(inner))
        out.write_bytes(driver.get_screenshot_as_png())
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", type=Path, default=ROOT / "docs" / "report.png")
    out = parser.parse_args().out.resolve()
    with tempfile.TemporaryDirectory(prefix="report-png-") as scratch:
        here = Path(scratch)
        shutil.copy(ROOT / "tournaments" / "demo.toml", here / "demo.toml")
        arbiter("tournament", "run", "demo.toml", cwd=here)
        arbiter("report", "demo.toml", "-o", "demo.html", cwd=here)
        screenshot(here / "demo.html", out, here / "profile")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
