#!/usr/bin/env python3
"""Referee overhead: cost per ply against the raw pipe round trip, and concurrency scaling.

Both sides of each ratio are measured in the same run, against the same instant C engine
(bench/instant_bot.c, compiled here with cc), because these machines are shared and
absolute times drift; each figure is the median of interleaved repetitions (--reps).
Run: python bench/referee_bench.py [--games N] [--reps N] [--forfeit-games N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from arbiter.clock import TimeControl
from arbiter.match import Match, MatchConfig
from arbiter.process import EngineSpec
from arbiter.records import RecordWriter

HERE = Path(__file__).resolve().parent


def build_engine(workdir: Path) -> Path:
    binary = workdir / "instant_bot"
    subprocess.run(
        ["cc", "-O2", "-o", str(binary), str(HERE / "instant_bot.c")], check=True
    )
    return binary


def raw_round_trip(binary: Path, count: int) -> float:
    """Seconds per command round trip from a plain blocking Python loop."""
    proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    fd_in, fd_out = proc.stdin.fileno(), proc.stdout.fileno()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(count):
            os.write(fd_in, b"%d name\n" % i)
            data = b""
            while not data.endswith(b"\n\n"):
                data += os.read(fd_out, 4096)
        best = min(best, (time.perf_counter() - start) / count)
    proc.stdin.close()
    proc.wait()
    return best


async def _plain_trio_loop(binary: Path, count: int) -> float:
    """Seconds per ply for the least a trio referee must do: one pipelined write of a
    ply's four commands (play, two time updates, genmove) and reading four responses."""
    process = await trio.lowlevel.open_process(
        [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    ply = b"1 boardsize 11\n2 atoll-time_left b 1000\n3 atoll-time_left w 1000\n4 name\n"
    start = time.perf_counter()
    for _ in range(count):
        await process.stdin.send_all(ply)
        data = b""
        while data.count(b"\n\n") < 4:
            data += await process.stdout.receive_some(65536)
    elapsed = (time.perf_counter() - start) / count
    await process.stdin.aclose()
    await process.wait()
    return elapsed


def plain_trio_loop(binary: Path, count: int) -> float:
    return trio.run(_plain_trio_loop, binary, count)


def run_match(binary: Path, games: int, concurrency: int, tc: str, records: Path,
              think: int = 0) -> tuple[float, int, dict[str, int]]:  # fmt: skip
    argv = (str(binary),) if not think else (str(binary), str(think))
    other = (*argv[:1], str(think), "7")
    specs = (EngineSpec(argv=argv, name="a"), EngineSpec(argv=other, name="b"))
    config = MatchConfig(
        games=games, tc=(TimeControl.parse(tc), TimeControl.parse(tc)), concurrency=concurrency
    )
    writer = RecordWriter(records)
    match = Match(specs, config, writer=writer)
    start = time.perf_counter()
    result = trio.run(match.run)
    elapsed = time.perf_counter() - start
    writer.close()
    plies = sum(r.plies for r in result.records)
    return elapsed, plies, dict(result.terminations())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--round-trips", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=3,
                        help="interleaved repetitions; medians are reported")
    parser.add_argument("--forfeit-games", type=int, default=0,
                        help="also play this many games at 1+0.01 with a thinking engine")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = build_engine(work)
        rts, plains, plies_c1, c1, c2 = [], [], [], [], []
        terms1: dict[str, int] = {}
        terms2: dict[str, int] = {}
        for rep in range(args.reps):  # interleaved: a noisy moment hits every measure
            rts.append(raw_round_trip(binary, args.round_trips))
            plains.append(plain_trio_loop(binary, args.round_trips))
            t1, plies1, terms1 = run_match(binary, args.games, 1, "60+1", work / f"c1-{rep}.jsonl")
            c1.append(t1)
            plies_c1.append(t1 / plies1)
            t2, _, terms2 = run_match(binary, args.games, 2, "60+1", work / f"c2-{rep}.jsonl")
            c2.append(t2)
        rt, plain = statistics.median(rts), statistics.median(plains)
        per_ply = statistics.median(plies_c1)
        t1, t2 = statistics.median(c1), statistics.median(c2)
        print(f"raw pipe round trip (Python loop):  {rt * 1e6:8.1f} us")
        print(f"plain pipelined trio loop per ply:  {plain * 1e6:8.1f} us"
              f"   ratio {plain / rt:.2f}x")  # fmt: skip
        print(f"referee per ply, concurrency 1:      {per_ply * 1e6:8.1f} us"
              f"   ratio {per_ply / rt:.2f}x (vs plain trio loop {per_ply / plain:.2f}x)"
              f"   ({args.games} games a run, records+clocks on, engine starts included)")
        print(f"games/s concurrency 1: {args.games / t1:8.1f}   concurrency 2:"
              f" {args.games / t2:8.1f}   speed-up {t1 / t2:.2f}x")  # fmt: skip
        ratios = ", ".join(f"{p / r:.2f}" for p, r in zip(plies_c1, rts, strict=True))
        print(f"medians of {args.reps} interleaved repetitions; per-ply ratio in each: {ratios}")
        print(f"terminations: c1 {terms1}  c2 {terms2}")
        if args.forfeit_games:
            t3, _, terms3 = run_match(
                binary, args.forfeit_games, 2, "1+0.01", work / "c3.jsonl", think=80
            )
            print(f"{args.forfeit_games} games at 1+0.01, concurrency 2, engine thinking"
                  f" time_left/80 per move: {terms3} in {t3:.0f} s")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
