#!/usr/bin/env python3
"""Bundled engine: plays a uniformly random legal move. Never swaps, never resigns."""

from __future__ import annotations

import argparse
import random

from arbiter.bot import Bot
from arbiter.rules import Color, Game


class RandomBot(Bot):
    name = "random"

    def __init__(self, seed: int | None) -> None:
        super().__init__()
        self.rng = random.Random(seed)

    def choose_move(self, game: Game, color: Color) -> str:
        return game.move_name(self.rng.choice(game.legal_cells()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=None)
    RandomBot(parser.parse_args().seed).run()


if __name__ == "__main__":
    main()
