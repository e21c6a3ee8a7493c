#!/usr/bin/env python3
"""What the sandbox costs: engine start-up, and play per ply, with and without it.

Both sides of each ratio are measured in the same run, interleaved, against the instant C
engine (bench/instant_bot.c), because these machines are shared and absolute times drift.
Per ply is the referee's own measure of each move (command written to answer read, as
recorded in move_ms), so it holds the pipe round trip through the sandbox and nothing of
the per-game engine start; a whole match's games per second is shown too, since a
sandboxed engine is started afresh for every game.

Run: python bench/sandbox_bench.py [--starts N] [--games N] [--reps N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from arbiter.engines import sandbox
from arbiter.engines.process import EngineSpec, open_engine
from arbiter.rules.clock import TimeControl
from arbiter.runs.match import Match, MatchConfig

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from referee_bench import build_engine  # noqa: E402


async def _starts(spec: EngineSpec, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        async with open_engine(spec):
            pass
    return (time.perf_counter() - start) / count


def start_cost(spec: EngineSpec, count: int) -> float:
    """Seconds to start an engine, finish its handshake and shut it down."""
    return trio.run(_starts, spec, count)


def play(specs: tuple[EngineSpec, EngineSpec], games: int) -> tuple[float, float]:
    """(seconds per game, median of the games' mean milliseconds per move)."""
    tc = TimeControl.parse("60+1")
    match = Match(specs, MatchConfig(games=games, tc=(tc, tc), concurrency=1))
    start = time.perf_counter()
    result = trio.run(match.run)
    elapsed = time.perf_counter() - start
    per_move = [statistics.fmean(r.move_ms[1:]) for r in result.records if len(r.move_ms) > 1]
    assert result.records and all(not r.void for r in result.records)
    return elapsed / games, statistics.median(per_move)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    reason = sandbox.unavailable()
    if reason is not None:
        sys.exit(f"sandbox_bench: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        # The engine's folder is what a sandboxed engine reads; as root it reads it as an
        # unprivileged user, so the folder must not be private to root.
        Path(tmp).chmod(0o755)
        binary = str(build_engine(Path(tmp)))
        plain = (
            EngineSpec(argv=(binary,), name="a"),
            EngineSpec(argv=(binary, "0", "7"), name="b"),
        )
        boxed = (
            EngineSpec(argv=(binary,), name="a", sandbox=True),
            EngineSpec(argv=(binary, "0", "7"), name="b", sandbox=True),
        )
        starts: dict[str, list[float]] = {"plain": [], "sandbox": []}
        games: dict[str, list[tuple[float, float]]] = {"plain": [], "sandbox": []}
        for _ in range(args.reps):  # interleaved, so a noisy moment hits both
            starts["plain"].append(start_cost(plain[0], args.starts))
            starts["sandbox"].append(start_cost(boxed[0], args.starts))
            games["plain"].append(play(plain, args.games))
            games["sandbox"].append(play(boxed, args.games))
    s_plain, s_box = (statistics.median(starts[k]) for k in ("plain", "sandbox"))
    m_plain, m_box = (statistics.median(g[1] for g in games[k]) for k in ("plain", "sandbox"))
    g_plain, g_box = (statistics.median(g[0] for g in games[k]) for k in ("plain", "sandbox"))
    print(
        f"engine start + handshake + quit:  plain {s_plain * 1e3:7.2f} ms   sandbox"
        f" {s_box * 1e3:7.2f} ms   extra {(s_box - s_plain) * 1e3:6.2f} ms"
        f"   ratio {s_box / s_plain:.2f}x"
    )
    print(
        f"per move (referee's move_ms):     plain {m_plain * 1e3:7.1f} us   sandbox"
        f" {m_box * 1e3:7.1f} us   ratio {m_box / m_plain:.3f}x"
    )
    print(
        f"per game, engines started afresh: plain {g_plain * 1e3:7.1f} ms   sandbox"
        f" {g_box * 1e3:7.1f} ms   ratio {g_box / g_plain:.2f}x"
    )
    print(
        f"({args.reps} interleaved repetitions, medians; {args.starts} starts and"
        f" {args.games} games each)"
    )


if __name__ == "__main__":
    main()
