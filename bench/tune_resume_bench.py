#!/usr/bin/env python3
"""SPSA through real engine processes, killed with SIGKILL and resumed: does the tune
reach the test engine's best point, and does the store hold every game once?

The engine is tests/engines/tunebot.py, whose strength is a known function of two
command-line parameters (best at X = 70, Y = 30, ranges 0-100): it resigns at each move
with a probability that grows with the distance from that point. The tune starts at
X = 20, Y = 80 (50 units from the best on each) with the budget the unit tests state
(300 games, batch 2), is killed with SIGKILL once a third of the games are stored, and
is run again to the end. Printed: the values reached and their distance from the best
point in tenths of each range, the games stored (and any stored twice, or a pair left
half played), and the wall time.

Run: python bench/tune_resume_bench.py [--games N] [--kill-after N] [--seed S].
Numbers go to stdout; compare runs made on the same machine only.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUNEBOT = ROOT / "tests" / "engines" / "tunebot.py"
sys.path.insert(0, str(ROOT / "tests" / "kit"))  # the tests' helpers: the same kill -9

from processes import killed_after_games  # noqa: E402

BEST = {"X": 70.0, "Y": 30.0}


def tune_file(folder: Path, games: int, seed: int) -> Path:
    command = json.dumps([sys.executable, str(TUNEBOT), "{X}", "{Y}"])
    path = folder / "tune.toml"
    path.write_text(
        f'[tournament]\nname = "tune"\nformat = "spsa"\ngames = {games}\nislands = 4\n'
        f'size = 5\nseed = {seed}\ntc = "30+1"\nconcurrency = 2\noutput = "tune.sqlite"\n\n'
        '[tune]\nengine = "tb"\nbatch = 2\n\n'
        "[tune.params.X]\nmin = 0\nmax = 100\nstart = 20\n\n"
        "[tune.params.Y]\nmin = 0\nmax = 100\nstart = 80\n\n"
        f'[[engine]]\nname = "tb"\ncommand = {command}\n'
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300, help="the tune's budget")
    parser.add_argument("--kill-after", type=int, default=100, help="games before SIGKILL")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = tune_file(folder, args.games, args.seed)
        start = time.perf_counter()
        killed_after_games(path, args.kill_after)
        run = [sys.executable, "-m", "arbiter", "tournament", "run", str(path), "-q"]
        subprocess.run(run, cwd=ROOT, check=True, capture_output=True, timeout=3600)
        wall = time.perf_counter() - start
        status = [sys.executable, "-m", "arbiter", "tournament", "status", str(path), "--json"]
        done = subprocess.run(status, cwd=ROOT, check=True, capture_output=True, text=True)
        tune = json.loads(done.stdout)["tune"]
        with sqlite3.connect(folder / "tune.sqlite") as con:
            ids = Counter(game_id for (game_id,) in con.execute("SELECT game_id FROM games"))
        pairs = Counter(game_id.split("-")[0] for game_id in ids)
    values = tune["params"]
    print(
        f"games stored: {sum(ids.values())} (budget {args.games}), killed after {args.kill_after}"
    )
    print(f"stored twice: {sum(1 for n in ids.values() if n > 1)}")
    print(f"pairs left half played: {sum(1 for n in pairs.values() if n != 2)}")
    for name, best in BEST.items():
        off = abs(values[name] - best) / 100
        print(f"{name}: {values[name]:g} (best {best:g}; {off:.2f} of the range away)")
    print(f"wall time: {wall:.1f} s")


if __name__ == "__main__":
    main()
