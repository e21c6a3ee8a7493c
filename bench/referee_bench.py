#!/usr/bin/env python3
"""Referee overhead: cost per ply against the raw pipe round trip, and concurrency scaling.

Both sides of each ratio are measured in the same run, against the same instant C engine
(bench/instant_bot.c, compiled here with cc), because these machines are shared and
absolute times drift. Each repetition measures the raw round trip right before and right
after its match and divides by their mean, so a ratio compares like moments; the figures
printed are medians over the interleaved repetitions (--reps).

--baseline DIR also plays each repetition's matches with the `arbiter` package of another
checkout, interleaved with this one and both in fresh interpreters, for before/after
figures from one run; --sandbox adds a match with both engines under bubblewrap.
Run: python bench/referee_bench.py [--games N] [--reps N] [--baseline DIR] [--sandbox]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from arbiter.engines.process import EngineSpec
from arbiter.results.records import RecordWriter
from arbiter.rules import Color, Game, Variant
from arbiter.rules.clock import GameClock, TimeControl
from arbiter.runs.match import Match, MatchConfig

HERE = Path(__file__).resolve().parent


def build_engine(workdir: Path) -> Path:
    binary = workdir / "instant_bot"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(HERE / "instant_bot.c")], check=True)
    return binary


def raw_round_trip(binary: Path, count: int) -> float:
    """Seconds per command round trip from a plain blocking Python loop: the mean over
    `count` trips, the same statistic as a match's cost per ply."""
    proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    fd_in, fd_out = proc.stdin.fileno(), proc.stdout.fileno()
    start = time.perf_counter()
    for i in range(count):
        os.write(fd_in, b"%d name\n" % i)
        data = b""
        while not data.endswith(b"\n\n"):
            data += os.read(fd_out, 4096)
    elapsed = (time.perf_counter() - start) / count
    proc.stdin.close()
    proc.wait()
    return elapsed


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


