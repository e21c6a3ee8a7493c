"""A match's score as it is played: what the run tallies and what the summary shows.

Two engines, counted by identity (engine 1 and engine 2 as given): the run writes every
finished game here, after the store and the records file, and the SPRT stop rule and the
summary read it. A match resumed from its store starts from the games stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.results.elo import Difference
from arbiter.results.pairs import PairTally
from arbiter.results.ratings import DEFAULT_PRIOR, PairStats, estimate_difference
from arbiter.results.records import GameRecord, Termination
from arbiter.results.sprt import Estimate, Sprt, Verdict, judge, paired, stopped_estimate
from arbiter.results.store import Scheduled

# A match's engines by key, as its schedule seats them: engine 1, engine 2.
KEYS = ("0", "1")


@dataclass
class Saving:
    """What adjudication saved: the games a proof ended, the cells they left empty, and
    an estimate of the engine time those cells would have cost.

    The empty cells are an upper bound of the plies saved: the game would have ended on
    a connection, often before the board was full. The engine time is estimated from the
    adjudicated games themselves: each engine's share of their empty cells (the engine on
    move would have played every other one, starting with the next ply) times that
    engine's mean time per move in those games (opening moves, which no engine played,
    left out). So it is an upper bound too, and it assumes an engine spends as long on a
    late move as on its mean one. Only adjudicated games are read for it, so that a
    reader of a large store without adjudication pays nothing."""

    games: int = 0
    cells_left: int = 0
    moves_left: Counter[str] = field(default_factory=Counter)  # per engine, at most
    move_ms: dict[str, float] = field(default_factory=dict)  # per engine: its moves' time
    moves: Counter[str] = field(default_factory=Counter)  # per engine: its timed moves

    def add(self, record: GameRecord) -> None:
        """Take in one finished game: only a rated adjudicated one counts."""
        if record.void or record.termination is not Termination.ADJUDICATED:
            return
        cells = record.rules.geometry.n_cells
        self.take(
            (record.seat1, record.seat2),
            record.moves,
            record.move_ms,
            record.opening,
            left=empty_cells(cells, record.moves),
        )

    def take(
        self,
        seats: tuple[str, str],
        moves: Sequence[str],
        move_ms: Sequence[float],
        opening: int,
        *,
        left: int,
    ) -> None:
        """One rated adjudicated game as its record's fields give them, `left` the cells
        it left empty. The seats alternate ply by ply from seat 1 (a swap changes
        colours, not turns)."""
        end = min(len(moves), len(move_ms))
        for seat, engine in enumerate(seats):
            # Slices, not a loop over plies: the report takes in every adjudicated record.
            times = move_ms[opening + (seat - opening) % 2 : end : 2]
            if times:
                self.move_ms[engine] = self.move_ms.get(engine, 0.0) + float(sum(times))
                self.moves[engine] += len(times)
        self.games += 1
        self.cells_left += left
        plies = len(moves)  # the engine on move would have played the first empty cell
        self.moves_left[seats[plies % 2]] += (left + 1) // 2
        self.moves_left[seats[(plies + 1) % 2]] += left // 2

    def take_stored(
        self, games: Iterable[tuple[str, str, list[str], list[float], int]], cells: int
    ) -> int:
        """The rated adjudicated games of a store of one board of `cells` cells, as
        `Store.adjudicated_games` lists them; how many there were."""
        count = 0
        for seat1, seat2, moves, move_ms, opening in games:
            self.take((seat1, seat2), moves, move_ms, opening, left=empty_cells(cells, moves))
            count += 1
        return count

    def engine_seconds(self) -> dict[str, float]:
        """Per engine with moves left, the engine time saved at most (estimated)."""
        return {
            engine: round(n * self.move_ms[engine] / self.moves[engine] / 1000, 2)
            for engine, n in sorted(self.moves_left.items())
            if n and self.moves[engine]
        }

    def as_json(self) -> dict[str, Any]:
        per_engine = self.engine_seconds()
        return {
            "games": self.games,
            "cells_left": self.cells_left,
            "engine_seconds": round(sum(per_engine.values()), 2),
            "engine_seconds_by_engine": per_engine,
        }

    def line(self) -> str | None:
        """The saving in words, or None when no game was adjudicated."""
        if not self.games:
            return None
        seconds = sum(self.engine_seconds().values())
        return (
            f"Adjudicated: {self.games} games ended by a proven connection, {self.cells_left}"
            f" cells left empty (at most that many plies saved), about {seconds:.1f} s of"
            " engine time saved at most (each engine's share of those cells times its mean"
            " time per move)"
        )


def empty_cells(cells: int, moves: Sequence[str]) -> int:
    """Cells still empty after `moves` (a swap places no stone)."""
    return cells - len(moves) + sum(1 for m in moves[1:2] if m == "swap")


@dataclass
class MatchResult:
    """What a match produced, counted by engine (index 0 or 1, as given).

    Counts only, so a match of any length runs in constant memory; the records
    themselves are kept in `records` and `voids` only when asked for (`keep`).
    """

    names: tuple[str, str]  # display names, fixed from the first answers (or the store)
    given: tuple[str, str] = ("", "")  # the engines as given (engines-file key or command)
    keep: bool = True
    wins: list[int] = field(default_factory=lambda: [0, 0])
    # Rated games by seat, as the Elo estimate needs them: [engine in seat 1][seat 1 won?]
    # (engine 1 in seat 1 lost, won; engine 2 in seat 1 lost, won).
    by_seat: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0]])
    ended: Counter[str] = field(default_factory=Counter)  # terminations of rated games
    void_count: int = 0
    records: list[GameRecord] = field(default_factory=list)  # rated games, in finish order
    voids: list[GameRecord] = field(default_factory=list)
    unplayed: list[int] = field(default_factory=list)  # game numbers given up on
    aborted: str = ""
    config_error: bool = False  # aborted because the engines cannot play this match
    sprt: Verdict | None = None  # the test's state at the end, when one was run
    test: Sprt | None = None  # the SPRT asked for, if any
    # Whole seat-swapped pairs of the engines' keys: the pair test's counts, and the
    # variance the interval of the estimate is taken from.
    tally: PairTally = field(default_factory=PairTally)
    resumed: int = 0  # rated games that were in the store before this run
    notes: list[str] = field(default_factory=list)  # the executor's, for the operator
    saving: Saving = field(default_factory=Saving)  # games ended by adjudication

    def stats(self) -> PairStats:
        return PairStats(self.wins[0], self.wins[1])

    def terminations(self) -> Counter[str]:
        return self.ended

    def estimate(self, prior: float = DEFAULT_PRIOR) -> Difference:
        """Engine 1's Elo difference over engine 2: the fit `arbiter ratings` makes of the
        same games (seat term, prior), its interval widened or narrowed to the variance
        of the seat-swapped pairs where there are enough of them (`sprt.paired`)."""
        (a_lost, a_won), (b_lost, b_won) = self.by_seat
        fitted = estimate_difference((a_won, a_lost), (b_won, b_lost), prior=prior)
        return paired(fitted, self.pairs())

    def pairs(self) -> list[int]:
        """Whole pairs for engine 1: [lost twice, split, won twice]."""
        return self.tally.counts(*KEYS).classes

    def sprt_result(self) -> Verdict:
        assert self.test is not None
        stats = self.stats()
        return judge(self.test, self.pairs(), stats.wins, stats.losses)

    def stopped_estimate(self) -> Estimate | None:
        """After a pair test stopped (or reached its cap), the median-unbiased estimate."""
        if self.test is None or self.test.model != "pairs" or self.sprt is None:
            return None
        return stopped_estimate(self.pairs(), self.test, self.sprt.result)

    def decided(self) -> bool:
        """The SPRT's stop rule: true once it accepts either hypothesis."""
        return self.test is not None and self.sprt_result().result != "inconclusive"

    def seat1_wins(self) -> int:
        return self.by_seat[0][1] + self.by_seat[1][1]

    def add_stored(self, record: GameRecord) -> None:
        """Count a game of this match found in its store, whose seats carry the names
        the store fixed for the engines."""
        engines = (KEYS[self.names.index(record.seat1)], KEYS[self.names.index(record.seat2)])
        self.add(engines, record)
        self.resumed += not record.void

    # A sink of the run (see arbiter.runs.run.Sink): the score is where results go too.

    def begin(self, names: Mapping[str, str]) -> None:
        self.names = (names[KEYS[0]], names[KEYS[1]])

    def write(self, game: Scheduled, record: GameRecord) -> None:
        self.add(game.engines, record)

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        pass  # labels only: the score counts by identity

    def engine_started(self, name: str, seconds: float) -> None:
        pass  # the store counts engine starts; the score counts games

    def add(self, engines: tuple[str, str], record: GameRecord) -> None:
        """Count a finished game; `engines` are its seats' engine keys ("0", "1")."""
        if record.void:
            self.void_count += 1
            if self.keep:
                self.voids.append(record)
            return
        seat = 0 if record.winner == record.seat1 else 1
        self.wins[KEYS.index(engines[seat])] += 1
        self.tally.add(record.pair, engines[seat], engines[1 - seat])
        self.by_seat[KEYS.index(engines[0])][int(seat == 0)] += 1
        self.ended[str(record.termination)] += 1
        self.saving.add(record)
        if self.keep:
            self.records.append(record)
