"""The local executor: plays scheduled games on K slots, in this process or in workers.

A slot owns engine processes and reuses them game after game (`clear_board` between
games): it keeps the engines of its last few pairings and closes the least recently used
ones beyond that. An engine that faulted is closed at once and restarted for its next game.

With worker processes (`python -m arbiter.worker`, one trio loop each), the referee work
itself uses every core. Messages between the driver and a worker are the typed events
below, pickled over the worker's stdin and stdout. A worker that dies takes only its
current game with it: that game is reported as a void harness fault, the worker's engine
groups are killed here, and a new worker takes over.

The executor never decides what a result means: it reports events and the driver
applies the void policy, stores and reports. `Executor` is what the driver needs of one;
the Dask executor (arbiter/dask_executor.py) plays the same `GameWorker` on a cluster.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import pickle
import platform
import signal
import socket
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import trio

from arbiter import dialect, logs, reaper, text
from arbiter.clock import TimeControl
from arbiter.errors import EngineError, EngineFailure
from arbiter.process import Deadlines, Engine, EngineInfo, EngineSpec, open_engine, start_engine
from arbiter.records import Evidence, GameRecord, Stage, Termination, timestamp
from arbiter.referee import GameSpec, Referee, RefereeConfig, unsupported_variant
from arbiter.rules import Variant

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class EngineSeen:
    """An engine process came up: what it answered to `name` and `version` (labels only)."""

    key: str
    info: EngineInfo


@dataclass(frozen=True)
class Unplayable:
    """The engines of this game cannot play its variant at all: a configuration error."""

    number: int
    problem: str


@dataclass(frozen=True)
class Abort:
    """The executor cannot go on (no worker can start an engine): the run stops."""

    reason: str


Event = Started | Finished | EngineSeen | Unplayable | Abort
Emit = Callable[[Event], None]


class Executor(Protocol):
    """Where games are played: what the driver and a tournament run need of it."""

    notes: list[str]  # what the operator should know about the run (workers left out)

    async def preflight(self, keys: Sequence[str], variant: Variant,
                        tcs: Mapping[str, TimeControl]) -> Preflight:  # fmt: skip
        """Before any game, where the games will be played: can each engine start and
        play this variant at all?"""
        ...

    async def run(self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit) -> None:
        """Play jobs until the channel is closed and drained, reporting events to `emit`.

        The executor takes a job only when it has room for it, so the driver's schedule
        is never materialised; cancelling the run abandons the games still in flight.
        """
        ...

    async def aclose(self) -> None:
        """Let go of whatever the executor holds (a cluster connection)."""
        ...


@functools.cache
def machine() -> tuple[str, str]:
    """This machine's host name and CPU model, as every record it plays names them."""
    cpu = ""
    with (contextlib.suppress(OSError),
          open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle):  # fmt: skip
        for line in handle:
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Processor", "cpu model"):
                cpu = value.strip()
                break
    return (text.name(socket.gethostname(), 100),
            text.name(cpu or platform.processor() or platform.machine(), 100))


@dataclass(frozen=True)
class ExecutorSettings:
    """What every slot needs besides the jobs; picklable, sent once to each worker."""

    engines: Mapping[str, EngineSpec]
    referee: RefereeConfig = field(default_factory=RefereeConfig)
    deadlines: Deadlines = field(default_factory=Deadlines)
    engines_per_slot: int = 4


def display_names(specs: Sequence[EngineSpec], replies: Sequence[str]) -> list[str]:
    """Names for people: given names win, else the engines' own (escaped and shortened);
    when both are equal the second gets a suffix (`mc`, `mc#2`)."""
    names = [
        spec.name or text.name(reply) or text.name(spec.label)
        for spec, reply in zip(specs, replies, strict=True)
    ]
    if names[0] == names[1]:
        # A name given in an engines file is never taken by an engine that merely
        # answers it: the answered one gets the suffix.
        second = 0 if specs[1].name and not specs[0].name else 1
        names[second] = f"{names[second]}#2"
    return names


def void_record(spec: GameSpec, seats: tuple[str, str], termination: Termination,
                reason: str, evidence: Evidence | None = None) -> GameRecord:  # fmt: skip
    """The record of a game that never started (its engines could not be brought up, or
    the worker running it died)."""
    now = timestamp()
    return spec.record(*seats, termination, started=now, finished=now, void=True,
                       reason=reason, evidence=evidence)  # fmt: skip


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


