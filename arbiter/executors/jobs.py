"""What passes between a run and its executor: jobs, events, and the executor's face.

The executor never decides what a result means: it reports events and the run applies
the void policy, stores and reports. `Executor` is what a run needs of one.
"""

from __future__ import annotations

import contextlib
import functools
import platform
import socket
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Protocol

import trio

from arbiter import text
from arbiter.engines.calibration import HostSpeed
from arbiter.engines.process import Deadlines, EngineInfo, EngineSpec
from arbiter.games.referee import GameSpec, RefereeConfig
from arbiter.games.solver import SolverSettings
from arbiter.results.records import Evidence, GameRecord, Termination, timestamp
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl


@dataclass(frozen=True)
class GameJob:
    """One game to play: `engines` are keys into the executor's engine table, seat 1 first."""

    number: int
    spec: GameSpec
    engines: tuple[str, str]


@dataclass(frozen=True)
class Started:
    number: int
    seat1: str
    seat2: str


@dataclass(frozen=True)
class Finished:
    number: int
    record: GameRecord
    transcript: str = ""  # the game's full transcript, when the run asks for them


@dataclass(frozen=True)
class EngineSeen:
    """An engine process came up: what it answered to `name` and `version` (labels only)."""

    key: str
    info: EngineInfo


@dataclass(frozen=True)
class EngineStarted:
    """An engine process was started for a game, taking `seconds` from launch to a
    finished handshake: what starting engines costs a run."""

    key: str
    seconds: float


@dataclass(frozen=True)
class Unplayable:
    """The engines of this game cannot play its variant at all: a configuration error."""

    number: int
    problem: str


@dataclass(frozen=True)
class Abort:
    """The executor cannot go on (no worker can start an engine): the run stops."""

    reason: str


@dataclass(frozen=True)
class Withdrawn:
    """A game taken back before it started: the run no longer wants it played (its
    pairing's test has decided). Never stored, never counted."""

    number: int


Event = Started | Finished | EngineSeen | EngineStarted | Unplayable | Abort | Withdrawn
Emit = Callable[[Event], None]
# Asked as a game is about to be given to a slot: False takes it back (`Withdrawn`).
Keep = Callable[[GameJob], bool]


class Executor(Protocol):
    """Where games are played: what the driver and a tournament run need of it."""

    notes: list[str]  # what the operator should know about the run (workers left out)
    # What every game needs besides its job; the run names the engines here after the
    # preflight, before the first game (see `ExecutorSettings.named`).
    settings: ExecutorSettings

    async def preflight(
        self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
    ) -> Preflight:
        """Before any game, where the games will be played: can each engine start and
        play this variant at all?"""
        ...

    async def run(
        self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit, keep: Keep | None = None
    ) -> None:
        """Play jobs until the channel is closed and drained, reporting events to `emit`.

        The executor takes a job only when it has room for it, so the driver's schedule
        is never materialised; cancelling the run abandons the games still in flight.
        A job read ahead is asked `keep` as it is about to start (results may have come
        in since it was read): one not kept is dropped with a `Withdrawn` event.
        """
        ...

    async def aclose(self) -> None:
        """Let go of whatever the executor holds (a cluster connection)."""
        ...

    def session(self) -> AbstractAsyncContextManager[None]:
        """The executor's life around one run, from its preflight to its last game: what
        it starts for the preflight can serve the games; `aclose` on the way out."""
        ...


@functools.cache
def machine() -> tuple[str, str]:
    """This machine's host name and CPU model, as every record it plays names them."""
    cpu = ""
    with (
        contextlib.suppress(OSError),
        open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle,
    ):
        for line in handle:
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Processor", "cpu model"):
                cpu = value.strip()
                break
    return (
        text.name(socket.gethostname(), 100),
        text.name(cpu or platform.processor() or platform.machine(), 100),
    )


WARM_ENGINES = 8  # engines a slot keeps running between games, by default
WARM_MEMORY_MB = 8192  # their declared memory (limits.memory_mb), by default


@dataclass(frozen=True)
class WarmBudget:
    """How many engines one slot keeps running between games, and how much of their
    declared memory (`limits.memory_mb`; engines that declare none count nothing): an
    8-engine pool stays warm on every slot of a developer machine by default."""

    engines: int = WARM_ENGINES
    memory_mb: int = WARM_MEMORY_MB


