#!/usr/bin/env python3
"""Which H-search schedule saves the most plies for its cost, on the same games.

Games of the bundled `heuristic` (depth 1) and `random` bots (all four pairings, as
`proof_bench.py` plays them) are played once on Atoll 11 without the pie rule; each is
then replayed under several schedules of the referee's `Adjudicator` (when H-search
starts, how often it runs, its budget) until the first proof. Printed per schedule: the
plies after that proof against all plies played, the games a proof ended, the judge's
seconds in all, and the kinds of link in the proofs.

Run: python bench/schedule_bench.py [--games 12]. Compare runs on the same machine only.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from arbiter.games.adjudication import Adjudicator
from arbiter.rules import Game, Variant
from arbiter.rules.proof import Level

sys.path.insert(0, str(Path(__file__).parent))

from proof_bench import bots, play

# Each schedule's Adjudicator settings; the key-move search of the side to move (the
# referee's `winning_move`) is off unless a schedule names its level.
SCHEDULES: dict[str, dict[str, Any]] = {
    "from 50%, every 4th ply (the earlier schedule)": {"hsearch_every": 4, "winning_move": None},
    "from 20%, every 2nd ply, budget 3000": {
        "hsearch_from": 0.2,
        "hsearch_every": 2,
        "budget": 3000,
        "winning_move": None,
    },
    "from 25%, every 4th ply, budget 5000": {
        "hsearch_from": 0.25,
        "hsearch_every": 4,
        "budget": 5000,
        "winning_move": None,
    },
    "from 50%, every ply": {"winning_move": None},
    "from 50%, every ply, key moves at the bridges level (as shipped)": {
        "winning_move": Level.BRIDGES
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=12, help="games (default 12)")
    parser.add_argument("--size", type=int, default=11, help="Atoll board side (default 11)")
    args = parser.parse_args()
    variant = Variant(8, args.size, pie=False)
    pairs = list(itertools.product(("heuristic", "random"), repeat=2))
    games = []
    for g in range(args.games):
        black, white = pairs[g % len(pairs)]
        games.append(play(variant, bots(black, 100 + g), bots(white, 600 + g)))
    for name, settings in SCHEDULES.items():
        plies = saved = ended = 0
        seconds = 0.0
        kinds: Counter[str] = Counter()
        for game in games:
            replay = Game(variant)
            judge = Adjudicator(**settings)
            plies += len(game.moves)
            for ply, move in enumerate(game.moves, 1):
                replay.play(move)
                if replay.over:
                    break
                start = time.perf_counter()
                proof = judge.judge(replay)
                seconds += time.perf_counter() - start
                if proof is not None:
                    saved += len(game.moves) - ply
                    ended += 1
                    kinds.update({link.kind.value for link in proof.links})
                    kinds.update({"key move"} if proof.key is not None else set())
                    break
        links = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        print(
            f"{name}: plies saved {saved}/{plies} = {saved / plies:.1%}, games ended"
            f" {ended}/{len(games)}, judge {seconds:.1f} s; proofs with: {links or 'none'}",
            flush=True,
        )


if __name__ == "__main__":
    main()
