"""Schedules played on drawn results, with no engine: the Swiss and adaptive tests' loop."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Protocol

from arbiter.results.records import GameRecord, Termination
from arbiter.runs.schedule import WAIT, ScheduledGame


class Schedule(Protocol):
    def next(self) -> ScheduledGame | object | None: ...

    def settled(self, game: ScheduledGame, record: GameRecord) -> None: ...


def record(game: ScheduledGame, seat: int) -> GameRecord:
    """The smallest record of `game` won by `seat` (1 or 2)."""
    return GameRecord(
        game_id=game.game_id,
        variant={},
        seat1=game.engines[0],
        seat2=game.engines[1],
        tc={},
        started="",
        termination=Termination.RESIGN,
        winner=game.engines[seat - 1],
    )


def play(
    schedule: Schedule,
    rng: random.Random,
    elo: Mapping[str, float] | None = None,
    stop_after: int | None = None,
) -> list[tuple[ScheduledGame, int]]:
    """Play the schedule as a run does: every game it hands out is in flight until it
    says WAIT, then the flight settles in a shuffled order. Each game's winner is drawn
    when it is handed out, from `elo` on the logistic scale (a fair coin without it).
    Returns the games handed out, in order, with the seat that won each."""
    out: list[tuple[ScheduledGame, int]] = []
    won: dict[str, int] = {}
    flight: list[ScheduledGame] = []
    while stop_after is None or len(out) < stop_after:
        game = schedule.next()
        if game is None:
            assert not flight
            break
        if game is WAIT:
            assert flight, "waiting with nothing in flight"
            rng.shuffle(flight)
            for done in flight:
                schedule.settled(done, record(done, won[done.game_id]))
            flight = []
            continue
        assert isinstance(game, ScheduledGame)
        a, b = game.engines
        p = 0.5 if elo is None else 1 / (1 + 10 ** ((elo[b] - elo[a]) / 400))
        won[game.game_id] = 1 if rng.random() < p else 2
        out.append((game, won[game.game_id]))
        flight.append(game)
    return out