async def preflight(settings: ExecutorSettings, keys: Sequence[str], variant: Variant,
                    tcs: Mapping[str, TimeControl], limit: int = 2) -> Preflight:  # fmt: skip
    """Before any game: can each engine start and play this variant at all?

    Each engine is started once (at most `limit` at a time) and given a game's whole
    set-up, its options, board and clock included: a variant it does not list or declare,
    or a `?` to any of it, is a configuration error for the operator, never a string of
    void games; an engine that cannot start stops the run with its evidence. Its answer
    to `name` is kept, so that every worker names it the same way.
    """
    result = Preflight()
    gate = trio.CapacityLimiter(max(1, limit))
    # Short goodbyes: an engine that ignores quit should not hold up the first game.
    deadlines = replace(settings.deadlines, quit=0.3, term=0.5)

    def fail(problem: str, config_error: bool) -> None:
        if not result.problem:
            result.problem, result.config_error = problem, config_error

    async def probe(key: str) -> None:
        spec = settings.engines[key]
        async with gate:
            try:
                async with open_engine(spec, deadlines) as engine:
                    result.info[key] = engine.info
                    problem = unsupported_variant(engine, variant)
                    if problem is not None:
                        fail(problem, True)
                        return
                    commands = dialect.setup_commands(spec.dialect, engine.supports, variant,
                                                      tcs[key])  # fmt: skip
                    try:
                        await engine.session.pipeline(commands, timeout=deadlines.command)
                    except EngineFailure as exc:
                        fail(f"{engine.name} cannot play {variant} at {tcs[key]}: it answered"
                             f" {exc.command!r} with ? {exc.message[:200]}; declare what it"
                             " plays (sizes, islands, time) in its definition, or choose"
                             " another variant", True)  # fmt: skip
            except EngineFailure as exc:  # an option it refused
                fail(f"{spec.label}: {exc.detail}; fix or remove that option", True)
            except EngineError as exc:
                result.failures[key] = start_failure(spec.label, exc.detail, exc.stderr_tail)
                fail(result.failures[key], False)

    async with trio.open_nursery() as nursery:
        for key in dict.fromkeys(keys):
            nursery.start_soon(probe, key)
    return result


class GameWorker:
    """Plays jobs one at a time with engines it starts, keeps and restarts as needed."""

    def __init__(
        self,
        settings: ExecutorSettings,
        nursery: trio.Nursery,
        emit: Emit,
        *,
        on_engine: Callable[[Engine, bool], None] | None = None,
    ) -> None:
        self.settings = settings
        self.nursery = nursery
        self.emit = emit
        self.on_engine = on_engine or (lambda engine, up: None)  # up: started, else closing
        self.referee = Referee(settings.referee)
        self.engines: OrderedDict[str, Engine] = OrderedDict()  # least recently used first
        self._seen: set[str] = set()

    def names(self, keys: tuple[str, str], engines: Sequence[Engine | None] = (None, None)
              ) -> tuple[str, str]:  # fmt: skip
        """Display names of a job's seats, computed in key order so they never depend on
        which engine sits first."""
        ordered = sorted(range(2), key=lambda i: keys[i])
        specs = [self.settings.engines[keys[i]] for i in ordered]
        replies = []
        for i in ordered:
            engine = engines[i]
            replies.append(engine.info.name if engine is not None else "")
        named = display_names(specs, replies)
        by_seat = {ordered[k]: named[k] for k in range(2)}
        return by_seat[0], by_seat[1]

    async def play(self, job: GameJob) -> None:
        engines: list[Engine | None] = [self.engines.get(k) for k in job.engines]
        for seat, key in enumerate(job.engines):
            if engines[seat] is not None:
                self.engines.move_to_end(key)
                continue
            try:
                engine = await self._start(key)
            except EngineError as exc:
                self._finished(job, self._start_failure(job, seat, exc))
                return
            engines[seat] = engine
        a, b = engines
        assert a is not None and b is not None
        names = self.names(job.engines, engines)
        for engine, name in zip((a, b), names, strict=True):
            engine.name = engine.session.name = name
        for engine in (a, b):
            problem = unsupported_variant(engine, job.spec.variant)
            if problem is not None:
                self.emit(Unplayable(job.number, problem))
                return
        self.emit(Started(job.number, names[0], names[1]))
        outcome = await self.referee.play(job.spec, [a, b])
        self._finished(job, outcome.record)  # the record first, then clean up
        reaper.check_watchdog()
        for seat, key in enumerate(job.engines):
            # A sandboxed engine, and all it started, lasts one game: nothing it left
            # running or wrote in its scratch folder reaches the next; an engine with
            # limits too, so that they and the kernel's counters are per game.
            spec = self.settings.engines[key]
            if seat in outcome.faulty or spec.sandbox or spec.limits:
                await self._close(key)
        await self._trim()

    def _finished(self, job: GameJob, record: GameRecord) -> None:
        record.host, record.cpu = machine()
        self.emit(Finished(job.number, record))

    async def _start(self, key: str) -> Engine:
        spec = self.settings.engines[key]
        try:
            engine = await start_engine(spec, self.nursery, self.settings.deadlines)
        except EngineError:
            raise
        except Exception as exc:
            raise EngineError(spec.label, f"{type(exc).__name__}: {exc}") from exc
        self.engines[key] = engine
        log.debug("started engine %s (pid %d)", key, engine.process.pid)
        self.on_engine(engine, True)
        if key not in self._seen:
            self._seen.add(key)
            self.emit(EngineSeen(key, engine.info))
        return engine

    async def _close(self, key: str) -> None:
        engine = self.engines.pop(key, None)
        if engine is not None:
            self.on_engine(engine, False)
            await engine.aclose()

    async def _trim(self) -> None:
        while len(self.engines) > max(2, self.settings.engines_per_slot):
            await self._close(next(iter(self.engines)))

    async def aclose(self) -> None:
        for key in list(self.engines):
            await self._close(key)

    def _start_failure(self, job: GameJob, seat: int, exc: EngineError) -> GameRecord:
        names = self.names(job.engines)
        label = names[seat]
        evidence = Evidence(
            engine=label,
            detail=exc.detail,
            returncode=getattr(exc, "returncode", None),
            stderr_tail=getattr(exc, "stderr_tail", ""),
            stage=Stage.START,
        )
        return void_record(job.spec, names, Termination.SETUP,
                           f"{label} failed to start: {exc.detail}", evidence)  # fmt: skip


