"""A match: N games between two engines, played as seat-swapped pairs on K workers.

Each worker owns one process of each engine and reuses them game after game
(`clear_board` between games); an engine that faulted is restarted before its next
game. Void games are replayed up to a limit; a match in which games keep voiding stops
and says why instead of retrying forever.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from arbiter.clock import TimeControl
from arbiter.errors import EngineError
from arbiter.process import Deadlines, Engine, EngineSpec, start_engine
from arbiter.ratings import PairStats
from arbiter.records import Evidence, GameRecord, RecordWriter, Termination
from arbiter.referee import GameSpec, Referee, RefereeConfig, unsupported_variant
from arbiter.rules import Variant


@dataclass(frozen=True)
class MatchConfig:
    games: int = 2
    variant: Variant = field(default_factory=Variant)
    tc: tuple[TimeControl, TimeControl] = (TimeControl(10, 0.1), TimeControl(10, 0.1))
    concurrency: int = 1
    seed: int | None = None
    referee: RefereeConfig = field(default_factory=RefereeConfig)
    deadlines: Deadlines = field(default_factory=Deadlines)
    max_attempts: int = 3  # per game, counting the first
    max_consecutive_voids: int = 6
    # With concurrency > 1, games run in worker processes (one trio loop and one pair of
    # engines each) so that the referee work itself uses every core.
    processes: bool = True


@dataclass
class MatchResult:
    names: tuple[str, str]
    records: list[GameRecord] = field(default_factory=list)  # rated games, in finish order
    voids: list[GameRecord] = field(default_factory=list)
    unplayed: list[int] = field(default_factory=list)  # game numbers given up on
    aborted: str = ""
    config_error: bool = False  # aborted because the engines cannot play this match

    def stats(self) -> PairStats:
        wins = sum(r.winner == self.names[0] for r in self.records)
        return PairStats(wins, len(self.records) - wins)

    def terminations(self) -> Counter[str]:
        return Counter(str(r.termination) for r in self.records)

    def seat1_wins(self) -> int:
        return sum(r.winner == r.seat1 for r in self.records)


def display_names(specs: tuple[EngineSpec, EngineSpec], replies: tuple[str, str]) -> list[str]:
    """Names for the table: given names win, else the engines' own; equal ones get suffixes."""
    names = [spec.name or reply or spec.label for spec, reply in zip(specs, replies, strict=True)]
    if names[0] == names[1]:
        names = [f"{names[0]}#1", f"{names[1]}#2"]
    return names


StartHook = Callable[[int, int, str, str], None]
FinishHook = Callable[[int, GameRecord], None]


