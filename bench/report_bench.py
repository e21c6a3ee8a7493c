#!/usr/bin/env python3
"""The HTML report of a large tournament: file size, time to write it, time to open it.

Run: python bench/report_bench.py [--games 1000] [--engines 10] [--size 11] [--islands 8]
[--faults 0.03] [--loads 3] [--quick] [--keep DIR].

Builds a records file of N synthetic games (round-robin, seat-swapped pairs, random legal
games replayed by the rules core, so they run long; a share of them lost by a crash with
a full 64 KiB stderr tail as evidence), writes the report with the real CLI and prints
its size. Where Chromium, chromedriver and selenium are installed, it opens the page in
headless Chromium `--loads` times and prints the browser's own timings (DOMContentLoaded,
the load event, the moment the viewer has drawn its first game, and the moment the
games' records are unpacked for the download), then steps the
viewer through the longest game. Numbers go to stdout; compare runs made on the same
machine in the same session only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from arbiter.cli import main as cli
from arbiter.results.records import SCHEMA
from arbiter.rules import Game, Variant


def synthetic_records(
    games: int, engines: int, variant: Variant, faults: float, seed: int
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    names = [f"engine-{i:02d}" for i in range(engines)]
    pairings = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    out: list[dict[str, Any]] = []
    round_ = 0
    while len(out) < games:
        round_ += 1
        for a, b in pairings:
            pair = hashlib.sha256(f"{round_}{a}{b}".encode()).hexdigest()[:16]
            for seat1, seat2 in ((a, b), (b, a)):
                if len(out) >= games:
                    break
                out.append(_game(rng, variant, seat1, seat2, round_, pair, faults))
    return out


def _game(
    rng: random.Random,
    variant: Variant,
    seat1: str,
    seat2: str,
    round_: int,
    pair: str,
    faults: float,
) -> dict[str, Any]:
    game = Game(variant)
    moves: list[str] = []
    crash_at = rng.randrange(4, 40) if rng.random() < faults else None
    while game.winner is None and (crash_at is None or len(moves) < crash_at):
        if len(moves) == 1 and variant.pie and rng.random() < 0.3:
            move = "swap"
        else:
            move = game.geometry.names[rng.choice(game.legal_cells())]
        game.play(move)
        moves.append(move)
    swapped = "swap" in moves
    black, white = (seat2, seat1) if swapped else (seat1, seat2)
    evidence = None
    if game.winner is None:  # the side to move crashed
        loser = black if game.to_move.name == "BLACK" else white
        winner = seat2 if loser == seat1 else seat1
        termination = "crash"
        evidence = {
            "engine": loser,
            "detail": "genmove: closed its stdout (exited or crashed); exit status 1",
            "transcript": [f"> {n} play b a1" for n in range(20)],
            "returncode": 1,
            "stderr_tail": ("trace line " * 12 + "\n") * 540,
            "stage": "game",
        }
    else:
        winner = black if game.winner.name == "BLACK" else white
        termination = "connection"
    gid = "r{}-{}".format(
        round_, hashlib.sha256(f"{round_}{seat1}{seat2}".encode()).hexdigest()[:16]
    )
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "game_id": gid,
        "variant": {"size": variant.size, "islands": variant.islands, "pie": variant.pie},
        "seat1": seat1,
        "seat2": seat2,
        "swapped": swapped,
        "black": black,
        "white": white,
        "winner": winner,
        "winner_color": "black" if winner == black else "white",
        "termination": termination,
        "void": False,
        "reason": evidence["detail"] if evidence else "",
        "plies": len(moves),
        "moves": moves,
        "move_ms": [round(rng.uniform(1, 300), 1) for _ in moves],
        "tc": {"seat1": "10+0.1", "seat2": "10+0.1"},
        "started": "2026-11-23T10:00:00.000Z",
        "finished": "2026-11-23T10:00:09.000Z",
        "versions": {},
        "seed": 1,
        "pair": pair,
        "commands": {},
        "answers": {"seat1": seat1, "seat2": seat2},
    }
    if evidence:
        record["evidence"] = evidence
    return record


def browser_timings(page: Path, loads: int, profile: Path) -> list[str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        return ["browser: skipped (selenium is not installed)"]
    if chromium is None or driver_path is None:
        return ["browser: skipped (needs chromium and chromedriver)"]
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    lines = []
    try:
        driver.get("about:blank")  # the browser's own start-up is not the page's
        rows: list[tuple[float, float, float, float, float]] = []
        for _ in range(loads):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(page.as_uri())
            wall = time.perf_counter() - start
            WebDriverWait(driver, 30).until(
                lambda d: d.execute_script(
                    "return document.getElementById('download').dataset.ready"
                )
            )
            dcl, load, ready, records = driver.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "const r = performance.getEntriesByName('viewer-ready')[0];"
                "const d = performance.getEntriesByName('records-ready')[0];"
                "return [n.domContentLoadedEventEnd, n.loadEventEnd, r ? r.startTime : -1,"
                " d ? d.startTime : -1];"
            )
            rows.append((dcl, load, ready, records, wall * 1000))
        for label, k in (
            ("DOMContentLoaded", 0),
            ("load event", 1),
            ("viewer ready", 2),
            ("download ready", 3),
            ("driver.get wall time", 4),
        ):
            values = [r[k] for r in rows]
            lines.append(
                f"browser {label}: median {statistics.median(values):.0f} ms,"
                f" max {max(values):.0f} ms over {loads} loads"
            )
        step_ms, plies = driver.execute_script(
            "const data = JSON.parse(document.getElementById('report-data').textContent);"
            "let longest = 0; data.games.forEach(function (g, i) {"
            "  if (g.p > data.games[longest].p) { longest = i; } });"
            "location.hash = '#game=' + (longest + 1) + '&ply=0';"
            "window.dispatchEvent(new HashChangeEvent('hashchange'));"
            "const t0 = performance.now();"
            "for (let i = 0; i < data.games[longest].p; i++) {"
            "  document.body.dispatchEvent(new KeyboardEvent('keydown',"
            "    {key: 'ArrowRight', bubbles: true})); }"
            "return [(performance.now() - t0) / data.games[longest].p, data.games[longest].p];"
        )
        lines.append(
            f"viewer step (Right arrow, longest game of {plies} plies): {step_ms:.2f} ms per ply"
        )
    finally:
        driver.quit()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--engines", type=int, default=10)
    parser.add_argument("--size", type=int, default=11)
    parser.add_argument("--islands", type=int, default=8, choices=(8, 4))
    parser.add_argument("--faults", type=float, default=0.03, help="share of crashed games")
    parser.add_argument("--loads", type=int, default=3, help="page loads in the browser")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--quick", action="store_true", help="40 games, no browser")
    parser.add_argument("--keep", type=Path, default=None, help="write the files here")
    args = parser.parse_args()
    if args.quick:
        args.games, args.no_browser = 40, True
    variant = Variant(args.islands, args.size, True)

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        records = folder / "games.jsonl"
        page = folder / "report.html"
        start = time.perf_counter()
        games = synthetic_records(args.games, args.engines, variant, args.faults, seed=1)
        with open(records, "w", encoding="utf-8") as handle:
            for record in games:
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
        made = time.perf_counter() - start
        plies = sum(len(g["moves"]) for g in games)
        faulty = sum("evidence" in g for g in games)
        print(
            f"{len(games)} games ({variant}, {args.engines} engines, {plies / len(games):.0f}"
            f" plies on average, {faulty} crashes with 64 KiB stderr) made in {made:.1f} s;"
            f" records file {records.stat().st_size / 1e6:.2f} MB"
        )
        start = time.perf_counter()
        done = CliRunner().invoke(cli, ["report", str(records), "-o", str(page)])
        wrote = time.perf_counter() - start
        if done.exit_code != 0:
            sys.exit(f"report failed: {done.output}")
        size = page.stat().st_size
        print(
            f"report written in {wrote:.2f} s: {size / 1e6:.2f} MB"
            f" ({size / len(games) / 1000:.2f} kB per game; budget 5 MB for 1,000 games)"
        )
        if not args.no_browser:
            for line in browser_timings(page, args.loads, folder / "chromium-profile"):
                print(line)


if __name__ == "__main__":
    main()