class LocalExecutor:
    """K slots on this machine: trio tasks in this process, or one worker process each."""

    def __init__(self, settings: ExecutorSettings, concurrency: int, *, processes: bool = True
                 ) -> None:  # fmt: skip
        self.settings = settings
        self.concurrency = max(1, concurrency)
        self.processes = processes and self.concurrency > 1
        self.notes: list[str] = []

    async def preflight(self, keys: Sequence[str], variant: Variant,
                        tcs: Mapping[str, TimeControl]) -> Preflight:  # fmt: skip
        return await preflight(self.settings, keys, variant, tcs, self.concurrency)

    async def aclose(self) -> None:
        pass

    async def run(self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit) -> None:
        """Play jobs until the channel is closed and drained."""
        slot = self._process_slot if self.processes else self._local_slot
        async with jobs, trio.open_nursery() as nursery:
            for _ in range(self.concurrency):
                nursery.start_soon(slot, jobs.clone(), emit)

    async def _local_slot(self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit) -> None:
        async with jobs, trio.open_nursery() as nursery:
            worker = GameWorker(self.settings, nursery, emit)
            try:
                async for job in jobs:
                    await worker.play(job)
            finally:
                await worker.aclose()

    async def _process_slot(self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit) -> None:
        names: dict[str, str] = {}  # display names by engine key, as last reported
        async with jobs:
            while True:
                process = await _WorkerProcess.start(self.settings)
                groups: set[int] = set()  # the worker's engines, killed here if it dies
                try:
                    async for job in jobs:
                        try:
                            await self._remote_game(process, job, emit, groups, names)
                        except (EOFError, trio.BrokenResourceError) as exc:
                            log.error("the worker process (pid %d) running game %s died: %r",
                                      process.process.pid, job.spec.game_id, exc)
                            seats = (names.get(job.engines[0], job.engines[0]),
                                     names.get(job.engines[1], job.engines[1]))  # fmt: skip
                            emit(Finished(job.number, void_record(
                                job.spec, seats, Termination.HARNESS,
                                f"the worker process running this game died ({type(exc).__name__})",
                            )))  # fmt: skip
                            break
                    else:
                        return
                finally:
                    await process.aclose()
                    # A worker that exited cleanly shut its own engines down (their groups
                    # may be reused by now); one that died left them to us.
                    if process.process.returncode != 0:
                        for pgid in groups:
                            with contextlib.suppress(ProcessLookupError, PermissionError):
                                os.killpg(pgid, signal.SIGKILL)
                        reaper.reap_orphans()  # what its engines left behind came to us

    @staticmethod
    async def _remote_game(process: _WorkerProcess, job: GameJob, emit: Emit, groups: set[int],
                           names: dict[str, str]) -> None:  # fmt: skip
        await process.channel.send(job)
        while True:
            message = await process.channel.receive()
            if isinstance(message, _EngineGroup):
                (groups.add if message.up else groups.discard)(message.pgid)
                continue
            if isinstance(message, Started):
                names[job.engines[0]], names[job.engines[1]] = message.seat1, message.seat2
            emit(message)
            if isinstance(message, Finished | Unplayable):
                return