class Match:
    """Runs one match; events go to the hooks, records to the writer as games finish."""

    def __init__(
        self,
        specs: tuple[EngineSpec, EngineSpec],
        config: MatchConfig,
        *,
        writer: RecordWriter | None = None,
        on_start: StartHook | None = None,
        on_finish: FinishHook | None = None,
        match_id: str | None = None,
    ) -> None:
        self.specs = specs
        self.config = config
        self.writer = writer
        self.on_start = on_start or (lambda *a: None)
        self.on_finish = on_finish or (lambda *a: None)
        self.match_id = match_id or uuid.uuid4().hex[:8]
        self.referee = Referee(config.referee)
        self.names: list[str] = display_names(specs, ("", ""))
        self._attempts: Counter[int] = Counter()
        self._consecutive_voids = 0
        self._games_started = 0
        self.result = MatchResult(names=(self.names[0], self.names[1]))

    def game_spec(self, number: int) -> tuple[GameSpec, tuple[int, int]]:
        """Game `number` (1-based): odd games seat engine 0 first, even ones engine 1."""
        order = (0, 1) if number % 2 == 1 else (1, 0)
        seed = None if self.config.seed is None else self.config.seed * 1_000_003 + number
        spec = GameSpec(
            game_id=f"{self.match_id}-{number}",
            variant=self.config.variant,
            tc=(self.config.tc[order[0]], self.config.tc[order[1]]),
            seed=seed,
        )
        return spec, order

    async def run(self) -> MatchResult:
        send, receive = trio.open_memory_channel[int](math.inf)
        for number in range(1, self.config.games + 1):
            send.send_nowait(number)
        self._queue = send
        self._pending = self.config.games
        self._done = trio.Event()
        if self._pending == 0:
            return self.result
        workers = max(1, min(self.config.concurrency, self.config.games))
        worker = self._remote_worker if workers > 1 and self.config.processes else self._worker
        async with trio.open_nursery() as nursery:
            for _ in range(workers):
                nursery.start_soon(worker, receive.clone())
            await self._done.wait()
            nursery.cancel_scope.cancel()
        return self.result

    async def _abort_config(self, problem: str) -> None:
        """The engines cannot play this match at all: stop it, nothing is retried."""
        self.result.aborted = problem
        self.result.config_error = True
        self._done.set()
        await trio.sleep_forever()  # run() cancels every worker now that the match is done

    def _set_names(self, names: list[str]) -> None:
        self.names[:] = names
        self.result.names = (names[0], names[1])

    def _started(self, number: int, seat1: str, seat2: str) -> None:
        self._games_started += 1
        self.on_start(number, self.config.games, seat1, seat2)

    def _engine_started(self, engine: Engine) -> None:
        """Hook: a worker process reports its engines' process groups to the parent."""

    def _engine_closed(self, engine: Engine) -> None:
        """Hook: the engine's process group is about to be shut down."""

    async def _remote_worker(self, receive: trio.MemoryReceiveChannel[int]) -> None:
        """Feed games to one worker process and settle what it reports.

        A worker process that dies takes only its current game with it: that game is
        recorded void (a harness fault) and a new worker process takes over.
        """
        while True:
            process = await _WorkerProcess.start(self.specs, self.config, self.match_id)
            groups: set[int] = set()  # the worker's engines, killed here if the worker dies
            try:
                while True:
                    number = await receive.receive()
                    try:
                        await process.channel.send(number)
                        while True:
                            message = await process.channel.receive()
                            if message[0] == "started":
                                _, _, seat1, seat2, names = message
                                self._set_names(names)
                                self._started(number, seat1, seat2)
                            elif message[0] == "finished":
                                self._settle(number, GameRecord.from_json(message[2]))
                                break
                            elif message[0] == "engine":
                                groups.add(message[1])
                            elif message[0] == "engine_closed":
                                groups.discard(message[1])
                            else:
                                await self._abort_config(message[1])
                    except (EOFError, trio.BrokenResourceError) as exc:
                        self._settle(number, self._harness_void(number, exc))
                        break
            finally:
                await process.aclose()
                for pgid in groups:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pgid, signal.SIGKILL)

    def _harness_void(self, number: int, exc: BaseException) -> GameRecord:
        spec, order = self.game_spec(number)
        record = self._void_record(spec, order, Termination.HARNESS)
        record.reason = f"the worker process running this game died ({type(exc).__name__})"
        return record

    def _settle(self, number: int, record: GameRecord) -> None:
        """Store a finished attempt; requeue a void game while attempts remain."""
        if self.writer is not None:
            self.writer.write(record)
        self.on_finish(number, record)
        if record.void:
            self.result.voids.append(record)
            self._consecutive_voids += 1
            self._attempts[number] += 1
            evidence = record.evidence
            if evidence is not None and evidence.stage == "start" and not self._games_started:
                # An engine that never came up is broken or misconfigured: retrying it
                # game after game only repeats the error.
                last = evidence.stderr_tail.strip().splitlines()[-1:] or ["(nothing)"]
                self.result.aborted = (
                    f"{evidence.engine} could not be started: {evidence.detail};"
                    f" its last stderr line: {last[0][:200]}"
                )
                self._done.set()
                return
            if self._attempts[number] >= self.config.max_attempts:
                self.result.unplayed.append(number)
            if self._consecutive_voids >= self.config.max_consecutive_voids:
                self.result.aborted = (
                    f"{self._consecutive_voids} games in a row were void; last: {record.reason}"
                )
                self._done.set()
                return
            if self._attempts[number] < self.config.max_attempts:
                self._queue.send_nowait(number)
                return
        else:
            self._consecutive_voids = 0
            self.result.records.append(record)
        self._pending -= 1
        if self._pending == 0:
            self._done.set()

    async def _worker(self, receive: trio.MemoryReceiveChannel[int]) -> None:
        engines: list[Engine | None] = [None, None]
        async with trio.open_nursery() as nursery:
            try:
                async for number in receive:
                    spec, order = self.game_spec(number)
                    failed = await self._ensure_engines(engines, nursery, spec, order)
                    if failed is not None:
                        self._settle(number, failed)
                        continue
                    seats = [engines[order[0]], engines[order[1]]]
                    assert seats[0] is not None and seats[1] is not None
                    self._started(number, seats[0].name, seats[1].name)
                    outcome = await self.referee.play(spec, [seats[0], seats[1]])
                    self._settle(number, outcome.record)  # the record first, then clean up
                    for seat in outcome.faulty:
                        engine = engines[order[seat]]
                        engines[order[seat]] = None
                        if engine is not None:
                            self._engine_closed(engine)
                            await engine.aclose()
            finally:
                for engine in engines:
                    if engine is not None:
                        self._engine_closed(engine)
                        await engine.aclose()

    async def _ensure_engines(
        self,
        engines: list[Engine | None],
        nursery: trio.Nursery,
        spec: GameSpec,
        order: tuple[int, int],
    ) -> GameRecord | None:
        """Start whichever engines this worker lacks; a failure becomes a void record."""
        for index in (0, 1):
            if engines[index] is not None:
                continue
            try:
                engine = await start_engine(self.specs[index], nursery, self.config.deadlines)
            except EngineError as exc:
                return self._start_failure(spec, order, index, exc)
            except Exception as exc:
                error = EngineError(self.specs[index].label, f"{type(exc).__name__}: {exc}")
                return self._start_failure(spec, order, index, error)
            engines[index] = engine
            self._engine_started(engine)
        a, b = engines
        assert a is not None and b is not None
        self._set_names(display_names(self.specs, (a.info.name, b.info.name)))
        a.name, b.name = self.names
        a.session.name, b.session.name = self.names
        for engine in (a, b):
            problem = unsupported_variant(engine, self.config.variant)
            if problem is not None:
                await self._abort_config(problem)
        return None

    def _void_record(
        self, spec: GameSpec, order: tuple[int, int], termination: Termination
    ) -> GameRecord:
        record = spec.new_record(self.names[order[0]], self.names[order[1]])
        record.finished = record.started
        record.termination = termination
        record.void = True
        return record

    def _start_failure(
        self, spec: GameSpec, order: tuple[int, int], index: int, exc: EngineError
    ) -> GameRecord:
        label = self.names[index]
        record = self._void_record(spec, order, Termination.SETUP)
        record.reason = f"{label} failed to start: {exc.detail}"
        record.evidence = Evidence(
            engine=label,
            detail=exc.detail,
            returncode=getattr(exc, "returncode", None),
            stderr_tail=getattr(exc, "stderr_tail", ""),
            stage="start",
        )
        return record


