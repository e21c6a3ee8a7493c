#!/usr/bin/env python3
"""MCTS engine throughput: simulations per second (tree descent, batched fill, back-up).

Runs the bundled `arbiter/bots/mcts_bot.py` search in process on a few opening positions of
each board and, in the same run, the rules core's bare batch playouts, so the ratio says
what the tree costs on top of the playouts. Run: python bench/mcts_bench.py [--seconds S].
Compare runs made on the same machine in the same session only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from arbiter.bots.mcts_bot import Search
from arbiter.rules import Game, Variant
from arbiter.rules.playout import PlayoutEngine


def position(variant: Variant, plies: int, rng: np.random.Generator) -> Game:
    game = Game(Variant(variant.islands, variant.size, pie=False))
    for _ in range(plies):
        game.play(int(rng.choice(game.legal_cells())))
    return game


def bench_search(variant: Variant, seconds: float, leaves: int) -> tuple[float, int]:
    """Simulations per second of a fresh search, and the tree's root visits."""
    rng = np.random.default_rng(1)
    game = position(variant, 4, rng)
    search = Search(game, rng, rave=600.0, explore=0.05, per_leaf=8)
    search.leaves = leaves
    search.run_batch(game)  # warm up
    search.simulations = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        search.run_batch(game)
    return search.simulations / (time.perf_counter() - start), int(search.root.total)


def bench_playouts(variant: Variant, seconds: float) -> float:
    rng = np.random.default_rng(1)
    game = position(variant, 4, rng)
    engine = PlayoutEngine(game.geometry)
    engine.black_wins(engine.random_fills(game, 64, rng))
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        engine.black_wins(engine.random_fills(game, 128, rng))
        done += 128
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--leaves", type=int, default=8, help="leaves per batch (8 fills each)")
    args = parser.parse_args()
    for variant in (Variant(8, 11), Variant(8, 15), Variant(4, 11)):
        sims, root = bench_search(variant, args.seconds, args.leaves)
        bare = bench_playouts(variant, args.seconds)
        print(
            f"{variant!s:10} MCTS simulations/s {sims:9,.0f}   bare batch playouts/s"
            f" {bare:9,.0f}   ratio {sims / bare:4.2f}   root visits {root:,}"
        )


if __name__ == "__main__":
    main()
