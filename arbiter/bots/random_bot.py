#!/usr/bin/env python3
"""Bundled engine: plays a uniformly random legal cell; takes the pie at a coin toss.

It never resigns. The bottom rung of the ladder: every other bot should beat it.
"""

from __future__ import annotations

import argparse
import random

from arbiter.bot import Bot
from arbiter.rules import SWAP, Color, Game


class RandomBot(Bot):
    name = "random"

    def __init__(self, seed: int | None) -> None:
        super().__init__()
        self.rng = random.Random(seed)

    def choose_move(self, game: Game, color: Color) -> str:
        if game.swap_allowed and self.rng.random() < 0.5:
            return SWAP
        return game.move_name(self.rng.choice(game.legal_cells()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seed for the moves (default: a fresh one each run)"
    )
    RandomBot(parser.parse_args().seed).run()


if __name__ == "__main__":
    main()
