#!/usr/bin/env python3
"""How early a proven connection would end games of the bundled bots, per proof level.

Games of the bundled `heuristic` (depth 1) and `random` bots are played in process
through their move functions on Atoll 11 and Hex 11. After every ply `find_proof` is
asked for both sides at each level (BRIDGES, ZIGGURAT, HSEARCH) until that level first
finds a proof; the plies after it are the ones adjudication would have saved. Printed
per board and level: the fraction of plies saved, the mean and worst milliseconds per
call, and how often the proof's owner is the side that went on to win (a bot that does
not answer intrusions, such as `random`, can lose a proven win, so below 100% is not a
fault of the proof).

Run: python bench/proof_bench.py [--games N] [--sizes 11]. Numbers go to stdout; compare
runs made on the same machine only.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass, field

from arbiter.bot import Bot
from arbiter.bots.heuristic_bot import HeuristicBot
from arbiter.bots.random_bot import RandomBot
from arbiter.rules import Color, Game, Variant
from arbiter.rules.proof import Level, LinkKind, find_proof


@dataclass
class Tally:
    """What one level would have saved over a set of games."""

    plies: int = 0
    saved: int = 0
    games_ended: int = 0
    agree: int = 0
    calls: int = 0
    seconds: float = 0.0
    worst: float = 0.0
    kinds: dict[LinkKind, int] = field(default_factory=dict)


def bots(name: str, seed: int) -> Bot:
    if name == "random":
        return RandomBot(seed)
    return HeuristicBot(depth=1, width=10, seed=seed)


def play(variant: Variant, black: Bot, white: Bot) -> Game:
    game = Game(variant)
    while not game.over:
        bot = black if game.to_move is Color.BLACK else white
        game.play(bot.choose_move(game, game.to_move))
    return game


def measure(game: Game, tallies: dict[Level, Tally]) -> None:
    """Replay `game` and ask each level, after every ply, until it finds a proof."""
    moves = [m for m in game.moves if m != "swap"]
    total = len(moves)
    replay = Game(Variant(game.variant.islands, game.variant.size, pie=False))
    open_levels = set(Level)
    for ply, cell in enumerate(moves, start=1):
        replay.play(int(cell))
        if replay.over or not open_levels:
            break
        for level in sorted(open_levels):
            tally = tallies[level]
            for color in Color:
                start = time.perf_counter()
                proof = find_proof(replay.geometry, replay.colors, color, level=level)
                spent = time.perf_counter() - start
                tally.calls += 1
                tally.seconds += spent
                tally.worst = max(tally.worst, spent)
                if proof is not None:
                    tally.saved += total - ply
                    tally.games_ended += 1
                    tally.agree += proof.owner is game.winner
                    for link in proof.links:
                        tally.kinds[link.kind] = tally.kinds.get(link.kind, 0) + 1
                    open_levels.discard(level)
                    break
    for level in Level:
        tallies[level].plies += total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=12, help="games per board (default 12)")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[11], help="board sides (default 11)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed for the bots (default 1)")
    args = parser.parse_args()
    pairs = list(itertools.product(("heuristic", "random"), repeat=2))
    for islands, size in itertools.product((8, 4), args.sizes):
        variant = Variant(islands, size, pie=False)
        tallies = {level: Tally() for level in Level}
        start = time.perf_counter()
        for g in range(args.games):
            black, white = pairs[g % len(pairs)]
            seed = args.seed * 1000 + g
            game = play(variant, bots(black, seed), bots(white, seed + 500))
            measure(game, tallies)
        took = time.perf_counter() - start
        print(f"{variant}: {args.games} games ({', '.join('-'.join(p) for p in pairs)}), "
              f"{took:.1f} s")  # fmt: skip
        for level, t in tallies.items():
            share = t.saved / t.plies if t.plies else 0.0
            mean = 1000 * t.seconds / t.calls if t.calls else 0.0
            kinds = ", ".join(f"{k.value} {n}" for k, n in sorted(t.kinds.items(), key=str))
            print(
                f"  {level.name:8} plies saved {share:6.1%} ({t.saved}/{t.plies}), "
                f"games ended early {t.games_ended}/{args.games}, owner won {t.agree}, "
                f"{mean:.2f} ms per call (worst {1000 * t.worst:.1f} ms, {t.calls} calls); "
                f"links: {kinds or 'none'}"
            )


if __name__ == "__main__":
    main()
