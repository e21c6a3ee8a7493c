#!/usr/bin/env python3
"""Deterministic test engine: always plays the first free cell, never swaps.

Two of these replay the same game every time, which a tournament must notice.
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "arbiter" / "bots"))

import skeleton  # noqa: E402


def first_cell(game):
    return sorted(game.empty_cells())[0]


if __name__ == "__main__":
    sys.exit(skeleton.Bot(first_cell).run())
