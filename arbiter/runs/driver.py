"""The one game loop: schedule -> executor -> sinks -> reporter, for matches and tournaments.

The driver hands scheduled games to an executor as slots free up (the schedule is read
lazily, never materialised), applies the void-game policy to what comes back, writes every
result to its sinks before the reporter and the schedule hear of it, and stops early when
asked to (an SPRT that has decided, an engine that cannot start, games that keep voiding).
A schedule whose next games depend on results (`arbiter.runs.schedule.Schedule`) may
answer that nothing can be played until the games in flight settle: the driver then waits
for them, and ends the run when none is in flight.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import trio

from arbiter.executors.jobs import (
    Abort,
    EngineSeen,
    EngineStarted,
    Event,
    Executor,
    Finished,
    GameJob,
    Started,
    Unplayable,
    Withdrawn,
    start_failure,
    void_record,
)
from arbiter.games.referee import GameSpec
from arbiter.results.records import Evidence, GameRecord, Stage, Termination
from arbiter.results.transcripts import TranscriptFolder
from arbiter.runs.schedule import (
    WAIT,
    Schedule,
    ScheduledGame,
    Unschedulable,
    Wait,
    as_schedule,
)

log = logging.getLogger(__name__)


class Sink(Protocol):
    """Where results go (the store, a records file, a match's score): each result is
    written to every sink, the store first, before the reporter hears of it."""

    def begin(self, names: Mapping[str, str]) -> None:
        """The engines' names by key, fixed for the run, before its first game."""
        ...

    def write(self, game: ScheduledGame, record: GameRecord) -> None: ...

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        """What an engine answered to `name` and `version` (labels only)."""
        ...

    def engine_started(self, name: str, seconds: float) -> None:
        """An engine process was started, taking `seconds` to come up: what starting
        engines costs the run."""
        ...


class Reporter(Protocol):
    """What people are told as a run goes (as fastchess's IOutput): the progress printers
    of `arbiter.views.report` implement it, structurally."""

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None: ...

    def game_started(self, game: ScheduledGame, seat1: str, seat2: str) -> None: ...

    def game_finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        """A game's result, already stored; `note` says what becomes of a void game:
        replayed, given up, or the run stops ("" for a rated game)."""
        ...

    def run_finished(self, outcome: RunOutcome) -> None: ...


class Action(enum.Enum):
    RETRY = "retry"
    GIVE_UP = "give up"
    ABORT = "abort"


@dataclass(frozen=True)
class VoidPolicy:
    max_attempts: int = 3  # per game, counting the first
    max_consecutive_voids: int = 6


def void_decision(
    record: GameRecord,
    attempts: int,
    consecutive_voids: int,
    ever_started: bool,
    policy: VoidPolicy,
) -> tuple[Action, str]:
    """What to do after a void game (as gomill's process_game_error): a pure function.

    `attempts` and `consecutive_voids` already count this void game; `ever_started` says
    whether the engine at fault has come up at least once in this run. An engine that
    never came up is broken or misconfigured: retrying it game after game only repeats
    the error (and holds up everyone else's games), so the run stops with its evidence.
    """
    evidence = record.evidence
    if evidence is not None and evidence.stage == Stage.START and not ever_started:
        return Action.ABORT, start_failure(evidence.engine, evidence.detail, evidence.stderr_tail)
    if consecutive_voids >= policy.max_consecutive_voids:
        return Action.ABORT, f"{consecutive_voids} games in a row were void; last: {record.reason}"
    if attempts >= policy.max_attempts:
        return Action.GIVE_UP, f"void {attempts} times; last: {record.reason}"
    return Action.RETRY, ""


@dataclass
class RunOutcome:
    unplayed: list[ScheduledGame] = field(default_factory=list)
    left_out: list[ScheduledGame] = field(default_factory=list)  # engines that did not start
    aborted: str = ""
    config_error: bool = False  # aborted because the engines cannot play these games
    notes: list[str] = field(default_factory=list)  # for the operator (e.g. workers left out)
    # The schedule's next games wait for results this run did not get (games given up,
    # an engine left out): a later run plays those and goes on.
    blocked: bool = False


class Driver:
    """Runs a schedule to its end (or to a stop) on an executor."""

    def __init__(
        self,
        games: Schedule | Iterable[ScheduledGame],
        make_spec: Callable[[ScheduledGame], GameSpec],
        executor: Executor,
        sinks: Sequence[Sink],
        reporter: Reporter,
        *,
        policy: VoidPolicy | None = None,
        stop: Callable[[], bool] | None = None,
        left_out: Mapping[str, str] | None = None,
        keep: Callable[[ScheduledGame], bool] | None = None,
        transcripts: TranscriptFolder | None = None,
    ) -> None:
        self._keep = keep  # asked as a game is about to start: the plan may not want it
        self._schedule = as_schedule(games)
        self._left_out = dict(left_out or {})  # engine key: why it could not start
        self.transcripts = transcripts
        self._make_spec = make_spec
        self.executor = executor
        self.sinks = sinks
        self.reporter = reporter
        self.policy = policy or VoidPolicy()
        self.stop = stop or (lambda: False)
        self.outcome = RunOutcome()
        self._retries: deque[ScheduledGame] = deque()
        self._by_number: dict[int, ScheduledGame] = {}  # games in flight
        self._attempts: Counter[str] = Counter()
        self._consecutive_voids = 0
        self._up: set[str] = set()  # engines that have come up at least once
        self._changed = trio.Event()
        self._exhausted = False

    async def run(self) -> RunOutcome:
        send, receive = trio.open_memory_channel[GameJob](0)
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            nursery.start_soon(self._feed, send)
            await self.executor.run(receive, self._event, self._keep_job)
        return self.outcome

    def _keep_job(self, job: GameJob) -> bool:
        game = self._by_number.get(job.number)
        return self._keep is None or game is None or self._keep(game)

    def _next(self) -> ScheduledGame | Wait | None:
        if self._retries:
            return self._retries.popleft()
        while not self._exhausted:
            game = self._schedule.next()
            if game is None:
                self._exhausted = True
            elif game is WAIT:
                return WAIT
            elif self._left_out.keys() & set(game.engines):
                self._leave_out(game)
            else:
                return game
        return None

    def _leave_out(self, game: ScheduledGame) -> None:
        """A game of an engine that could not start: void with the reason, stored as any
        void game is (a later run plays it, once the engine starts), never sent out."""
        key = next(k for k in game.engines if k in self._left_out)
        seats = self.executor.settings.seat_names(game.engines)
        engine = seats[game.engines.index(key)]
        why = self._left_out[key]
        evidence = Evidence(engine=engine, detail=why, stage=Stage.START)
        record = void_record(
            self._make_spec(game),
            seats,
            Termination.SETUP,
            f"not played: {why}; the engine was left out",
            evidence,
        )
        for sink in self.sinks:
            sink.write(game, record)
        self.outcome.left_out.append(game)
        self.reporter.game_finished(game, record, "left out: the run goes on without it")

    async def _feed(self, send: trio.MemorySendChannel[GameJob]) -> None:
        async with send:
            while True:
                try:
                    game = self._next()
                except Unschedulable as exc:
                    self._halt(str(exc))
                    return
                if game is None or game is WAIT:
                    if not self._by_number:
                        # Waiting with nothing in flight: what the schedule waits for
                        # was given up or left out in this run.
                        self.outcome.blocked = game is WAIT
                        return
                    await self._changed.wait()
                    self._changed = trio.Event()
                    continue
                self._by_number[game.number] = game
                await send.send(GameJob(game.number, self._make_spec(game), game.engines))

    def _halt(self, reason: str = "", *, config_error: bool = False) -> None:
        if reason and not self.outcome.aborted:
            self.outcome.aborted = reason
            self.outcome.config_error = config_error
        self._scope.cancel()

    def _event(self, event: Event) -> None:
        if self._scope.cancel_called:
            return  # the run is over; late events do not count
        # A result for a game that is not in flight (a distributed task reported twice)
        # was settled already: it is neither stored nor counted again.
        if isinstance(event, Started):
            game = self._by_number.get(event.number)
            if game is not None:
                self.reporter.game_started(game, event.seat1, event.seat2)
        elif isinstance(event, Finished):
            game = self._by_number.pop(event.number, None)
            if game is not None:
                self._settle(game, event.record, event.transcript)
        elif isinstance(event, EngineSeen):
            self._up.add(event.key)
            name = self.executor.settings.engines[event.key].name or event.key
            for sink in self.sinks:
                sink.engine_seen(name, event.info.name, event.info.version)
            self.reporter.engine_seen(name, event.info.name, event.info.version)
        elif isinstance(event, EngineStarted):
            name = self.executor.settings.engines[event.key].name or event.key
            for sink in self.sinks:
                sink.engine_started(name, event.seconds)
        elif isinstance(event, Unplayable):
            self._by_number.pop(event.number, None)
            self._halt(event.problem, config_error=True)
        elif isinstance(event, Abort):
            self._halt(event.reason)
        elif isinstance(event, Withdrawn) and event.number in self._by_number:
            del self._by_number[event.number]
            self._changed.set()  # the feed may be waiting for the games in flight

    def _settle(self, game: ScheduledGame, record: GameRecord, transcript: str = "") -> None:
        for sink in self.sinks:
            sink.write(game, record)  # stored before anyone is told
        if transcript and self.transcripts is not None:
            self.transcripts.write(record, transcript)
        if not record.void:
            self._schedule.settled(game, record)
        self._changed.set()
        log.info(
            "game %s: %s, %s",
            record.game_id,
            record.termination,
            "void" if record.void else f"won by {record.winner}",
        )
        if not record.void:
            self.reporter.game_finished(game, record, "")
            self._consecutive_voids = 0
            if self.stop():
                self._halt()
            return
        self._consecutive_voids += 1
        self._attempts[game.game_id] += 1
        attempts = self._attempts[game.game_id]
        evidence = record.evidence
        seat = 1 if evidence is not None and evidence.engine == record.seat2 else 0
        at_fault = game.engines[seat]
        action, why = void_decision(
            record, attempts, self._consecutive_voids, at_fault in self._up, self.policy
        )
        if action is not Action.RETRY:
            log.warning(
                "game %s: %s after a void game: %s",
                record.game_id,
                action.value,
                why or record.reason,
            )
        self.reporter.game_finished(
            game,
            record,
            {
                Action.RETRY: f"it will be replayed (attempt {attempts + 1} of"
                f" {self.policy.max_attempts})",
                Action.GIVE_UP: f"given up after {attempts} attempts",
                Action.ABORT: "the run stops",
            }[action],
        )
        if action is Action.RETRY:
            self._retries.append(game)
        elif action is Action.GIVE_UP:
            self.outcome.unplayed.append(game)
        else:
            if attempts >= self.policy.max_attempts:
                self.outcome.unplayed.append(game)
            self._halt(why)