@dataclass(frozen=True)
class ExecutorSettings:
    """What every slot needs besides the jobs; picklable, sent once to each worker."""

    engines: Mapping[str, EngineSpec]
    referee: RefereeConfig = field(default_factory=RefereeConfig)
    deadlines: Deadlines = field(default_factory=Deadlines)
    warm: WarmBudget = field(default_factory=WarmBudget)
    # A confined engine (sandbox or limits) is a fresh process every game; True keeps
    # it for the games of one pairing in a row, its limits then counting per pairing.
    keep_confined: bool = False
    # A tuned engine's command with its `{NAME}` placeholders, by key: a game that
    # carries values for the seat (`GameSpec.params`) starts it from this, filled in;
    # its entry in `engines` is the command filled with the start values.
    templates: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The speed of the host that plays the games (`arbiter calibrate`), which each record
    # keeps: set by the executor on the host itself (None: not measured).
    speed: HostSpeed | None = None
    # Each host divides every game's time controls by its own speed factor (`scale_tc`
    # on a Dask cluster; a local run has scaled the tournament's before it starts).
    scale_tc: bool = False
    # The outside judge asked who wins (arbiter.games.solver); None: no solver.
    solver: SolverSettings | None = None

    def named(self, names: Mapping[str, str]) -> ExecutorSettings:
        """These settings with each engine's name fixed, so that every slot, worker and
        restart names it the same way, whatever a later start of it answers."""
        engines = {key: replace(spec, name=names[key]) for key, spec in self.engines.items()}
        return replace(self, engines=engines)

    def seat_names(
        self, keys: tuple[str, str], replies: Sequence[str] = ("", "")
    ) -> tuple[str, str]:
        """The names a game's seats go by (seat 1 first), from these settings and the
        engines' `name` answers if known; computed in key order, so that they never depend
        on which engine sits first. Once the run has named the engines (`named`), these
        are the names every record and row uses."""
        ordered = sorted(range(2), key=lambda i: keys[i])
        named = display_names(
            [self.engines[keys[i]] for i in ordered], [replies[i] for i in ordered]
        )
        by_seat = {ordered[k]: named[k] for k in range(2)}
        return by_seat[0], by_seat[1]


def display_names(specs: Sequence[EngineSpec], replies: Sequence[str]) -> list[str]:
    """Names for people: given names win, else the engines' own (escaped and shortened);
    equal names get a suffix after the first (`mc`, `mc#2`)."""
    names = [
        spec.name or text.name(reply) or text.name(spec.label)
        for spec, reply in zip(specs, replies, strict=True)
    ]
    # A name given in an engines file is never taken by an engine that merely answers
    # it: the answered one gets the suffix.
    order = sorted(range(len(names)), key=lambda i: not specs[i].name)
    taken: set[str] = set()
    unique = list(names)
    for i in order:
        suffix = 1
        while unique[i] in taken:
            suffix += 1
            unique[i] = f"{names[i]}#{suffix}"
        taken.add(unique[i])
    return unique


def void_record(
    spec: GameSpec,
    seats: tuple[str, str],
    termination: Termination,
    reason: str,
    evidence: Evidence | None = None,
    *,
    where: tuple[str, str] = ("", ""),
) -> GameRecord:
    """The record of a game that never started (its engines could not be brought up, or
    the worker running it died); `where` is the machine (host, CPU) it failed on."""
    now = timestamp()
    return spec.record(
        *seats,
        termination,
        started=now,
        finished=now,
        void=True,
        reason=reason,
        evidence=evidence,
        host=where[0],
        cpu=where[1],
    )


def start_failure(engine: str, detail: str, stderr_tail: str) -> str:
    """Why a run stops on an engine that cannot start, with its last word on stderr."""
    last = stderr_tail.strip().splitlines()[-1:] or ["(nothing)"]
    return f"{engine} could not be started: {detail}; its last stderr line: {last[0][:200]}"


@dataclass
class Preflight:
    """What the engines said before any game: each one's answers, and the first problem."""

    info: dict[str, EngineInfo] = field(default_factory=dict)
    problem: str = ""
    config_error: bool = False  # the problem is the operator's to fix (exit 2)
    failures: dict[str, str] = field(default_factory=dict)  # engines that could not start
