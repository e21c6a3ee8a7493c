#!/usr/bin/env python3
"""Whether the machine's load changes what a clock charges: wall clocks against CPU
clocks, on an idle machine and beside CPU hogs, in one run of this script.

A fixed-work engine (the bundled Monte Carlo bot at a fixed number of playouts per move,
seeded, with a clock far too long to cut a search short) plays itself one game per
condition: the same game, ply for ply, every time. The conditions are {wall, cpu} clocks
x {idle, loaded}; loaded means HOGS busy-looping processes (by default three per core),
each started in a session of its own (setsid) as other users' programs are: the kernel
shares the CPU between sessions first, so hogs in the harness's own session would
barely slow the engines. Printed per condition: the engines' charged time (the sum of
`move_ms`) and their wall time (the sum of the wall times per move), and per clock the
ratio loaded / idle of the charged time. A CPU clock should charge within 10% of its
idle figure when loaded, a wall clock more than twice.

Run: python bench/clock_bench.py [--playouts N] [--size N, of a Hex board] [--hogs N] [--quick].
Numbers go to stdout; "idle" is whatever else the machine runs meanwhile.
"""

from __future__ import annotations

import argparse
import os
import signal
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--playouts", type=int, default=1024)
    parser.add_argument("--size", type=int, default=7)
    parser.add_argument("--hogs", type=int, default=3 * (os.cpu_count() or 1))
    parser.add_argument("--quick", action="store_true", help="a tiny game: a smoke test")
    args = parser.parse_args()
    playouts, size = (128, 4) if args.quick else (args.playouts, args.size)
    print(f"{os.cpu_count()} cores; {args.hogs} hogs when loaded; mc_bot --playouts {playouts}")
    print(f"{'clock':6} {'load':7} {'plies':>5} {'charged s':>10} {'wall s':>8}")
    charged: dict[tuple[str, str], float] = {}
    moves: set[tuple[str, ...]] = set()
    for load in ("idle", "loaded"):
        started = hogs(args.hogs) if load == "loaded" else []
        try:
            for clock in (ClockMode.WALL, ClockMode.CPU):
                record = trio.run(game, playouts, size, clock)
                moves.add(tuple(record.moves))
                cost = sum(record.move_ms) / 1000
                wall = sum(record.wall_ms) / 1000 if record.wall_ms else cost
                charged[(clock.value, load)] = cost
                print(f"{clock.value:6} {load:7} {record.plies:5} {cost:10.2f} {wall:8.2f}")
        finally:
            for hog in started:
                os.killpg(hog.pid, signal.SIGKILL)
                hog.wait()
        time.sleep(0.5 if load == "loaded" else 0)
    for clock in ("wall", "cpu"):
        ratio = charged[(clock, "loaded")] / max(charged[(clock, "idle")], 1e-9)
        print(f"{clock} clock: loaded / idle = {ratio:.2f}")
    print("same game in every condition:", "yes" if len(moves) == 1 else "NO")


if __name__ == "__main__":
    main()
