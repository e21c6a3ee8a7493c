"""Stand-ins shared by the tests, typed like what they replace.

Scripted bots over in-memory streams play through the real referee and players on
virtual time (`play_virtual`). `FakeExecutor` takes the place of an executor
(arbiter.executors.jobs.Executor): the driver hands it jobs, and it answers each with the
outcome scripted for that game's attempt, as the events a real executor emits. The run's
policy (what a void game becomes, when a run stops, what is stored) is then checked in
this process, in milliseconds, while one real-process test per fault class checks that
real faults become those events.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import trio
import trio.testing

from arbiter.bot import Bot
from arbiter.engines.dialect import Dialect
from arbiter.engines.player import Player
from arbiter.engines.process import EngineInfo, EngineSpec, StderrLog
from arbiter.executors.jobs import (
    Abort,
    Emit,
    EngineSeen,
    ExecutorSettings,
    Finished,
    GameJob,
    Keep,
    Preflight,
    Started,
    Unplayable,
    Withdrawn,
    void_record,
)
from arbiter.games.referee import GameSpec, Referee, RefereeConfig
from arbiter.protocol import parse_command
from arbiter.protocol.session import EngineSession
from arbiter.results.records import Evidence, GameRecord, Stage, Termination
from arbiter.rules import Color, Game, Variant
from arbiter.rules.clock import TimeControl


class ScriptedBot(Bot):
    """A bot that thinks for `delay` seconds of (virtual) time per move."""

    name = "scripted"

    def __init__(self, delay: float, seed: int, hang_after: int | None = None) -> None:
        super().__init__()
        self.delay = delay
        self.rng = random.Random(seed)
        self.hang_after = hang_after
        self.moves = 0
        self.time_lefts: list[int] = []
        self.received: list[str] = []  # every command, as "name arg ..."
        self.hang_on_play = False
        self.raw_genmove: str | None = None  # answer this text to genmove, unchecked
        self.close_before_genmove = False
        self.late_by: float | None = None  # answer the first genmove, then jump the clock

    def choose_move(self, game: Game, color: Color) -> str:
        return game.move_name(self.rng.choice(game.legal_cells()))


class FakeHost:
    """What keeps an engine running, for an engine that is a task of the test: it is
    never really killed, only marked."""

    def __init__(self, name: str, commands: frozenset[str] | None = None) -> None:
        self.stderr = StderrLog()
        self.info = EngineInfo(
            name=name,
            version="1",
            protocol_version="2",
            commands=commands
            or frozenset(
                [
                    "play",
                    "genmove",
                    "boardsize",
                    "clear_board",
                    "atoll-islands",
                    "atoll-pie",
                    "atoll-time_settings",
                    "atoll-time_left",
                ]
            ),
        )
        self.killed = False
        self.returncode: int | None = None

    def kill(self) -> None:
        self.killed = True

    async def wait_exit(self, timeout: float) -> int | None:
        return None

    async def settle_stderr(self, timeout: float) -> None:
        return None

    def exit_words(self, code: int) -> str:
        return f"exit status {code}"

    def breach(self) -> None:
        return None


async def serve(bot: ScriptedBot, stream: trio.StapledStream) -> None:  # type: ignore[type-arg]
    buffer = b""
    while True:
        while b"\n" not in buffer:
            data = await stream.receive_some()
            if not data:
                return
            buffer += data
        line, buffer = buffer.split(b"\n", 1)
        command = parse_command(line.decode())
        if command is None:
            continue
        bot.received.append(" ".join([command.name, *command.args]))
        if command.name == "genmove" and bot.raw_genmove is not None:
            await trio.sleep(bot.delay)
            sign, text = (
                ("?", bot.raw_genmove[1:])
                if bot.raw_genmove.startswith("?")
                else ("=", bot.raw_genmove)
            )
            await stream.send_all(f"{sign}{command.id} {text}\n\n".encode())
            continue
        if command.name == "genmove":
            if bot.hang_after is not None and bot.moves >= bot.hang_after:
                await trio.sleep_forever()
            await trio.sleep(bot.delay)
            bot.moves += 1
        if command.name == "clear_board" and bot.close_before_genmove:
            await stream.send_all(bot.handle(command).encode())
            await stream.aclose()
            return
        if command.name == "play" and bot.hang_on_play:
            await trio.sleep_forever()
        if command.name == "atoll-time_left":
            bot.time_lefts.append(int(command.args[1]))
        await stream.send_all(bot.handle(command).encode())
        if command.name == "genmove" and bot.late_by is not None:
            # The answer is delivered, then time passes before the referee runs again:
            # its deadline expires while its task is ready to run, not while it waits.
            trio.lowlevel.current_clock().jump(bot.late_by)  # type: ignore[attr-defined]
            bot.late_by = None


def scripted_player(
    bot: ScriptedBot,
    name: str,
    nursery: trio.Nursery,
    *,
    commands: frozenset[str] | None = None,
    dialect: Dialect | None = None,
    command_timeout: float = 10.0,
) -> Player:
    """The real player over an in-memory stream to a scripted bot served by a task."""
    referee_end, engine_end = trio.testing.memory_stream_pair()
    nursery.start_soon(serve, bot, engine_end)
    session = EngineSession(referee_end, referee_end, name)
    return Player(session, FakeHost(name, commands), dialect or Dialect(), command_timeout)


async def play_virtual(
    bots: tuple[ScriptedBot, ScriptedBot],
    tc: str,
    config: RefereeConfig | None = None,
    *,
    variant: Variant | None = None,
    opening: tuple[str, ...] = (),
    speak: tuple[tuple[frozenset[str] | None, Dialect | None], ...] = ((None, None),) * 2,
    command_timeout: float = 10.0,
) -> tuple[object, list[FakeHost], float]:
    """A game between scripted bots on the real referee and players; the outcome, the
    fake hosts (to see which engines were killed) and the game's length in trio time."""
    players = []
    async with trio.open_nursery() as nursery:
        for i, bot in enumerate(bots):
            commands, dialect = speak[i]
            players.append(
                scripted_player(
                    bot,
                    f"p{i + 1}",
                    nursery,
                    commands=commands,
                    dialect=dialect,
                    command_timeout=command_timeout,
                )
            )
        spec = GameSpec(
            "g1",
            variant or Variant(),
            (TimeControl.parse(tc), TimeControl.parse(tc)),
            opening=opening,
        )
        start = trio.current_time()
        outcome = await Referee(config).play(spec, players)
        elapsed = trio.current_time() - start
        nursery.cancel_scope.cancel()
    return outcome, [p.host for p in players], elapsed  # type: ignore[misc]


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
        evidence = Evidence(
            engine=at_fault,
            detail=outcome.detail,
            stage=outcome.stage,
            stderr_tail=outcome.stderr_tail,
        )
        reason = f"{at_fault}: {outcome.detail}"
        return void_record(job.spec, (seat1, seat2), outcome.termination, reason, evidence)
    winner = outcome.engine if outcome.engine is not None else (seat1, seat2)[outcome.seat - 1]
    assert winner in (seat1, seat2), f"{winner} does not play {job.spec.game_id}"
    return job.spec.record(seat1, seat2, outcome.termination, winner=winner)


