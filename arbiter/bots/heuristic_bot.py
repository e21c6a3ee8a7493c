#!/usr/bin/env python3
"""Bundled engine: connection distances for both players, searched one or two plies deep.

Each player's distance is the number of empty cells it still needs to join an opposite
island pair (own stones free, the opponent's blocking). Candidate cells are those on
short connections for both players; each is tried, and the move that leaves the widest
gap between the opponent's distance and its own wins, ties broken by how many short
connections run through the cell, then at random. With --depth 2 the best candidates
are checked against the opponent's best replies while the clock allows. It takes an
immediate win, blocks a single immediate threat, swaps a first stone in the central
zone and, with the pie rule on, opens just outside that zone. It never resigns.
"""

from __future__ import annotations

import argparse
import random
import time

from arbiter.bot import Bot, moves_left
from arbiter.bots.connection import INF, Tables, distance, modest_openings, through, wants_swap
from arbiter.rules import SWAP, Color, Game


class HeuristicBot(Bot):
    name = "heuristic"

    def __init__(self, depth: int, width: int, seed: int | None) -> None:
        super().__init__()
        self.depth = depth
        self.width = width
        self.rng = random.Random(seed)
        self._tables: dict[str, Tables] = {}

    def tables(self, game: Game) -> Tables:
        key = game.geometry.key
        if key not in self._tables:
            self._tables[key] = Tables(game.geometry)
        return self._tables[key]

    def choose_move(self, game: Game, color: Color) -> str:
        start = time.perf_counter()
        t = self.tables(game)
        me, opp = int(color), int(color.other)
        empty = game.legal_cells()
        budget = self.think_time(color, moves_left(game, len(empty) / 3, floor=8.0))
        deadline = start + (budget if budget is not None else 5.0)
        if game.swap_allowed:
            return SWAP if wants_swap(t, game) else self._pick(game, empty, t, me, deadline, opp)
        if not game.moves:
            if game.variant.pie:
                return game.move_name(self.rng.choice(modest_openings(t)))
            best = min(t.centrality)
            return game.move_name(self.rng.choice([c for c in empty if t.centrality[c] == best]))
        for cells in (game.winning_cells(color), game.winning_cells(color.other)):
            if cells:
                return game.move_name(self.rng.choice(cells))
        return self._pick(game, empty, t, me, deadline, opp)

    def _pick(
        self,
        game: Game,
        empty: list[int],
        t: Tables,
        me: int,
        deadline: float | None = None,
        opp: int | None = None,
    ) -> str:
        opp = 3 - me if opp is None else opp
        deadline = time.perf_counter() + 5.0 if deadline is None else deadline
        colors = game.colors[:]
        mine, theirs = through(t, colors, me), through(t, colors, opp)
        # Cells on short connections of both players first; random order among equals.
        noise = {c: self.rng.random() for c in empty}
        ranked = sorted(
            empty, key=lambda c: (mine[c] + theirs[c], min(mine[c], theirs[c]), noise[c])
        )
        candidates = ranked[: self.width]
        scored: list[tuple[float, int]] = []
        for c in candidates:
            if scored and time.perf_counter() > deadline:
                break
            colors[c] = me
            gap = distance(t, colors, opp) - distance(t, colors, me)
            colors[c] = 0
            scored.append((gap, c))
        scored.sort(key=lambda s: -s[0])  # stable: the ranking breaks ties
        best = scored[0][1]
        if self.depth >= 2 and len(scored) > 1:
            best = self._second_ply(colors, t, me, opp, scored, ranked, deadline) or best
        return game.move_name(best)

    def _second_ply(
        self,
        colors: list[int],
        t: Tables,
        me: int,
        opp: int,
        scored: list[tuple[float, int]],
        ranked: list[int],
        deadline: float,
    ) -> int | None:
        """The candidate whose worst outcome after the opponent's likely replies is best."""
        best, best_value = None, -float(INF)
        replies = ranked[: self.width]
        for _, c in scored[: self.width]:
            colors[c] = me
            worst = float(INF)
            finished = True
            for r in replies:
                if r == c:
                    continue
                if time.perf_counter() > deadline:
                    finished = False
                    break
                colors[r] = opp
                mine = distance(t, colors, me)
                gap = distance(t, colors, opp) - mine if mine else INF
                colors[r] = 0
                worst = min(worst, gap)
            colors[c] = 0
            if not finished:
                break
            if worst > best_value:
                best, best_value = c, worst
        return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--depth",
        type=int,
        choices=(1, 2),
        default=2,
        help="plies searched (default 2: the best candidates against the opponent's replies)",
    )
    parser.add_argument(
        "--width", type=int, default=10, help="candidate cells tried per ply (default 10)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for breaking ties (default: a fresh one each run)",
    )
    args = parser.parse_args()
    if args.width < 1:
        parser.error("--width must be at least 1")
    HeuristicBot(args.depth, args.width, args.seed).run()


if __name__ == "__main__":
    main()
