#!/usr/bin/env python3
"""Bundled engine: Monte Carlo with all-moves-as-first statistics.

It fills the board at random many times from the current position and plays the empty
cell whose ownership correlates best with winning. On move 2 it swaps when the first
stone looks better than even for its owner. Strength grows with --playouts; the time
left reported by the referee caps the work so it never loses on time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from arbiter.bot import Bot
from arbiter.rules import SWAP, Color, Game
from arbiter.rules.playout import PlayoutEngine


class MonteCarloBot(Bot):
    name = "mc"

    def __init__(self, playouts: int, seed: int | None) -> None:
        super().__init__()
        self.playouts = playouts
        self.rng = np.random.default_rng(seed)
        self._engines: dict[str, PlayoutEngine] = {}

    def _engine(self, game: Game) -> PlayoutEngine:
        key = game.geometry.key
        if key not in self._engines:
            self._engines[key] = PlayoutEngine(game.geometry)
        return self._engines[key]

    def _budget(self, color: Color) -> float:
        """Seconds to spend: a small slice of the clock, or a fixed cap without one."""
        left = self.time_left_ms.get(color)
        settings = self.time_settings
        if settings and settings[0] == "movetime" and len(settings) > 1:
            return int(settings[1]) / 1000 * 0.3
        if left is None:
            return 1.0
        empty = max(1, self.game.colors.count(0))
        return max(0.002, left / 1000 / max(10, empty // 2) * 0.5)

    def choose_move(self, game: Game, color: Color) -> str:
        engine = self._engine(game)
        deadline = time.perf_counter() + self._budget(color)
        empty = np.flatnonzero(np.array(game.colors) == 0)
        wins = np.zeros(len(game.colors))
        owned = np.zeros(len(game.colors))
        done = 0
        black_total = 0
        batch = 256
        while done < self.playouts and (done == 0 or time.perf_counter() < deadline):
            boards = engine.random_fills(game, batch, self.rng)
            black_won = engine.black_wins(boards)
            won = black_won if color is Color.BLACK else ~black_won
            mine_cells = boards if color is Color.BLACK else ~boards
            wins += (mine_cells & won[:, None]).sum(axis=0)
            owned += mine_cells.sum(axis=0)
            black_total += int(black_won.sum())
            done += batch
        # Take the first stone over when random play wins with it clearly more often.
        if game.swap_allowed and black_total / done > 0.55:
            return SWAP
        rates = np.where(owned[empty] > 0, wins[empty] / np.maximum(owned[empty], 1), 0.0)
        return game.move_name(int(empty[int(np.argmax(rates))]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--playouts", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    MonteCarloBot(args.playouts, args.seed).run()


if __name__ == "__main__":
    main()
