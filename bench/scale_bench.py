#!/usr/bin/env python3
"""Results at scale: time, peak memory and page size of every reader, by number of games.

Run: python bench/scale_bench.py [--sizes 10000,100000,1000000] [--engines 50]
[--templates 2000] [--faults 0.01] [--keep DIR] [--no-store] [--no-browser] [--only WORDS].

For each size it writes N legal Atoll games (8 islands, size 11, pie rule) of a pool of
`--engines` engines, round-robin in seat-swapped pairs, as a records file and as a
results store (through `Store.write`, the path a run takes, timing the first and the
last thousand writes), then runs each reader as a child process of the real CLI and
prints its wall time, its peak RSS (the child's own, from wait4) and, for `report`, the
page's size. Where Chromium and selenium are installed, the default page of each size
is opened in headless Chromium and its load time printed.

The games: `--templates` random playouts are played with the rules core, then
replicated with distinct ids, pairs, seats and times; a `--faults` share is cut short
at a random ply and lost by the side to move (time or crash, with a little evidence).
Every line is a legal record that the records reader replays in full.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arbiter.results.records import SCHEMA, GameRecord  # noqa: E402
from arbiter.rules import Color, Game, Variant  # noqa: E402

VARIANT = Variant(8, 11, True)
TC = {"seat1": "10+0.1", "seat2": "10+0.1"}


def templates(count: int, seed: int) -> list[tuple[list[str], str]]:
    """Random playouts: (moves, colour that connected)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        game = Game(VARIANT)
        moves: list[str] = []
        while game.winner is None:
            if len(moves) == 1 and rng.random() < 0.3:
                move = "swap"
            else:
                move = game.geometry.names[rng.choice(game.legal_cells())]
            game.play(move)
            moves.append(move)
        out.append((moves, "black" if game.winner is Color.BLACK else "white"))
    return out


def games(
    n: int, *, engines: int = 50, templates_count: int = 2000, faults: float = 0.01, seed: int = 1
) -> Iterator[dict[str, Any]]:
    """N legal game records (JSON objects) of a round-robin in seat-swapped pairs."""
    rng = random.Random(seed)
    pool = templates(min(templates_count, max(n, 1)), seed)
    names = [f"engine-{i:02d}" for i in range(engines)]
    pairings = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    for i in range(n):
        a, b = pairings[(i // 2) % len(pairings)]
        seat1, seat2 = (a, b) if i % 2 == 0 else (b, a)
        moves, color = pool[rng.randrange(len(pool))]
        swapped = len(moves) > 1 and moves[1] == "swap"
        black, white = (seat2, seat1) if swapped else (seat1, seat2)
        evidence = None
        termination = "connection"
        if rng.random() < faults:
            cut = rng.randrange(2, len(moves))
            moves = moves[:cut]
            game = Game(VARIANT)
            for move in moves:
                game.play(move)
            color = "white" if game.to_move is Color.BLACK else "black"  # the other won
            termination = rng.choice(("time", "crash"))
        winner = black if color == "black" else white
        loser = seat2 if winner == seat1 else seat1
        if termination != "connection":
            evidence = {
                "engine": loser,
                "detail": f"{termination} at ply {len(moves) + 1}",
                "transcript": [f"> play b {m}" for m in moves[-4:]],
                "returncode": 1 if termination == "crash" else None,
                "stderr_tail": "trace\n" * 20,
                "stage": "game",
            }
        second = i
        started = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_780_000_000 + 10 * second))
        finished = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_780_000_009 + 10 * second))
        record: dict[str, Any] = {
            "schema": SCHEMA,
            "game_id": f"scale-{i + 1}",
            "variant": {"size": VARIANT.size, "islands": VARIANT.islands, "pie": VARIANT.pie},
            "seat1": seat1,
            "seat2": seat2,
            "swapped": swapped,
            "black": black,
            "white": white,
            "winner": winner,
            "winner_color": color,
            "termination": termination,
            "void": False,
            "reason": evidence["detail"] if evidence else "",
            "plies": len(moves),
            "moves": moves,
            "move_ms": [round(rng.uniform(1, 300), 1) for _ in moves],
            "tc": TC,
            "started": started + ".000Z",
            "finished": finished + ".000Z",
            "versions": {},
            "seed": i,
            "pair": f"p{i // 2:07d}",
            "commands": {},
            "answers": {"seat1": seat1, "seat2": seat2},
            "host": f"node{i % 4}",
            "cpu": "bench CPU",
        }
        if evidence:
            record["evidence"] = evidence
        yield record


def write_records(path: Path, n: int, **kw: Any) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for record in games(n, **kw):
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")


class _Slot:
    """A scheduled game as the store files it (`arbiter.results.store.Scheduled`)."""

    def __init__(self, record: dict[str, Any], number: int) -> None:
        self.game_id = record["game_id"]
        self.number = number
        self.round = 1 + number // 2450
        self.pair_key = record["pair"]
        self.engines = (record["seat1"], record["seat2"])
        self.opening: tuple[str, ...] = ()


def _record(data: dict[str, Any]) -> GameRecord:
    """The record object as a run hands it to the store (built, not parsed: a run's
    records are its own)."""
    from arbiter.results.records import Evidence, StoneColor, Termination

    fields = {k: v for k, v in data.items() if k != "plies"}
    fields["termination"] = Termination(fields["termination"])
    fields["winner_color"] = StoneColor(fields["winner_color"])
    if "evidence" in fields:
        fields["evidence"] = Evidence(**fields["evidence"])
    return GameRecord(**fields)


