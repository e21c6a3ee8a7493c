"""Worker processes: the same interpreter, fed pickled frames over its stdin and stdout.

Messages between the run and a worker are the typed events of `arbiter.executors.jobs`
(plus `EngineGroup`, so that the parent can kill a dead worker's engines).
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import trio

from arbiter import logs
from arbiter.engines import reaper
from arbiter.engines.process import Engine
from arbiter.executors.game_worker import hosted
from arbiter.executors.jobs import ExecutorSettings, GameJob, Preflight
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl


@dataclass(frozen=True)
class EngineGroup:
    """Worker to driver: an engine's process group came up or is going away (so that the
    driver can kill a dead worker's engines, and knows which engines it holds warm)."""

    pgid: int
    up: bool
    key: str


@dataclass(frozen=True)
class Assignment:
    """Driver to worker: a game, and how many pending games use each engine (what
    keeping one warm is worth when the worker must make room)."""

    job: GameJob
    demand: dict[str, int]


@dataclass(frozen=True)
class Check:
    """Driver to worker: the preflight for these engines, which the worker then keeps
    warm for its games."""

    keys: tuple[str, ...]
    variant: Variant
    tcs: dict[str, TimeControl]


@dataclass(frozen=True)
class Checked:
    """Worker to driver: what the engines of a `Check` said."""

    preflight: Preflight


Request = Assignment | Check | ExecutorSettings  # a new ExecutorSettings: the engines renamed


async def worker_main() -> None:
    """A worker process's life (`python -m arbiter.executors.worker`): frames on stdin/stdout."""
    logs.configure_from_environment()
    channel = FrameChannel(trio.lowlevel.FdStream(os.dup(1)), trio.lowlevel.FdStream(os.dup(0)))
    # Nothing else may write to the frame pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    reaper.guard()
    settings: ExecutorSettings = await channel.receive()
    send, receive = trio.open_memory_channel[Request](math.inf)

    def on_engine(key: str, engine: Engine, up: bool) -> None:
        channel.send_nowait(EngineGroup(engine.process.pid, up, key))

    async def play_all() -> None:
        async with hosted(settings, channel.send_nowait, on_engine=on_engine) as worker:
            async for request in receive:
                if isinstance(request, Assignment):
                    await worker.play(request.job, request.demand)
                elif isinstance(request, Check):
                    checked = await worker.check(request.keys, request.variant, request.tcs)
                    channel.send_nowait(Checked(checked))
                else:
                    worker.settings = request

    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.flush_forever)
        nursery.start_soon(play_all)
        while True:
            try:
                message = await channel.receive()
            except EOFError:
                message = None
            if message is None:
                break
            send.send_nowait(message)
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


class WorkerProcess:
    """A worker process started with the same interpreter, fed over its stdin/stdout."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.channel = FrameChannel(process.stdin, process.stdout)

    @classmethod
    async def start(cls, settings: ExecutorSettings) -> WorkerProcess:
        with reaper.spawning():
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "arbiter.executors.worker"],
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
