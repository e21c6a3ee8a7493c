#!/usr/bin/env python3
"""Whether the machine's load changes what a clock charges: wall clocks against CPU
clocks, on an idle machine and beside CPU hogs, in one run of this script.

A fixed-work engine (the bundled Monte Carlo bot at a fixed number of playouts per move,
seeded, with a clock far too long to cut a search short) plays itself one game per
condition: the same game, ply for ply, every time. The conditions are {wall, cpu} clocks
x {idle, loaded}; loaded means N busy-looping processes for each N of --hogs (by
default one and three per core), each started in a session of its own (setsid) as
other users' programs are: the kernel shares the CPU between sessions first, so hogs in
the harness's own session would barely slow the engines. Printed per condition: the
engines' charged time (the sum of `move_ms`) and their wall time (the sum of the wall
times per move), and per clock the ratio loaded / idle of the charged time. A CPU clock
should charge within 10% of its idle figure when loaded, a wall clock more than twice.

Each condition is played --reps times, the conditions interleaved (forwards, then
backwards) so that a drift of the machine's own load weighs on all alike; printed are
the median and the range.

Run: python bench/clock_bench.py [--playouts N] [--size N, of a Hex board] [--hogs N,M]
[--reps N] [--quick]. Numbers go to stdout; "idle" is whatever else the machine runs
meanwhile.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import trio

from arbiter.engines.player import Player
from arbiter.engines.process import Deadlines, EngineSpec, open_engine
from arbiter.games.referee import GameSpec, Referee, RefereeConfig
from arbiter.results.records import GameRecord
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl

BOTS = Path(__file__).resolve().parents[1] / "arbiter" / "bots"
HOG = "while True: pass"


def engine(name: str, playouts: int, clock: ClockMode) -> EngineSpec:
    argv = (sys.executable, str(BOTS / "mc_bot.py"), "--playouts", str(playouts), "--seed", "1")
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return EngineSpec(argv, name=name, cwd=str(BOTS), env=env, clock=clock)


async def game(playouts: int, size: int, clock: ClockMode) -> GameRecord:
    specs = [engine(n, playouts, clock) for n in ("mc-a", "mc-b")]
    tc = TimeControl.parse("3000+0")  # never cuts a search short, loaded or not
    spec = GameSpec(
        "bench", Variant(islands=4, size=size, pie=False), (tc, tc), clocks=(clock, clock)
    )
    deadlines = Deadlines(handshake=60, command=60)
    async with open_engine(specs[0], deadlines) as a, open_engine(specs[1], deadlines) as b:
        outcome = await Referee(RefereeConfig()).play(spec, [Player.of(a), Player.of(b)])
    return outcome.record


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(count)
    ]


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--playouts", type=int, default=4096)
    parser.add_argument("--size", type=int, default=7)
    parser.add_argument(
        "--hogs",
        default=f"{os.cpu_count() or 1},{3 * (os.cpu_count() or 1)}",
        help="hog counts to load the machine with, comma separated (default: 1 and 3 per core)",
    )
    parser.add_argument("--reps", type=int, default=3, help="games per clock and load")
    parser.add_argument("--quick", action="store_true", help="a tiny game: a smoke test")
    args = parser.parse_args()
    playouts, size = (128, 4) if args.quick else (args.playouts, args.size)
    reps = 1 if args.quick else args.reps
    loads = [0, *(int(n) for n in args.hogs.split(",") if n.strip())]
    print(
        f"{os.cpu_count()} cores; hogs {', '.join(map(str, loads[1:]))}; mc_bot --playouts"
        f" {playouts}; {reps} games per clock and load; load average before"
        f" {os.getloadavg()[0]:.1f}"
    )
    charged: dict[tuple[str, int], list[float]] = {}
    walls: dict[tuple[str, int], list[float]] = {}
    moves: set[tuple[str, ...]] = set()
    clocks = [ClockMode.WALL, ClockMode.CPU]
    for rep in range(reps):
        # Interleaved, and in turn forwards and backwards, so that a drift of the
        # machine's own load over the run weighs on every condition alike.
        for load in loads if rep % 2 == 0 else loads[::-1]:
            started = hogs(load)
            try:
                for clock in clocks if rep % 2 == 0 else clocks[::-1]:
                    record = trio.run(game, playouts, size, clock)
                    moves.add(tuple(record.moves))
                    cost = sum(record.move_ms) / 1000
                    wall = sum(record.wall_ms) / 1000 if record.wall_ms else cost
                    charged.setdefault((clock.value, load), []).append(cost)
                    walls.setdefault((clock.value, load), []).append(wall)
            finally:
                for hog in started:
                    os.killpg(hog.pid, signal.SIGKILL)
                    hog.wait()
            time.sleep(0.5 if load else 0)
    print(f"{'clock':6} {'hogs':>4} {'charged s, median (range)':>27} {'wall s':>22}")
    for clock in ("wall", "cpu"):
        for load in loads:
            key = (clock, load)
            print(f"{clock:6} {load:4} {_spread(charged[key]):>27} {_spread(walls[key]):>22}")
    for clock in ("wall", "cpu"):
        idle = statistics.median(charged[(clock, 0)])
        for load in loads[1:]:
            ratio = statistics.median(charged[(clock, load)]) / max(idle, 1e-9)
            print(f"{clock} clock, {load} hogs: loaded / idle = {ratio:.2f}")
    print("same game in every condition:", "yes" if len(moves) == 1 else "NO")


if __name__ == "__main__":
    main()
