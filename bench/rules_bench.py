#!/usr/bin/env python3
"""Rules-core throughput: batched random playouts and single placements with win checks.

Run: python bench/rules_bench.py [--playouts N]. Numbers go to stdout; compare runs made
on the same machine in the same session only.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from arbiter.rules import Game, Variant
from arbiter.rules.playout import PlayoutEngine


def bench_playouts(variant: Variant, total: int, batch: int) -> float:
    game = Game(variant)
    engine = PlayoutEngine(game.geometry)
    rng = np.random.default_rng(1)
    engine.black_wins(engine.random_fills(game, 64, rng))  # warm up
    start = time.perf_counter()
    done = 0
    while done < total:
        engine.black_wins(engine.random_fills(game, batch, rng))
        done += batch
    return done / (time.perf_counter() - start)


def bench_placements(variant: Variant, games: int) -> tuple[float, float]:
    """Mean microseconds per placement with the win check, and per game copy."""
    rnd = random.Random(1)
    n = Game(variant).geometry.n_cells
    orders = [rnd.sample(range(n), n) for _ in range(games)]
    placed = 0
    start = time.perf_counter()
    for order in orders:
        g = Game(variant)
        for cell in order:
            placed += 1
            if g.play(cell) is not None:
                break
    per_place = (time.perf_counter() - start) / placed * 1e6
    g = Game(variant)
    for cell in orders[0][:50]:
        g.play(cell)
    start = time.perf_counter()
    for _ in range(20000):
        g.copy()
    per_copy = (time.perf_counter() - start) / 20000 * 1e6
    return per_place, per_copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--playouts", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=4096)
    args = parser.parse_args()
    for variant in (Variant(8, 11), Variant(8, 15), Variant(4, 11)):
        rate = bench_playouts(variant, args.playouts, args.batch)
        place, copy = bench_placements(variant, 300)
        print(
            f"{variant!s:14} playouts/s {rate:10,.0f}   placement+win check {place:5.2f} us"
            f"   game copy {copy:5.2f} us"
        )


if __name__ == "__main__":
    main()
