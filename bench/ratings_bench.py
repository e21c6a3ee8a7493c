#!/usr/bin/env python3
"""Pool rating fit time: Bradley-Terry with a seat term, from aggregated win/loss counts.

Run: python bench/ratings_bench.py [--quick] [--engines N] [--games G] [--runs R].
Counts are drawn from a known pool (ratings spread with sd 200 Elo, seat advantage 30 Elo,
seat-balanced round robin), so the fit's accuracy is printed next to its time. Numbers go
to stdout; compare runs made on the same machine in the same session only.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import numpy.typing as npt

from arbiter.results.ratings import fit

IntArray = npt.NDArray[np.int64]


def draw_pool(engines: int, games: int, seed: int) -> tuple[np.ndarray, IntArray, IntArray]:
    """True ratings and seat-1 win/loss counts of ``games`` games spread over all pairings."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, 200.0, engines)
    truth -= truth.mean()
    per_seat = max(1, games // (engines * (engines - 1)))
    played = np.full((engines, engines), per_seat)
    np.fill_diagonal(played, 0)
    diff = truth[:, None] - truth[None, :] + 30.0
    wins = rng.binomial(played, 1.0 / (1.0 + 10.0 ** (-diff / 400.0))).astype(np.int64)
    return truth, wins, (played - wins).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engines", type=int, default=50)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="10 engines, 10^4 games, 3 runs")
    args = parser.parse_args()
    if args.quick:
        args.engines, args.games, args.runs = 10, 10_000, 3

    truth, wins, losses = draw_pool(args.engines, args.games, seed=1)
    names = [f"engine{i}" for i in range(args.engines)]
    total = int(wins.sum() + losses.sum())
    fit(names, wins, losses)  # warm up
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        result = fit(names, wins, losses)
        times.append(time.perf_counter() - start)
    worst = float(np.max(np.abs(result.elo - truth) / (result.error / 1.959964)))
    median_ms, min_ms = statistics.median(times) * 1e3, min(times) * 1e3
    print(
        f"fit {args.engines} engines x {total:,} games: median {median_ms:.2f} ms"
        f" over {args.runs} runs (min {min_ms:.2f} ms), {result.iterations} iterations,"
        f" converged={result.converged}"
    )
    seat = f"{result.seat_advantage:+.1f} +- {result.seat_error:.1f}"
    print(
        f"  accuracy: mean error bar +-{float(np.mean(result.error)):.1f} Elo,"
        f" worst |fit - truth| {worst:.2f} sd, seat {seat} (true +30.0)"
    )


if __name__ == "__main__":
    main()
