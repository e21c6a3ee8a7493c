#!/usr/bin/env python3
"""Tournament costs: the store against a plain match, memory over a long run, ratings at scale.

Every ratio is taken within one run (these machines are shared and noisy), with the instant
C engine (bench/instant_bot.c, compiled here with cc):

1. Games per second of `arbiter tournament run` (SQLite store) against `arbiter match`
   (JSON Lines records) on the same two engines, at concurrency 1 and 2, through the real
   CLI, repetitions interleaved; the medians are compared.
2. Peak RSS of the harness process (and of its worker processes) while a long tournament
   of instant engines runs, sampled from /proc.
3. `arbiter ratings` on a large records file: wall time and peak RSS of that process.

Run: python bench/tournament_bench.py [--quick] [--games N] [--long N] [--records N]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

sys.path.insert(0, str(HERE))

from referee_bench import build_engine  # noqa: E402  (one build of the instant engine)


def arbiter(*args: str) -> list[str]:
    return [sys.executable, "-m", "arbiter", *args]


def tournament_file(work: Path, binary: Path, games: int, concurrency: int, name: str) -> Path:
    path = work / f"{name}.toml"
    path.write_text(
        f'[tournament]\nname = "{name}"\nrounds = {max(1, games // 2)}\n'
        f'concurrency = {concurrency}\ntc = "60+1"\n\n'
        f'[[engine]]\nname = "a"\ncommand = ["{binary}"]\n\n'
        f'[[engine]]\nname = "b"\ncommand = ["{binary}", "0", "7"]\n'
    )
    return path


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv,
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def store_overhead(work: Path, binary: Path, games: int, reps: int) -> None:
    for concurrency in (1, 2):
        match_times, tournament_times = [], []
        for rep in range(reps):
            t = tournament_file(work, binary, games, concurrency, f"t{concurrency}-{rep}")
            tournament_times.append(timed(arbiter("tournament", "run", str(t), "-q")))
            match_times.append(
                timed(
                    arbiter(
                        "match",
                        str(binary),
                        f"{binary} 0 7",
                        "--games",
                        str(games),
                        "--tc",
                        "60+1",
                        "-c",
                        str(concurrency),
                        "-q",
                        "--records",
                        str(work / f"m{concurrency}-{rep}.jsonl"),
                    )
                )
            )
        m, t_ = statistics.median(match_times), statistics.median(tournament_times)
        print(
            f"concurrency {concurrency}: match {games / m:7.1f} games/s, tournament"
            f" {games / t_:7.1f} games/s; tournament/match time {t_ / m:.3f}"
            f" (medians of {reps}, process start included)"
        )


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def long_run_memory(work: Path, binary: Path, games: int) -> None:
    t = tournament_file(work, binary, games, 2, "long")
    proc = subprocess.Popen(
        arbiter("tournament", "run", str(t), "-q"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    peak_main = peak_worker = 0
    samples: list[int] = []
    start = time.perf_counter()
    while proc.poll() is None:
        main = rss_kib(proc.pid)
        samples.append(main)
        peak_main = max(peak_main, main)
        for child in children(proc.pid):
            peak_worker = max(peak_worker, rss_kib(child))
        time.sleep(0.2)  # a sampling interval, not synchronisation
    elapsed = time.perf_counter() - start
    early = max(samples[: max(1, len(samples) // 10)] or [0])
    print(
        f"{games}-game tournament at concurrency 2 in {elapsed:.0f} s: peak RSS of the"
        f" harness {peak_main / 1024:.1f} MB (first tenth of the run {early / 1024:.1f} MB),"
        f" of a worker {peak_worker / 1024:.1f} MB"
    )


def records_file(path: Path, n: int) -> None:
    """n legal games (random moves to a connection, as every reader replays them), their
    winners drawn by the engines' strengths."""
    from arbiter.rules import Color, Game, Variant

    rng = random.Random(1)
    names = [f"engine-{i}" for i in range(20)]
    strength = {name: rng.gauss(0, 200) for name in names}
    variant = Variant(8, 11, False)
    cells = list(variant.geometry.names)
    with path.open("w") as handle:
        for i in range(n):
            a, b = rng.sample(names, 2)
            p = 1 / (1 + 10 ** (-(strength[a] - strength[b] + 30) / 400))
            winner, loser = (a, b) if rng.random() < p else (b, a)
            game = Game(variant)
            for cell in rng.sample(cells, len(cells)):
                if game.play(cell) is not None:
                    break
            color = "black" if game.winner is Color.BLACK else "white"
            black, white = (winner, loser) if color == "black" else (loser, winner)
            moves = [game.move_name(m) for m in game.moves]
            record = {
                "schema": 1,
                "game_id": f"bench-{i}",
                "variant": {"size": 11, "islands": 8, "pie": False},
                "seat1": black,
                "seat2": white,
                "swapped": False,
                "black": black,
                "white": white,
                "winner": winner,
                "winner_color": color,
                "termination": "connection",
                "void": False,
                "reason": "",
                "plies": len(moves),
                "moves": moves,
                "move_ms": [1.5] * len(moves),
                "tc": {"seat1": "5+0.05", "seat2": "5+0.05"},
                "started": "2026-11-23T10:00:00Z",
                "finished": "2026-11-23T10:00:01Z",
                "versions": {a: "1", b: "1"},
                "seed": None,
                "pair": f"p{i // 2}",
            }
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")


def ratings_at_scale(work: Path, n: int) -> None:
    path = work / "big.jsonl"
    records_file(path, n)
    size = path.stat().st_size / 2**20
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(arbiter("ratings", str(path)), check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        f"ratings on {n} records ({size:.0f} MB): {elapsed:.1f} s, peak RSS"
        f" {max(peak, before) / 1024:.0f} MB (largest child process so far)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--long", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    if args.quick:
        args.games, args.reps, args.long, args.records = 4, 1, 8, 200
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = build_engine(work)
        store_overhead(work, binary, args.games, args.reps)
        ratings_at_scale(work, args.records)
        long_run_memory(work, binary, args.long)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
