#!/usr/bin/env python3
"""The Dask executor against the local one, on the same tournament and the same cores.

A `dask scheduler` and K `dask worker --nthreads 1` processes are started on 127.0.0.1;
the same tournament of instant C engines (bench/instant_bot.c, compiled here with cc) is
run through the real CLI locally at concurrency K and on the cluster, at two sizes, the
repetitions interleaved, all ratios taken within this one run. From the two sizes:

* games per second of each executor at the larger size (process start included);
* time per game, (T(2N) - T(N)) / N, which cancels the fixed costs (start-up, the
  preflight, connecting), and the Dask executor's overhead per game over the local one;
* the fixed cost of each run, T(N) - N x time per game.

With instant engines nearly all of a game's time is harness overhead, so this is the
worst case for Dask: the local executor keeps its engines between games, a Dask task
starts both engines, plays in a fresh trio loop and sends its record back.

Run: python bench/dask_bench.py [--quick] [--games N] [--workers K] [--reps R]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

sys.path.insert(0, str(HERE))

from referee_bench import build_engine  # noqa: E402  (one build of the instant engine)
from tournament_bench import timed, tournament_file  # noqa: E402


def dask(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dask", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for(condition: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.05)  # a polling interval


def start_cluster(work: Path, workers: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    from distributed import Client

    file = work / "scheduler.json"
    processes = [
        dask(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(file),
        )
    ]
    wait_for(lambda: file.exists() and file.stat().st_size > 0, "the scheduler")
    address = str(json.loads(file.read_text())["address"])
    for n in range(workers):
        processes.append(
            dask(
                "worker",
                address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                "--name",
                f"w{n}",
            )
        )
    with Client(address, timeout=30, set_as_default=False) as client:
        wait_for(lambda: len(client.nthreads()) == workers, f"{workers} workers")
    return address, processes


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in reversed(processes):  # workers first, then the scheduler
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def compare(work: Path, binary: Path, address: str, games: int, workers: int, reps: int) -> None:
    runs = {
        "local": ["-c", str(workers)],
        "dask": ["--dask", address],
    }
    times: dict[tuple[str, int], list[float]] = {}
    for rep in range(reps):
        for size in (games, 2 * games):
            for kind, extra in runs.items():
                t = tournament_file(work, binary, size, 1, f"{kind}-{size}-{rep}")
                argv = [
                    sys.executable,
                    "-m",
                    "arbiter",
                    "tournament",
                    "run",
                    str(t),
                    "-q",
                    "--every",
                    "0",
                    *extra,
                ]
                times.setdefault((kind, size), []).append(timed(argv))
    per_game = {}
    for kind in runs:
        small = statistics.median(times[kind, games])
        large = statistics.median(times[kind, 2 * games])
        per_game[kind] = max(0.0, (large - small) / games)
        fixed = small - games * per_game[kind]
        print(
            f"{kind:5}: {2 * games / large:7.1f} games/s over {2 * games} games"
            f" ({large:.2f} s), {per_game[kind] * 1000:7.2f} ms per game, fixed cost"
            f" {fixed:.2f} s (medians of {reps}, process start included)"
        )
    ratio = per_game["dask"] / per_game["local"] if per_game["local"] else float("inf")
    print(
        f"dask/local time per game {ratio:.2f}; dask overhead per game"
        f" {(per_game['dask'] - per_game['local']) * 1000:.2f} ms"
        f" ({workers} workers x 1 thread against local concurrency {workers})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.games, args.reps, args.workers = 2, 1, 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = build_engine(work)
        address, processes = start_cluster(work, args.workers)
        try:
            compare(work, binary, address, args.games, args.workers, args.reps)
        finally:
            stop(processes)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