def _first(records: Iterator[dict[str, Any]]) -> Iterator[Iterator[dict[str, Any]]]:
    """The records with the first one made (and the playouts behind them played)."""
    import itertools

    first = next(records, None)
    yield records if first is None else itertools.chain([first], records)


def write_store(path: Path, n: int, **kw: Any) -> tuple[float, float]:
    """A store of N games written game by game through Store.write: (ms per write over
    the first 1,000 games, ms per write over the last 1,000)."""
    from arbiter.results.store import EngineEntry, Store

    first = last = 0.0
    store = Store.open(path)
    try:
        names = [f"engine-{i:02d}" for i in range(kw.get("engines", 50))]
        store.begin(
            "scale",
            {"kind": "match"},
            {"name": "scale", "games": n},
            {name: EngineEntry({"command": name}, (name,)) for name in names},
        )
        made = list(_first(games(n, **kw)))  # the playouts are played before the clock
        clock = time.perf_counter()
        for number, data in enumerate(made[0], 1):
            store.write(_Slot(data, number), _record(data))
            if number == min(1000, n):
                first = (time.perf_counter() - clock) / number * 1000
            if number == n - min(1000, n):
                clock = time.perf_counter()
        last = (time.perf_counter() - clock) / min(1000, n) * 1000
    finally:
        store.close()
    return first, last


def measure(args: list[str], out: Path | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of `arbiter ARGS` run as a child process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    with (
        open(os.devnull, "w") as null,
        subprocess.Popen(
            [sys.executable, "-m", "arbiter", *args], env=env, stdout=null, stderr=subprocess.PIPE
        ) as child,
    ):
        assert child.stderr is not None
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)  # the child's own peak, not the largest
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"arbiter {' '.join(args)} failed:\n{err.decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def page_load(page: Path) -> str:
    """Seconds until the default page's viewer is ready in headless Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        return "n/a"
    if chromium is None or driver_path is None:
        return "n/a"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    with tempfile.TemporaryDirectory() as profile:
        for flag in (
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        try:
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(page.as_uri())
            WebDriverWait(driver, 60).until(
                lambda d: d.execute_script(
                    "return document.getElementById('download').dataset.ready"
                )
            )
            return f"{time.perf_counter() - start:.2f} s"
        finally:
            driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--engines", type=int, default=50)
    parser.add_argument("--templates", type=int, default=2000)
    parser.add_argument("--faults", type=float, default=0.01)
    parser.add_argument("--keep", type=Path, default=None, help="write the files here")
    parser.add_argument("--no-store", action="store_true", help="records files only")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--only",
        default="",
        help="run only the commands whose label holds"
        " one of these comma-separated words (e.g. status,write)",
    )
    args = parser.parse_args()
    only = [w for w in args.only.split(",") if w]
    sizes = [int(s) for s in args.sizes.split(",")]
    kw = {"engines": args.engines, "templates_count": args.templates, "faults": args.faults}
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            records = folder / f"games-{n}.jsonl"
            start = time.perf_counter()
            write_records(records, n, **kw)
            print(
                f"{n} games: records file {records.stat().st_size / 1e6:.0f} MB written in"
                f" {time.perf_counter() - start:.0f} s",
                flush=True,
            )
            page = folder / f"report-{n}.html"
            last = f"scale-{n}"
            commands = [
                ("ratings (file)", ["ratings", str(records)], None),
                ("show (file, list)", ["show", str(records)], None),
                ("show --game last (file)", ["show", str(records), "--game", last], None),
                ("report (file)", ["report", str(records), "-o", str(page)], page),
            ]
            if not args.no_store:
                store = folder / f"games-{n}.sqlite"
                start = time.perf_counter()
                first, final = write_store(store, n, **kw)
                print(
                    f"{n} games: store {store.stat().st_size / 1e6:.0f} MB written in"
                    f" {time.perf_counter() - start:.0f} s; Store.write {first:.2f} ms per"
                    f" game over the first 1,000, {final:.2f} ms over the last 1,000",
                    flush=True,
                )
                spage = folder / f"report-store-{n}.html"
                commands += [
                    ("tournament status (store)", ["tournament", "status", str(store)], None),
                    ("ratings (store)", ["ratings", str(store)], None),
                    (
                        "tournament export (store)",
                        ["tournament", "export", str(store), "--records", os.devnull],
                        None,
                    ),
                    ("report (store)", ["report", str(store), "-o", str(spage)], spage),
                ]
            for label, command, out in commands:
                if only and not any(w in label for w in only):
                    continue
                seconds, peak = measure(command)
                size = f"{out.stat().st_size / 1e6:.1f} MB" if out is not None else ""
                load = ""
                if out is not None and not args.no_browser:
                    load = page_load(out)
                rows.append((n, label, seconds, peak, size, load))
                print(
                    f"| {n:,} | {label} | {seconds:.1f} s | {peak:.0f} MB | {size} | {load} |",
                    flush=True,
                )
            for path in folder.glob(f"*-{n}.*"):
                if args.keep is None:
                    path.unlink()
    print()
    print("| games | command | time | peak RSS | page | page load |")
    print("|---|---|---|---|---|---|")
    for n, label, seconds, peak, size, load in rows:
        print(f"| {n:,} | {label} | {seconds:.1f} s | {peak:.0f} MB | {size} | {load} |")


if __name__ == "__main__":
    main()