class _RemoteMatch(Match):
    """The part of a match that runs inside a worker process: games in, reports out."""

    def __init__(self, specs: tuple[EngineSpec, EngineSpec], config: MatchConfig,
                 match_id: str, channel: FrameChannel) -> None:  # fmt: skip
        super().__init__(specs, config, match_id=match_id)
        self.channel = channel
        self._done = trio.Event()

    def _started(self, number: int, seat1: str, seat2: str) -> None:
        self.channel.send_nowait(("started", number, seat1, seat2, list(self.names)))

    def _settle(self, number: int, record: GameRecord) -> None:
        self.channel.send_nowait(("finished", number, record.to_json()))

    def _engine_started(self, engine: Engine) -> None:
        self.channel.send_nowait(("engine", engine.process.pid))

    def _engine_closed(self, engine: Engine) -> None:
        self.channel.send_nowait(("engine_closed", engine.process.pid))

    async def _abort_config(self, problem: str) -> None:
        self.channel.send_nowait(("config_error", problem))
        await trio.sleep_forever()  # the parent stops this worker

    async def serve(self) -> None:
        send, receive = trio.open_memory_channel[int](math.inf)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.channel.flush_forever)
            nursery.start_soon(self._worker, receive)
            while True:
                try:
                    number = await self.channel.receive()
                except EOFError:
                    number = None
                if number is None:
                    break
                send.send_nowait(number)
            nursery.cancel_scope.cancel()


async def worker_main() -> None:
    """Entry point of a worker process (`python -m arbiter.worker`): stdin/stdout carry frames."""
    channel = FrameChannel(
        trio.lowlevel.FdStream(os.dup(1)), trio.lowlevel.FdStream(os.dup(0))
    )
    # Nothing else may write to the frame pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    specs, config, match_id = await channel.receive()
    await _RemoteMatch(specs, config, match_id, channel).serve()


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

    async def send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        await self._send.send_all(len(data).to_bytes(4, "big") + data)

    def send_nowait(self, message: Any) -> None:
        """Queue a message for `flush_forever` (for callers that cannot await)."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self._outbox.append(len(data).to_bytes(4, "big") + data)
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
    async def start(cls, specs: tuple[EngineSpec, EngineSpec], config: MatchConfig,
                    match_id: str) -> _WorkerProcess:  # fmt: skip
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "arbiter.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Ctrl-C goes to the parent only, which then stops the workers in order.
            start_new_session=True,
        )
        worker = cls(process)
        await worker.channel.send((specs, config, match_id))
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
