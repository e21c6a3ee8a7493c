"""Stand-ins that play no game, typed like what they replace, shared by the tests.

`FakeExecutor` takes the place of an executor (arbiter.executors.jobs.Executor): the
driver hands it jobs, and it answers each with the outcome scripted for that game's
attempt, as the events a real executor emits. The run's policy (what a void game
becomes, when a run stops, what is stored) is then checked in this process, in
milliseconds, while one real-process test per fault class checks that real faults
become those events.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import trio

from arbiter.engines.process import EngineInfo
from arbiter.executors.jobs import (
    Abort,
    Emit,
    EngineSeen,
    Finished,
    GameJob,
    Preflight,
    Started,
    Unplayable,
    void_record,
)
from arbiter.results.records import Evidence, GameRecord, Stage, Termination
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl


@dataclass(frozen=True)
class Win:
    """A rated game: `engine` (a key) wins, or else the engine in `seat`.

    The loser resigns before any move, the one ending a record without moves can honestly
    claim (a connection needs moves that connect, and every reader checks that they do).
    """

    engine: str | None = None
    seat: int = 1  # 1 or 2
    termination: Termination = Termination.RESIGN


@dataclass(frozen=True)
class Void:
    """A void attempt, with evidence against the engine in `seat`.

    `stage=Stage.START` is an engine that could not be started at all: it is not reported
    as having come up (no EngineSeen), as a real executor would not report it.
    """

    termination: Termination = Termination.SETUP
    stage: Stage = Stage.GAME
    seat: int = 1
    detail: str = "refused clear_board"
    stderr_tail: str = ""


@dataclass(frozen=True)
class Twice:
    """The outcome reported twice, as a distributed task that was run again can."""

    outcome: Win | Void


@dataclass(frozen=True)
class Refused:
    """The engines cannot play this game's variant at all (Unplayable: a config error)."""

    problem: str


@dataclass(frozen=True)
class Halt:
    """The executor cannot go on (Abort), e.g. no worker can start an engine."""

    reason: str


Outcome = Win | Void | Twice | Refused | Halt
Script = Mapping[str, Sequence[Outcome]] | Callable[[GameJob, int], Outcome]


def engine_names(job: GameJob) -> tuple[str, str]:
    """The names a fake game's record gives its seats: the engine keys themselves."""
    return job.engines


def played(job: GameJob, outcome: Win | Void) -> GameRecord:
    """The record a real executor would report for this job and outcome."""
    seat1, seat2 = engine_names(job)
    if isinstance(outcome, Void):
        at_fault = (seat1, seat2)[outcome.seat - 1]
        evidence = Evidence(engine=at_fault, detail=outcome.detail, stage=outcome.stage,
                            stderr_tail=outcome.stderr_tail)  # fmt: skip
        reason = f"{at_fault}: {outcome.detail}"
        return void_record(job.spec, (seat1, seat2), outcome.termination, reason, evidence)
    winner = outcome.engine if outcome.engine is not None else (seat1, seat2)[outcome.seat - 1]
    assert winner in (seat1, seat2), f"{winner} does not play {job.spec.game_id}"
    return job.spec.record(seat1, seat2, outcome.termination, winner=winner)


@dataclass
class FakeExecutor:
    """An executor that answers each job with its scripted outcome, one job at a time.

    `script` maps a game id to the outcomes of its successive attempts (the last one
    repeats), or is a function of the job and its attempt number (0 for the first);
    games it does not name are won by seat 1. `jobs` lists every job taken, retries
    included, so a test sees what the driver asked for.
    """

    script: Script = field(default_factory=dict)
    checked: Preflight = field(default_factory=Preflight)
    notes: list[str] = field(default_factory=list)
    jobs: list[GameJob] = field(default_factory=list)
    closed: bool = False
    _attempts: Counter[str] = field(default_factory=Counter)
    _up: set[str] = field(default_factory=set)

    async def preflight(self, keys: Sequence[str], variant: Variant,
                        tcs: Mapping[str, TimeControl]) -> Preflight:  # fmt: skip
        return self.checked

    async def aclose(self) -> None:
        self.closed = True

    def outcome(self, job: GameJob) -> Outcome:
        attempt = self._attempts[job.spec.game_id]
        self._attempts[job.spec.game_id] += 1
        if callable(self.script):
            return self.script(job, attempt)
        scripted = self.script.get(job.spec.game_id, ())
        if not scripted:
            return Win()
        return scripted[min(attempt, len(scripted) - 1)]

    async def run(self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit) -> None:
        async with jobs:
            async for job in jobs:
                self.jobs.append(job)
                outcome = self.outcome(job)
                if isinstance(outcome, Refused):
                    emit(Unplayable(job.number, outcome.problem))
                    continue
                if isinstance(outcome, Halt):
                    emit(Abort(outcome.reason))
                    continue
                times = 2 if isinstance(outcome, Twice) else 1
                result = outcome.outcome if isinstance(outcome, Twice) else outcome
                self._come_up(job, result, emit)
                record = played(job, result)
                for _ in range(times):
                    emit(Started(job.number, *engine_names(job)))
                    emit(Finished(job.number, record))
                await trio.lowlevel.checkpoint()

    def _come_up(self, job: GameJob, outcome: Win | Void, emit: Emit) -> None:
        """Report the engines that started for this game, each the first time only."""
        for seat, key in enumerate(job.engines, start=1):
            never = isinstance(outcome, Void) and outcome.stage is Stage.START
            if never and seat == outcome.seat:
                continue
            if key not in self._up:
                self._up.add(key)
                emit(EngineSeen(key, EngineInfo(name=f"reply-{key}")))
