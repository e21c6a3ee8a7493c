"""Schedules: which games a match or a tournament plays, as a lazy sequence (pure).

Every game comes in a seat-swapped pair: the same two engines and the same opening, each
engine in seat 1 once. A game's id depends only on what the schedule says about it (the
tournament's name, the round and the two engines in their seats), never on the store, the
folder or the executor, so a resumed or extended tournament recognises the games it has
already played, and a distributed run can use the id as its task key.

Openings are assigned per pair so that both games of a pair start from the same position:
with an openings list, each pairing walks through the list in order, one opening per round,
cycling, from a starting line derived from the two engines' names (so pairings start at
staggered points, whatever the order of the engines in the file); with
`random_openings = N`, each pair gets its own N random legal plies from the seed. Both
choices depend only on the round and the pairing, so adding, removing or reordering
engines, or adding rounds, never changes the opening of a game already scheduled.

Under the pie rule the second move is the swap decision, and it belongs to the engine on
move: a random opening then ends after its first stone (whatever N), and a line of an
openings file may go past move 1 only if its second move is the decision itself (`swap`).

A run reads its games through a `Schedule`: a round-robin, a gauntlet or a match is a
fixed sequence (`Fixed`); a Swiss round or an adaptive batch depends on the results of
the ones before (`arbiter.runs.swiss`, `arbiter.runs.adaptive`), so such a schedule may
answer "nothing until the games in flight settle" and is told each rated result.
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from arbiter.errors import ArbiterError
from arbiter.results.records import GameRecord
from arbiter.rules import SWAP, Game, IllegalMove, Variant


class Format(StrEnum):
    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"
    SWISS = "swiss"
    ADAPTIVE = "adaptive"
    SPSA = "spsa"


@dataclass(frozen=True)
class ScheduledGame:
    """One game of a schedule; `engines` are engine keys (identities), seat 1 first."""

    number: int  # 1-based position in the schedule, for progress lines
    game_id: str
    engines: tuple[str, str]
    round: int
    pair_key: str  # the same for both games of a seat-swapped pair
    opening: tuple[str, ...] = ()
    seed: int | None = None
    # Seat 1's and seat 2's parameter values (a tuned engine's), `()` for none.
    params: tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]] = ((), ())


class Wait(enum.Enum):
    """What a schedule answers when its next game depends on games still in flight."""

    WAIT = "wait"


WAIT = Wait.WAIT


class Unschedulable(ArbiterError):
    """A schedule cannot go on (a Swiss round that cannot be paired without two engines
    meeting again): the run stops with this message, keeping every result stored."""


@runtime_checkable
class Schedule(Protocol):
    """The games of a run, as the driver reads them: one at a time, told the results.

    `next()` is the next game to play; `WAIT` when none can be given until a game in
    flight settles (the next Swiss round is paired from the results of this one); None
    when the schedule is over (it is not asked again). A game is handed out once: the
    driver replays a void game itself, and gives it up after repeated voids, so a
    schedule never hears of void attempts. `settled(game, record)` tells it each rated
    result, after the result is stored. `next()` may raise `Unschedulable` to stop the
    run. When the driver is answered `WAIT` with no game in flight (a game it gave up,
    an engine left out), the run ends there and a later run goes on from the store.

    A schedule is pure and deterministic: built from the results already stored, it
    hands out exactly the games an uninterrupted run would still have played.
    """

    def next(self) -> ScheduledGame | Wait | None: ...

    def settled(self, game: ScheduledGame, record: GameRecord) -> None: ...


class Fixed:
    """A schedule fixed in advance (round-robin, gauntlet, a match): results change
    nothing, and the games are read lazily from an iterable."""

    def __init__(self, games: Iterable[ScheduledGame]) -> None:
        self._games = iter(games)

    def next(self) -> ScheduledGame | None:
        return next(self._games, None)

    def settled(self, game: ScheduledGame, record: GameRecord) -> None:
        pass


def as_schedule(games: Schedule | Iterable[ScheduledGame]) -> Schedule:
    """A schedule as it is, a plain sequence of games as a `Fixed` schedule."""
    return games if isinstance(games, Schedule) else Fixed(games)


def winner_seat(record: GameRecord) -> int:
    """The seat (1 or 2) that won a rated game."""
    return 1 if record.winner == record.seat1 else 2


# Every front (a match, a tournament file, an arena file) opens each seat-swapped pair
# with one random stone unless told otherwise: deterministic engines started from the
# empty board would replay one game. Under the pie rule the engine on move then decides
# the swap.
DEFAULT_RANDOM_OPENINGS = 1


@dataclass(frozen=True)
class Openings:
    """How pairs get their opening: a fixed list, N random plies, or none."""

    lines: tuple[tuple[str, ...], ...] = ()
    random_plies: int = 0
    seed: int = 0

    def for_pair(self, variant: Variant, offset: int, round_: int, key: str) -> tuple[str, ...]:
        if self.lines:
            return self.lines[(offset + round_ - 1) % len(self.lines)]
        plies = self.random_stones(variant)
        if plies:
            return random_opening(variant, plies, derive(self.seed, key))
        return ()

    def conditions(self, variant: Variant) -> dict[str, Any]:
        """The openings as conditions of play: a started store refuses a change."""
        digest = None
        if self.lines:
            text = "\n".join(" ".join(line) for line in self.lines)
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return {
            "openings": digest,
            "random_openings": self.random_plies,
            # Under the pie rule the engine on move decides the swap: an opening stops
            # before move 2 (stores started before said nothing, and their random
            # openings of 2 or more plies decided it at random).
            "swap_decision": "engine" if variant.pie else None,
        }

    def random_stones(self, variant: Variant) -> int:
        """The random plies a pair's opening places: under the pie rule never the second,
        which is the swap decision of the engine on move, not the opening's."""
        return min(self.random_plies, 1) if variant.pie else self.random_plies


