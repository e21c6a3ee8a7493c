#!/usr/bin/env python3
"""Engine starts: an N-engine pool against a two-engine tournament of as many games.

Real engines are slow to start (tables, network weights); a harness that restarts them
often spends its time starting engines. Each engine here is the instant C engine
(bench/instant_bot.c) behind a shell wrapper that notes every start in a file and then
waits the start delay, so the figures count the starts themselves and what they cost.

For each start delay and concurrency, the same number of games is played through the
real CLI (`arbiter tournament run`) by a round-robin of N engines and by a two-engine
tournament, interleaved over --reps repetitions; the medians are compared, with engine
starts per engine per slot (a slot is one of the games played at once).

With --dask K, the pool is also played on a cluster of K `dask worker --nthreads 1`
processes on this machine (started here, as bench/dask_bench.py does), against the same
pool played locally at concurrency K: engine starts and time.

Run: python bench/pool_bench.py [--engines N] [--rounds R] [--delays 0,0.2]
                                [--concurrency 1,2] [--reps N] [--dask K]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from referee_bench import build_engine  # noqa: E402  (one build of the instant engine)


def wrapper(folder: Path, binary: Path, delay: float, log: Path) -> Path:
    """An engine command that notes its start, waits `delay` seconds, then runs."""
    script = folder / f"slow_start_{delay:g}.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"echo \"$1\" >> '{log}'\n" + (f"sleep {delay:g}\n" if delay else "") + f"exec '{binary}'\n"
    )
    script.chmod(0o755)
    return script


def tournament(
    folder: Path, name: str, engines: list[str], rounds: int, concurrency: int, command: Path
) -> Path:
    lines = [
        "[tournament]",
        f'name = "{name}"',
        'format = "round-robin"',
        f"rounds = {rounds}",
        f"concurrency = {concurrency}",
        'tc = "60+1"',
        f'output = "{name}.sqlite"',
    ]
    for engine in engines:
        lines += ["", "[[engine]]", f'name = "{engine}"', f'command = ["{command}", "{engine}"]']
    path = folder / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(path: Path, log: Path, *extra: str) -> tuple[float, int]:
    """Seconds for the whole run, and engine starts (the preflight's included)."""
    log.write_text("")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "arbiter", "tournament", "run", str(path), "-q", "--fresh", *extra],
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - start
    return elapsed, len(log.read_text().splitlines())


def interleaved(
    runs: dict[str, tuple[Path, tuple[str, ...]]],
    log: Path,
    reps: int,
) -> dict[str, tuple[float, float]]:
    """Each labelled run `reps` times, their order alternating; the median seconds and
    engine starts of each."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    starts: dict[str, list[int]] = {label: [] for label in runs}
    for rep in range(reps):
        for label in list(runs)[:: 1 if rep % 2 == 0 else -1]:
            path, extra = runs[label]
            seconds, count = run(path, log, *extra)
            times[label].append(seconds)
            starts[label].append(count)
    return {k: (statistics.median(times[k]), statistics.median(starts[k])) for k in runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engines", type=int, default=8, help="engines in the pool")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the pool")
    parser.add_argument("--delays", default="0,0.2", help="start delays in seconds")
    parser.add_argument("--concurrency", default="1,2", help="games at once")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--dask",
        type=int,
        default=0,
        metavar="K",
        help="also play the pool on K local Dask workers",
    )
    args = parser.parse_args()
    n = args.engines
    games = n * (n - 1) * args.rounds  # every pairing's seat-swapped pair, each round
    pair_rounds = games // 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        binary = build_engine(folder)
        log = folder / "starts.log"
        print(
            f"{n}-engine round-robin of {games} games against a 2-engine tournament of"
            f" {games} games; medians of {args.reps} interleaved repetitions"
        )
        print(
            f"{'start':>6} {'conc':>4} | {'pool s':>7} {'pair s':>7} {'ratio':>6} |"
            f" {'pool starts':>11} {'per engine/slot':>15} | {'pair starts':>11}"
        )
        for delay in (float(d) for d in args.delays.split(",")):
            command = wrapper(folder, binary, delay, log)
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                names = [f"e{i}" for i in range(n)]
                pool = tournament(folder, f"pool{n}", names, args.rounds, concurrency, command)
                pair = tournament(folder, "pair", names[:2], pair_rounds, concurrency, command)
                medians = interleaved({"pool": (pool, ()), "pair": (pair, ())}, log, args.reps)
                (t_pool, s_pool), (t_pair, s_pair) = medians["pool"], medians["pair"]
                slots = min(concurrency, games)
                print(
                    f"{delay:>5g}s {concurrency:>4} | {t_pool:>7.2f} {t_pair:>7.2f}"
                    f" {t_pool / t_pair:>5.2f}x | {s_pool:>11g} {s_pool / n / slots:>15.2f} |"
                    f" {s_pair:>11g}"
                )
        if args.dask:
            on_dask(folder, binary, log, args)


def on_dask(folder: Path, binary: Path, log: Path, args: argparse.Namespace) -> None:
    """The pool on K local Dask workers against the pool locally at concurrency K."""
    from dask_bench import start_cluster, stop

    n, k = args.engines, args.dask
    names = [f"e{i}" for i in range(n)]
    address, processes = start_cluster(folder, k)
    try:
        print(
            f"\n{n}-engine pool on {k} Dask workers (--nthreads 1) against locally at"
            f" concurrency {k}"
        )
        print(
            f"{'start':>6} | {'dask s':>7} {'local s':>7} {'ratio':>6} |"
            f" {'dask starts':>11} {'local starts':>12}"
        )
        for delay in (float(d) for d in args.delays.split(",")):
            command = wrapper(folder, binary, delay, log)
            pool = tournament(folder, f"pool{n}", names, args.rounds, k, command)
            medians = interleaved(
                {"dask": (pool, ("--dask", address)), "local": (pool, ())}, log, args.reps
            )
            (t_dask, s_dask), (t_local, s_local) = medians["dask"], medians["local"]
            print(
                f"{delay:>5g}s | {t_dask:>7.2f} {t_local:>7.2f} {t_dask / t_local:>5.2f}x |"
                f" {s_dask:>11g} {s_local:>12g}"
            )
    finally:
        stop(processes)


if __name__ == "__main__":
    main()