async def _bare_referee(binary: Path, games: int) -> float:
    """Seconds per ply for a referee stripped to what any Python referee must do: two
    engines, a real game per pair of `clear_board`s, each ply one write (the last move,
    both clocks, genmove) and its answers read back under a deadline, the move checked
    by the rules core and the clock charged. No sessions, dialects, transcripts, records
    or fault handling: a floor for the real referee, not a replacement for it."""
    procs = [
        await trio.lowlevel.open_process(
            [str(binary), *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for extra in ((), ("0", "7"))
    ]
    fds = []
    for proc in procs:
        assert proc.stdin is not None and proc.stdout is not None
        w, r = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(w, False)
        os.set_blocking(r, False)
        fds.append((w, r))

    async def read_until(fd: int, marker: bytes) -> bytes:
        """Read until the answers so far end with a blank line and include `marker`."""
        data = b""
        while not (data.endswith(b"\n\n") and marker in data):
            try:
                data += os.read(fd, 65536)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
        return data

    plies = 0
    start = time.perf_counter()
    with trio.CancelScope() as scope:
        for _ in range(games):
            for w, r in fds:
                os.write(w, b"1 clear_board\n")
                await read_until(r, b"\n\n")
            game = Game(Variant())
            clocks = [GameClock(TimeControl.parse("60+1")), GameClock(TimeControl.parse("60+1"))]
            last = ""
            cmd_id = 2
            while game.winner is None:
                seat = plies % 2
                w, r = fds[seat]
                me, other = ("b", "w") if game.to_move is Color.BLACK else ("w", "b")
                ms = [c.remaining_ms() for c in clocks]
                batch = (f"{cmd_id} play {other} {last}\n" if last else "") + (
                    f"{cmd_id + 1} atoll-time_left b {ms[0]}\n"
                    f"{cmd_id + 2} atoll-time_left w {ms[1]}\n{cmd_id + 3} genmove {me}\n"
                )
                began = trio.current_time()
                scope.deadline = began + 60
                os.write(w, batch.encode())
                data = await read_until(r, b"=%d " % (cmd_id + 3))
                move = game.parse_move(data.rsplit(b" ", 1)[1].strip().decode())
                game.play(move)
                clocks[seat].stop(trio.current_time() - began)
                last = game.move_name(move)
                cmd_id += 4
                plies += 1
    elapsed = (time.perf_counter() - start) / plies
    for proc in procs:
        assert proc.stdin is not None
        await proc.stdin.aclose()
        await proc.wait()
    return elapsed


def bare_referee(binary: Path, games: int) -> float:
    return trio.run(_bare_referee, binary, games)


def run_match(
    binary: Path,
    games: int,
    concurrency: int,
    tc: str,
    records: Path,
    think: int = 0,
    sandbox: bool = False,
) -> tuple[float, int, dict[str, int]]:
    argv = (str(binary),) if not think else (str(binary), str(think))
    other = (*argv[:1], str(think), "7")
    specs = (
        EngineSpec(argv=argv, name="a", sandbox=sandbox),
        EngineSpec(argv=other, name="b", sandbox=sandbox),
    )
    config = MatchConfig(
        games=games, tc=(TimeControl.parse(tc), TimeControl.parse(tc)), concurrency=concurrency
    )
    writer = RecordWriter(records)
    match = Match(specs, config, records=writer)
    start = time.perf_counter()
    result = trio.run(match.run)
    elapsed = time.perf_counter() - start
    writer.close()
    plies = sum(r.plies for r in result.records)
    return elapsed, plies, dict(result.terminations())


_CHECKOUT_MATCH = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/bench")
import resource
import referee_bench
before = resource.getrusage(resource.RUSAGE_SELF)
elapsed, plies, terms = referee_bench.run_match(
    Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), "60+1", Path(sys.argv[5]))
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print(json.dumps([elapsed, plies, terms, cpu]))
"""


def harness_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def checkout_match(
    checkout: Path,
    binary: Path,
    games: int,
    concurrency: int,
    records: Path,
) -> tuple[float, int, dict[str, int], float]:
    """The match played by the `arbiter` of a checkout in a fresh interpreter (timed
    inside it, so import and start-up are not counted): seconds, plies, terminations
    and the harness's CPU seconds. Both sides of a before/after comparison run this way,
    so neither inherits the other's warm caches or grown heap."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    # Run from the checkout: `python -c` puts the current folder first on the path, so
    # from another checkout's root it would time that one's package instead.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHECKOUT_MATCH,
            str(checkout),
            str(binary),
            str(games),
            str(concurrency),
            str(records),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    elapsed, plies, terms, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return float(elapsed), int(plies), dict(terms), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=60, help="games per match")
    parser.add_argument("--round-trips", type=int, default=3000)
    parser.add_argument(
        "--reps", type=int, default=7, help="interleaved repetitions; medians are reported"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also time the checkout in DIR, interleaved, for before/after",
    )
    parser.add_argument(
        "--sandbox", action="store_true", help="also time a match with both engines sandboxed"
    )
    parser.add_argument(
        "--forfeit-games",
        type=int,
        default=0,
        help="also play this many games at 1+0.01 with a thinking engine",
    )
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "arbiter").is_dir():
        parser.error(f"--baseline {args.baseline}: no arbiter package there")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = build_engine(work)
        series: dict[str, list[float]] = {}

        def add(key: str, value: float) -> None:
            series.setdefault(key, []).append(value)

        terms1: dict[str, int] = {}
        terms2: dict[str, int] = {}
        for rep in range(args.reps):  # interleaved: a noisy moment hits every measure
            before = raw_round_trip(binary, args.round_trips)
            add("plain", plain_trio_loop(binary, args.round_trips))
            add("bare", bare_referee(binary, max(2, args.games // 2)))
            if args.baseline is None:
                cpu = harness_cpu()
                t1, plies1, terms1 = run_match(binary, args.games, 1, "60+1", work / f"c1-{rep}")
                cpu = harness_cpu() - cpu
            else:
                # Both checkouts in fresh interpreters, taking turns at going first.
                order = [HERE.parent, args.baseline][:: 1 if rep % 2 == 0 else -1]
                runs = {
                    d: checkout_match(d, binary, args.games, 1, work / f"c1-{rep}-{i}")
                    for i, d in enumerate(order)
                }
                t1, plies1, terms1, cpu = runs[HERE.parent]
                tb, pliesb, _, cpub = runs[args.baseline]
                add("base ply", tb / pliesb)
                add("base cpu", cpub / pliesb)
            add("cpu", cpu / plies1)
            add("c1", t1)
            add("ply", t1 / plies1)
            if args.sandbox:
                ts, pliess, _ = run_match(
                    binary, args.games, 1, "60+1", work / f"s1-{rep}", sandbox=True
                )
                add("sandbox ply", ts / pliess)
            after = raw_round_trip(binary, args.round_trips)
            rt = (before + after) / 2
            add("rt", rt)
            for key in ("ply", "base ply", "sandbox ply", "plain", "bare"):
                if key in series and len(series[key]) == rep + 1:
                    add(key + " ratio", series[key][-1] / rt)
            if args.baseline is None:
                t2, _, terms2 = run_match(binary, args.games, 2, "60+1", work / f"c2-{rep}")
            else:
                t2, _, terms2, _ = checkout_match(
                    HERE.parent, binary, args.games, 2, work / f"c2-{rep}"
                )
                tb2, _, _, _ = checkout_match(
                    args.baseline, binary, args.games, 2, work / f"b2-{rep}"
                )
                add("base c2", tb2)
                add("base speed-up", tb / tb2)
            add("c2", t2)
            add("speed-up", t1 / t2)
        med = {key: statistics.median(values) for key, values in series.items()}
        us = 1e6
        print(f"raw pipe round trip (Python loop):  {med['rt'] * us:8.1f} us")
        print(
            f"plain pipelined trio loop per ply:  {med['plain'] * us:8.1f} us"
            f"   ratio {med['plain ratio']:.2f}x"
        )
        print(
            f"bare referee loop per ply (floor):  {med['bare'] * us:8.1f} us"
            f"   ratio {med['bare ratio']:.2f}x   (rules and clock, nothing else)"
        )
        print(
            f"referee per ply, concurrency 1:      {med['ply'] * us:8.1f} us"
            f"   ratio {med['ply ratio']:.2f}x"
            f"   ({args.games} games a match, records+clocks on, engine starts included)"
        )
        print(
            f"harness CPU per ply, concurrency 1:  {med['cpu'] * us:8.1f} us"
            "   (user+system, the referee's process)"
        )
        if args.baseline is not None:
            print(
                f"baseline per ply:                    {med['base ply'] * us:8.1f} us"
                f"   ratio {med['base ply ratio']:.2f}x;  CPU per ply"
                f" {med['base cpu'] * us:.1f} us;  speed-up c2/c1 {med['base speed-up']:.2f}x"
                f"  ({args.baseline})"
            )
        if args.sandbox:
            print(
                f"sandboxed per ply, concurrency 1:    {med['sandbox ply'] * us:8.1f} us"
                f"   ratio {med['sandbox ply ratio']:.2f}x"
                "   (a fresh sandbox for every engine every game)"
            )
        print(
            f"games/s concurrency 1: {args.games / med['c1']:8.1f}   concurrency 2:"
            f" {args.games / med['c2']:8.1f}   speed-up {med['speed-up']:.2f}x"
        )
        ratios = ", ".join(f"{r:.2f}" for r in series["ply ratio"])
        print(f"medians of {args.reps} interleaved repetitions; per-ply ratio in each: {ratios}")
        print(f"terminations: c1 {terms1}  c2 {terms2}")
        if args.forfeit_games:
            t3, _, terms3 = run_match(
                binary, args.forfeit_games, 2, "1+0.01", work / "c3.jsonl", think=80
            )
            print(
                f"{args.forfeit_games} games at 1+0.01, concurrency 2, engine thinking"
                f" time_left/80 per move: {terms3} in {t3:.0f} s"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
