#!/usr/bin/env python3
"""Agreement: every position a proof would have ended is won by the proof's owner
against each bundled bot, when the owner follows the proof's strategy.

Positions: games of the bundled `random` and `heuristic` bots are played in process
(their move functions, as `proof_bench.py` does) on Atoll 7 and Hex 7 (small boards
keep a thousand games cheap); after every ply the referee's own `Adjudicator`
(the schedule of `adjudicate = "proven"`: bridges and ziggurats every ply, H-search from
half full) is asked, and the first position it proves is the one adjudication would have
ended the game on. That position is collected with its proof; the game is not played on.

Play-outs: from each position, each bundled bot (random, skeleton, heuristic, mc-fast,
mc, mcts) plays the opponent, and the side to move in the position moves first (a proof
holds whoever moves; when it is the owner, it plays a cell outside the carriers). The
owner answers every stone inside a carrier with `Proof.respond` (inside the same
carrier) and otherwise plays some other cell (a random one outside the carriers, or the
first free one when none is left). A play-out is won when the owner's connection is on
the board. Bots that think by the clock (mc, mc-fast, mcts) get a short fixed move time
(`--movetime`), so the bench measures the proof, not the bots' strength; `mcts` plays
with `--no-resign`, so that it plays every position out instead of resigning it.

Printed every `--every` positions (positions are played out as they are found, so a
run stopped early has counted what it printed): the positions per board and per link
kind, and per bot the play-outs won and lost. Any loss is printed with its position and
the bench exits 1.

Run: python bench/agreement_bench.py [--positions 1000] [--movetime 5]. A smoke
variant: --positions 24 --bots random skeleton heuristic.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace

from arbiter.bot import Bot
from arbiter.bots import skeleton
from arbiter.bots.heuristic_bot import HeuristicBot
from arbiter.bots.mc_bot import MonteCarloBot
from arbiter.bots.mcts_bot import MctsBot
from arbiter.bots.random_bot import RandomBot
from arbiter.games.adjudication import Adjudicator
from arbiter.rules import SWAP, Color, Game, Variant
from arbiter.rules.proof import Proof

BOTS = ("random", "skeleton", "heuristic", "mc-fast", "mc", "mcts")
BOARDS = (Variant(8, 7), Variant(4, 7))


@dataclass(frozen=True)
class Position:
    """A position the referee would have adjudicated, with the moves that led to it."""

    variant: Variant
    moves: tuple[str, ...]
    proof: Proof

    def game(self) -> Game:
        game = Game(self.variant)
        for move in self.moves:
            game.play(move)
        return game


class SkeletonMover:
    """The dependency-free skeleton's move function, asked through the fields it reads."""

    def choose_move(self, game: Game, color: Color) -> str:
        view = SimpleNamespace(
            swap_allowed=lambda: game.swap_allowed,
            empty_cells=lambda: [game.move_name(c) for c in game.legal_cells()],
        )
        return str(skeleton.choose_move(view))  # type: ignore[arg-type]


def opponent(name: str, seed: int, movetime_ms: int) -> Bot | SkeletonMover:
    """A bundled bot, in process, as its engines-file entry configures it."""
    bot: Bot
    if name == "skeleton":
        random.seed(seed)  # the skeleton draws from the module's generator
        return SkeletonMover()
    if name == "random":
        bot = RandomBot(seed)
    elif name == "heuristic":
        bot = HeuristicBot(depth=2, width=10, seed=seed)
    elif name in ("mc", "mc-fast"):
        bot = MonteCarloBot(2048 if name == "mc" else 256, seed)
    else:
        args = SimpleNamespace(
            time=None,
            playouts=None,
            seed=seed,
            rave=600.0,
            explore=0.05,
            per_leaf=8,
            reuse=True,
            resign=False,
        )
        bot = MctsBot(args)  # type: ignore[arg-type]
    bot.time_settings = ("movetime", str(movetime_ms))
    return bot