@dataclass(frozen=True)
class _EngineGroup:
    """Worker to driver: an engine's process group came up or is going away."""

    pgid: int
    up: bool


async def worker_main() -> None:
    """Entry point of a worker process (`python -m arbiter.worker`): stdin/stdout carry frames."""
    logs.configure_from_environment()
    channel = FrameChannel(trio.lowlevel.FdStream(os.dup(1)), trio.lowlevel.FdStream(os.dup(0)))
    # Nothing else may write to the frame pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    reaper.guard()
    settings: ExecutorSettings = await channel.receive()
    send, receive = trio.open_memory_channel[GameJob](math.inf)

    def on_engine(engine: Engine, up: bool) -> None:
        channel.send_nowait(_EngineGroup(engine.process.pid, up))

    async def play_all(nursery: trio.Nursery) -> None:
        worker = GameWorker(settings, nursery, channel.send_nowait, on_engine=on_engine)
        try:
            async for job in receive:
                await worker.play(job)
        finally:
            await worker.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.flush_forever)
        nursery.start_soon(play_all, nursery)
        while True:
            try:
                job = await channel.receive()
            except EOFError:
                job = None
            if job is None:
                break
            send.send_nowait(job)
        nursery.cancel_scope.cancel()


class FrameChannel:
    """Pickled messages over a pair of byte streams, each frame prefixed by its length.

    Only the harness's own processes are at either end, so pickle is safe here.
    """

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> None:
        self._send = send
        self._receive = receive
        self._buffer = bytearray()
        self._outbox: list[bytes] = []
        self._wakeup = trio.Event()

    @staticmethod
    def _frame(message: Any) -> bytes:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        return len(data).to_bytes(4, "big") + data

    async def send(self, message: Any) -> None:
        await self._send.send_all(self._frame(message))

    def send_nowait(self, message: Any) -> None:
        """Queue a message for `flush_forever` (for callers that cannot await)."""
        self._outbox.append(self._frame(message))
        self._wakeup.set()

    async def flush_forever(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            batch, self._outbox = b"".join(self._outbox), []
            await self._send.send_all(batch)

    async def receive(self) -> Any:
        while True:
            if len(self._buffer) >= 4:
                size = int.from_bytes(self._buffer[:4], "big")
                if len(self._buffer) >= 4 + size:
                    data = bytes(self._buffer[4 : 4 + size])
                    del self._buffer[: 4 + size]
                    return pickle.loads(data)
            chunk = await self._receive.receive_some(1 << 16)
            if not chunk:
                raise EOFError("the other process closed the channel")
            self._buffer += chunk


class _WorkerProcess:
    """A worker process started with the same interpreter, fed over its stdin/stdout."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.channel = FrameChannel(process.stdin, process.stdout)

    @classmethod
    async def start(cls, settings: ExecutorSettings) -> _WorkerProcess:
        with reaper.spawning():
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "arbiter.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Ctrl-C goes to the parent only, which then stops the workers in order.
                start_new_session=True,
            )
            reaper.started(process.pid, group=False)  # it guards its own engines
        worker = cls(process)
        await worker.channel.send(settings)
        return worker

    async def aclose(self) -> None:
        """Ask the worker to finish (it shuts its engines down), then make sure it is gone."""
        with trio.CancelScope(shield=True):
            with (
                trio.move_on_after(5),
                contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
            ):
                await self.channel.send(None)
            with trio.move_on_after(15):
                await self.process.wait()
            if self.process.returncode is None:
                self.process.terminate()
                with trio.move_on_after(5):
                    await self.process.wait()
            if self.process.returncode is None:
                self.process.kill()
                await self.process.wait()
            reaper.reaped(self.process.pid)