class _AnyEngine(dict[str, EngineSpec]):
    """Engine definitions for whatever keys a fake schedule names: each named as its key."""

    def __missing__(self, key: str) -> EngineSpec:
        return EngineSpec(argv=("fake",), name=key)


@dataclass
class FakeExecutor:
    """An executor that answers each job with its scripted outcome, one job at a time.

    `script` maps a game id to the outcomes of its successive attempts (the last one
    repeats), or is a function of the job and its attempt number (0 for the first);
    games it does not name are won by seat 1. `jobs` lists every job taken, retries
    included, so a test sees what the driver asked for.
    """

    script: Script = field(default_factory=dict)
    settings: ExecutorSettings = field(
        default_factory=lambda: ExecutorSettings(engines=_AnyEngine())
    )
    checked: Preflight = field(default_factory=Preflight)
    notes: list[str] = field(default_factory=list)
    jobs: list[GameJob] = field(default_factory=list)
    closed: bool = False
    _attempts: Counter[str] = field(default_factory=Counter)
    _up: set[str] = field(default_factory=set)

    async def preflight(
        self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
    ) -> Preflight:
        return self.checked

    async def aclose(self) -> None:
        self.closed = True

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.aclose()

    def outcome(self, job: GameJob) -> Outcome:
        attempt = self._attempts[job.spec.game_id]
        self._attempts[job.spec.game_id] += 1
        if callable(self.script):
            return self.script(job, attempt)
        scripted = self.script.get(job.spec.game_id, ())
        if not scripted:
            return Win()
        return scripted[min(attempt, len(scripted) - 1)]

    async def run(
        self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit, keep: Keep | None = None
    ) -> None:
        async with jobs:
            async for job in jobs:
                if keep is not None and not keep(job):
                    emit(Withdrawn(job.number))
                    continue
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