def positions(
    seed: int,
    boards: tuple[Variant, ...] = BOARDS,
    kinds: tuple[str, ...] = ("random", "heuristic"),
) -> Iterator[Position]:
    """Positions from games of `random` and `heuristic` (depth 1), one a game, boards and
    pairings in turn; a game that connected before any proof gives none."""
    g = 0
    while True:
        variant = boards[g % len(boards)]
        k = len(kinds)
        pairing = (kinds[g // len(boards) % k], kinds[g // (k * len(boards)) % k])
        bots = [
            RandomBot(seed + g) if name == "random" else HeuristicBot(1, 10, seed + g)
            for name in pairing
        ]
        g += 1
        game = Game(variant)
        judge = Adjudicator()
        while not game.over:
            bot = bots[len(game.moves) % 2]  # seats alternate; a swap changes colours only
            game.play(game.parse_move(bot.choose_move(game, game.to_move)))
            if game.over:
                break
            proof = judge.judge(game)
            if proof is not None:
                names = tuple(game.move_name(m) for m in game.moves)
                yield Position(variant, names, proof)
                break


def collect(
    count: int,
    seed: int,
    boards: tuple[Variant, ...] = BOARDS,
    kinds: tuple[str, ...] = ("random", "heuristic"),
) -> list[Position]:
    """The first `count` of `positions`."""
    return list(itertools.islice(positions(seed, boards, kinds), count))


def play_out(position: Position, bot: Bot | SkeletonMover, rng: random.Random) -> str:
    """ "won", "resigned" (the opponent gave up) or "lost", the opponent moving first."""
    game = position.game()
    proof = position.proof
    owner = proof.owner
    if isinstance(bot, Bot):
        bot.new_game()
    if proof.key is not None:  # a win for the side to move: it plays its key first
        game.play(proof.key)
        if game.over:
            return "won" if game.winner is owner else "lost"
    elif game.to_move is owner:  # the owner moves first: some cell outside the carriers
        outside = [c for c in game.legal_cells() if c not in proof.carrier]
        game.play(rng.choice(outside) if outside else game.legal_cells()[0])
        if game.over:
            return "won" if game.winner is owner else "lost"
    while True:
        move = bot.choose_move(game, owner.other)
        if move == "resign":
            return "resigned"
        parsed = game.parse_move(move)
        game.play(parsed)
        if game.over:
            return "won" if game.winner is owner else "lost"
        reply: int | None = None
        if parsed != SWAP:
            reply, proof = proof.respond(int(parsed))
        if reply is not None and game.colors[reply] == int(owner):
            reply = None  # the link's key is the owner's stone already: it holds
        if reply is None:
            free = game.legal_cells()
            outside = [c for c in free if c not in proof.carrier]
            reply = rng.choice(outside) if outside else free[0]
        game.play(reply)
        if game.over:
            return "won" if game.winner is owner else "lost"


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def run(
    positions: list[Position],
    names: tuple[str, ...],
    movetime_ms: int,
    seed: int,
    on_loss: Callable[[str, Position], None] = lambda name, p: None,
) -> dict[str, Tally]:
    """Every position played out against every bot in `names`."""
    tallies = {name: Tally() for name in names}
    rng = random.Random(seed)
    for name in names:
        tally = tallies[name]
        start = time.perf_counter()
        for i, position in enumerate(positions):
            outcome = play_out(position, opponent(name, seed + i, movetime_ms), rng)
            tally.outcomes[outcome] += 1
            if outcome == "lost":
                on_loss(name, position)
        tally.seconds = time.perf_counter() - start
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--positions", type=int, default=1000, help="positions (default 1000)")
    parser.add_argument("--bots", nargs="+", choices=BOTS, default=list(BOTS))
    parser.add_argument(
        "--movetime", type=int, default=5, help="ms a move for mc, mc-fast, mcts (default 5)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--every", type=int, default=100, help="print the counts so far every N positions"
    )
    args = parser.parse_args()
    names = tuple(args.bots)
    tallies = {name: Tally() for name in names}
    boards: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    lost = 0
    start = time.perf_counter()

    def said(name: str, position: Position) -> None:
        nonlocal lost
        lost += 1
        print(f"LOST against {name}: {position.variant} {' '.join(position.moves)}", flush=True)

    for done, position in enumerate(positions(args.seed), 1):
        boards[str(position.variant)] += 1
        kinds.update(link.kind.value for link in position.proof.links)
        for name, tally in run([position], names, args.movetime, args.seed + done, said).items():
            tallies[name].outcomes.update(tally.outcomes)
            tallies[name].seconds += tally.seconds
        if done % args.every == 0 or done == args.positions:
            per_board = ", ".join(f"{b} {n}" for b, n in sorted(boards.items()))
            print(f"{done} positions ({per_board}), {time.perf_counter() - start:.0f} s")
            print(
                "  links in their proofs: "
                + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            )
            for name, tally in tallies.items():
                o = tally.outcomes
                print(
                    f"  {name:10} won {o['won']}, lost {o['lost']} of {done} play-outs"
                    f" ({tally.seconds:.1f} s)"
                )
            sys.stdout.flush()
        if done == args.positions:
            break
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
