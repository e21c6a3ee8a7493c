#!/usr/bin/env python3
"""A test engine whose strength is a known function of two command-line parameters.

Usage: tunebot.py X Y [--best-x BX] [--best-y BY]

It plays random legal moves, but at each of its moves it resigns with probability
min(0.95, d / 2), where d is the distance of (X, Y) from (BX, BY) (default 70, 30) in
units of the ranges 0-100: the nearer its parameters are to the best point, the longer
it lasts, and the more games it wins against the same engine further away. Its choices
are drawn from the position and its parameters, so a game between two given values on
one opening is the same game wherever it is played.
"""

import math
import random
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "arbiter" / "bots"))

import skeleton  # noqa: E402


def main(argv):
    x, y = float(argv[0]), float(argv[1])
    best_x = float(argv[argv.index("--best-x") + 1]) if "--best-x" in argv else 70.0
    best_y = float(argv[argv.index("--best-y") + 1]) if "--best-y" in argv else 30.0
    resign = min(0.95, math.hypot((x - best_x) / 100, (y - best_y) / 100) / 2)

    def choose(game):
        rng = random.Random(repr((x, y, game.history)))
        if rng.random() < resign:
            return "resign"
        if game.swap_allowed() and rng.random() < 0.5:
            return "swap"
        return rng.choice(game.empty_cells())

    return skeleton.Bot(choose).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
