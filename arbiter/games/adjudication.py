"""Adjudication: the referee ends a game that one side has provably won.

With `adjudicate = "proven"` (tournament and arena files, `match --adjudicate proven`)
the referee asks the rules' proof search (`arbiter.rules.proof`) after every ply
whether either side holds a proven connection; the first proof found ends the game for
its owner, and the record's evidence holds the proof so anyone can check it. The search
costs the referee's time, never an engine's: it runs between turns, before the clock of
the engine on move starts.

The schedule of searches is chosen by cost (see docs/guide/adjudication.md for the
figures): the bridge and ziggurat levels cost about a millisecond and run for both sides
after every ply; full H-search costs hundreds of milliseconds on an 11 board, so it runs
only once the board is at least `HSEARCH_FROM` full, and then every `HSEARCH_EVERY`
plies (every ply: on games of the bundled bots on Atoll 11 that saved 16.7% of the plies
against 13.9% every fourth ply, for half as much search time again; starting it earlier
with a smaller budget saved less, bench/schedule_bench.py). A proof missed by that
schedule is found later (stones only add connections to their owner's side of the
search), never wrongly.

When neither side has a proof, the side to move is asked for a key move: a cell after
which it holds a proof (`find_winning_move`, a bridges-level search per cell near its
groups, tens of milliseconds on an 11 board, so only once at most `WINNING_MOVE_CELLS`
cells are empty). On 16 games of the bundled bots on Atoll 11, replayed, that raised
the plies saved from 17.3% to 29.5% (bench/schedule_bench.py; bench/adjudication_bench.py
measures it on a tournament).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from arbiter.definitions import Key
from arbiter.rules import Color, Game
from arbiter.rules.proof import DEFAULT_BUDGET, Level, Proof, find_proof, find_winning_move

__all__ = [
    "HSEARCH_EVERY",
    "HSEARCH_FROM",
    "WINNING_MOVE",
    "WINNING_MOVE_CELLS",
    "Adjudication",
    "Adjudicator",
    "adjudicate_key",
    "proof_json",
    "stored_adjudication",
]

HSEARCH_FROM = 0.5  # the fraction of cells filled before H-search is tried
HSEARCH_EVERY = 1  # plies between two H-searches once it is tried
# The level of the search for a key move of the side to move (one search per empty
# cell, so the cheapest level): None, no such search.
WINNING_MOVE: Level | None = Level.BRIDGES
# Empty cells at most for that search to run: it costs a search per cell, so a large
# board is searched only once most of it is filled (Atoll 11 and Hex 11 always; Atoll 23,
# about 1.6 s a ply with 400 cells empty, once 130 are left).
WINNING_MOVE_CELLS = 130


class Adjudication(StrEnum):
    """Whether the referee ends proven games early: a condition of play."""

    OFF = "off"
    PROVEN = "proven"

    def __str__(self) -> str:
        return self.value


def adjudicate_key(guide: str) -> Key:
    """The `adjudicate` key, as tournament and arena files declare it (`guide`: the
    guide's folder, relative to the reference page that lists the key)."""
    return Key(
        "adjudicate",
        str,
        '"proven": a game ends when one side has a proven connection'
        f' ([Adjudication]({guide}/adjudication.md)); "off": every game is played out',
        default=Adjudication.OFF.value,
        choices=tuple(a.value for a in Adjudication),
    )


def stored_adjudication(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """A store's conditions with `adjudicate` as it was played: a store started before
    the condition existed played every game out ("off"), so that turning it on later is
    a change of conditions, refused like any other."""
    return {"adjudicate": Adjudication.OFF.value, **conditions}


class Adjudicator:
    """Asks the proof search after each ply, on the schedule the module describes."""

    def __init__(
        self,
        hsearch_from: float = HSEARCH_FROM,
        hsearch_every: int = HSEARCH_EVERY,
        budget: int = DEFAULT_BUDGET,
        winning_move: Level | None = WINNING_MOVE,
    ) -> None:
        self.hsearch_from = hsearch_from
        self.hsearch_every = hsearch_every
        self.budget = budget
        self.winning_move = winning_move  # the level of the mover's key-move search
        self.last_hsearch: int | None = None  # the ply of the last H-search

    def judge(self, game: Game) -> Proof | None:
        """A proof that one side has won, the side to move asked first; else a key move
        that gives the side to move one (`find_winning_move`); else None."""
        plies = len(game.moves)
        colors = game.colors
        geometry = game.geometry
        filled = sum(1 for c in colors if c) / len(colors)
        level = Level.ZIGGURAT
        if filled >= self.hsearch_from and (
            self.last_hsearch is None or plies - self.last_hsearch >= self.hsearch_every
        ):
            level = Level.HSEARCH
            self.last_hsearch = plies
        first = game.to_move
        for color in (first, first.other):
            proof = find_proof(geometry, colors, color, level=level, budget=self.budget)
            if proof is not None:
                return proof
        if self.winning_move is None or len(colors) - game.n_stones > WINNING_MOVE_CELLS:
            return None
        return find_winning_move(geometry, colors, first, level=self.winning_move)


def proof_json(game: Game, proof: Proof) -> dict[str, Any]:
    """A proof as a record keeps it: its owner, its chain of groups (their stones as
    cell names and their islands by number) and each link's kind and carrier; and its
    key move, the cell the side to move plays first, when it has one."""
    names = game.geometry.names
    key = {} if proof.key is None else {"key": names[proof.key]}
    return {
        **key,
        "owner": "black" if proof.owner is Color.BLACK else "white",
        "chain": [
            {
                "stones": sorted(names[c] for c in group.stones),
                "islands": sorted(group.islands),
            }
            for group in proof.chain
        ],
        "links": [
            {"kind": link.kind.value, "carrier": sorted(names[c] for c in link.carrier)}
            for link in proof.links
        ],
    }