def derive(seed: int, key: str) -> int:
    """A 64-bit number drawn from a seed and a key: the same on every run and machine."""
    digest = hashlib.sha256(f"{seed}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


# A game's recorded seed stays below 2**53, the largest range of integers a JSON reader
# that holds numbers as doubles (JavaScript's, the report's page) reads exactly.
GAME_SEED_BITS = 53


def game_seed(seed: int, game_id: str) -> int:
    """The seed a game's record carries: derived from the run's seed and the game's id, the
    same on every run and machine, and below 2**53 so that every JSON reader reads it as
    written. It is recorded only (openings are drawn from the run's seed), so stores
    whose older games carry wider values resume unchanged."""
    return derive(seed, game_id) >> (64 - GAME_SEED_BITS)


def game_id(tournament: str, round_: int, seat1: str, seat2: str, again: int = 0) -> str:
    """A short stable id for a tournament game (engine names may hold any character);
    `again` counts the pairs the same two engines played before in this round (an
    adaptive batch may pair them more than once)."""
    parts: list[object] = [tournament, round_, seat1, seat2] + ([again] if again else [])
    text = json.dumps(parts, ensure_ascii=False)
    return f"r{round_}-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def pairing_offset(a: str, b: str) -> int:
    """Where a pairing starts in an openings list, from the two names alone."""
    return derive(0, json.dumps(sorted((a, b)), ensure_ascii=False)) % 1_000_003


def pair_games(
    name: str,
    round_: int,
    first: tuple[str, str],
    number: int,
    variant: Variant,
    openings: Openings,
    *,
    seed: int | None,
    skip: Container[str] = (),
    again: int = 0,
) -> list[ScheduledGame]:
    """The seat-swapped pair of a pairing in a round, `first` the seats of its first game
    (numbered `number`, the second `number + 1`); games in `skip` are left out, and the
    opening is not computed when both are. Ids, pair keys and openings are those a
    round-robin gives the same two engines in the same round; `again` > 0 makes the
    pair the two engines' next one in this round, with its own ids, key and opening."""
    a, b = first
    ids = [game_id(name, round_, a, b, again), game_id(name, round_, b, a, again)]
    if ids[0] in skip and ids[1] in skip:
        return []
    key = json.dumps([round_, *sorted((a, b))] + ([again] if again else []), ensure_ascii=False)
    opening = openings.for_pair(variant, pairing_offset(a, b) + again, round_, key)
    return [
        ScheduledGame(
            number=number + k,
            game_id=gid,
            engines=seats,
            round=round_,
            pair_key=key,
            opening=opening,
            seed=None if seed is None else game_seed(seed, gid),
        )
        for k, (gid, seats) in enumerate(zip(ids, ((a, b), (b, a)), strict=True))
        if gid not in skip
    ]


def pairings(
    names: Sequence[str], fmt: Format, challenger: str | None = None
) -> list[tuple[str, str]]:
    """The pairings in a stable order: appending an engine only appends pairings.

    Round-robin pairs each engine with every engine listed before it (column by column),
    so the pairings of the first k engines are always the first k(k-1)/2 pairings.
    """
    if fmt is Format.GAUNTLET:
        hero = challenger if challenger is not None else names[0]
        return [(hero, other) for other in names if other != hero]
    return [(names[i], names[j]) for j in range(len(names)) for i in range(j)]


def tournament_games(
    name: str,
    engines: Sequence[str],
    fmt: Format,
    rounds: int,
    variant: Variant,
    openings: Openings = Openings(),
    *,
    challenger: str | None = None,
    seed: int | None = None,
    skip: Container[str] = (),
) -> Iterator[ScheduledGame]:
    """Round by round, every pairing's seat-swapped pair; generated lazily.

    Games whose id is in `skip` (already played) are passed over before their opening
    is computed, so resuming a long tournament costs nothing per game already stored.
    """
    pairs = pairings(engines, fmt, challenger)
    number = 1
    for round_ in range(1, rounds + 1):
        for pair in pairs:
            yield from pair_games(
                name, round_, pair, number, variant, openings, seed=seed, skip=skip
            )
            number += 2


def tournament_size(engines: int, fmt: Format, rounds: int) -> int:
    """Games in `rounds` rounds (a Swiss round pairs every engine but a bye once)."""
    if fmt is Format.SWISS:
        return 2 * (engines // 2) * rounds
    pairs = engines - 1 if fmt is Format.GAUNTLET else engines * (engines - 1) // 2
    return max(0, pairs) * 2 * rounds


def match_games(
    match_id: str,
    games: int,
    variant: Variant,
    openings: Openings = Openings(),
    *,
    seed: int | None = None,
) -> Iterator[ScheduledGame]:
    """A match: engine keys "0" and "1"; odd games seat engine 0 first, even ones engine 1.

    A pair's opening depends on its number and the openings' seed only, so that a match
    given a seed plays the same openings whatever its id."""
    for number in range(1, games + 1):
        pair = (number + 1) // 2
        order = ("0", "1") if number % 2 == 1 else ("1", "0")
        key = f"{match_id}-pair{pair}"
        yield ScheduledGame(
            number=number,
            game_id=match_game_id(match_id, number),
            engines=order,
            round=pair,
            pair_key=key,
            opening=openings.for_pair(variant, 0, pair, f"pair{pair}"),
            seed=None if seed is None else game_seed(seed, f"game{number}"),
        )


def match_game_id(match_id: str, number: int) -> str:
    """A match's game id: the match's id (kept in its store) and the game's number."""
    return f"{match_id}-{number}"


def match_game_number(match_id: str, game_id: str) -> int | None:
    """The number of a game of this match, from its id; None for any other game."""
    head, _, number = game_id.rpartition("-")
    if head != match_id or not (number.isascii() and number.isdigit()) or number[0] == "0":
        return None
    return int(number)


def random_opening(variant: Variant, plies: int, seed: int) -> tuple[str, ...]:
    """`plies` uniformly random legal placements (never a swap) that leave the game open."""
    rng = random.Random(seed)
    for _ in range(100):
        game = Game(variant)
        moves: list[str] = []
        for _ in range(plies):
            if game.over:
                break
            cell = rng.choice(game.legal_cells())
            game.play(cell)
            moves.append(game.move_name(cell))
        if not game.over and len(moves) == plies:
            return tuple(moves)
    raise ValueError(f"cannot find {plies} random opening plies that leave the game open")


def parse_openings(text: str, variant: Variant) -> list[tuple[str, ...]]:
    """Openings, one a line (cell names and `swap`; `#` starts a comment).

    Raises ValueError naming the 1-based line of the first opening the rules refuse, that
    already ends the game, or (under the pie rule) that places a second stone: move 2 is
    the swap decision, which an opening may take only by saying `swap`.
    """
    result: list[tuple[str, ...]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        game = Game(variant)
        moves: list[str] = []
        for word in words:
            try:
                move = game.parse_move(word.lower())
                game.play(move)
            except (IllegalMove, ValueError) as exc:
                raise ValueError(f"line {number}: {exc}") from exc
            moves.append(SWAP if move == SWAP else game.move_name(move))
        if variant.pie and len(moves) > 1 and moves[1] != SWAP:
            raise ValueError(
                f"line {number}: under the pie rule move 2 is the swap decision of the engine"
                f" on move, but this opening plays {moves[1]} there; end the line after its"
                " first stone, make swap its second move, or play without the pie rule"
            )
        if game.over:
            raise ValueError(f"line {number}: the opening already ends the game")
        result.append(tuple(moves))
    return result
