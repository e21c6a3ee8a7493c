"""The local executor: plays scheduled games on K slots, in this process or in workers.

With worker processes (`arbiter.executors.pool`, one trio loop each), the referee work
itself uses every core. A worker that dies takes only its current game with it: that game
is reported as a void harness fault, the worker's engine groups are killed here, and a new
worker takes over.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence

import trio

from arbiter.engines import reaper
from arbiter.executors.dispatch import Dispatcher
from arbiter.executors.game_worker import hosted
from arbiter.executors.jobs import (
    Emit,
    ExecutorSettings,
    Finished,
    GameJob,
    Preflight,
    Started,
    Unplayable,
    void_record,
)
from arbiter.executors.pool import Assignment, EngineGroup, WorkerProcess
from arbiter.executors.preflight import preflight
from arbiter.results.records import Termination
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl

log = logging.getLogger(__name__)


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
        return await preflight(self.settings, keys, variant, tcs, max(2, self.concurrency))

    async def aclose(self) -> None:
        pass

    async def run(self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit) -> None:
        """Play jobs until the channel is closed and drained, each slot taking the game
        its warm engines suit best (`arbiter.executors.dispatch`)."""
        slot = self._process_slot if self.processes else self._local_slot
        dispatcher = Dispatcher(jobs, self.concurrency)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(dispatcher.fill)
            async with trio.open_nursery() as slots:
                for _ in range(self.concurrency):
                    slots.start_soon(slot, dispatcher, emit)
            nursery.cancel_scope.cancel()  # every slot is done: nothing more will be taken

    async def _local_slot(self, dispatcher: Dispatcher, emit: Emit) -> None:
        async with hosted(self.settings, emit) as worker:
            while (job := await dispatcher.take(worker.warm)) is not None:
                await worker.play(job, dispatcher.demand)

    async def _process_slot(self, dispatcher: Dispatcher, emit: Emit) -> None:
        names: dict[str, str] = {}  # display names by engine key, as last reported
        while True:
            process = await WorkerProcess.start(self.settings)
            groups: dict[int, str] = {}  # its engines by group, killed here if it dies
            try:
                while (job := await dispatcher.take(groups.values())) is not None:
                    try:
                        await self._remote_game(process, job, dispatcher, emit, groups, names)
                    except (EOFError, trio.BrokenResourceError) as exc:
                        log.error(
                            "the worker process (pid %d) running game %s died: %r",
                            process.process.pid,
                            job.spec.game_id,
                            exc,
                        )
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
    async def _remote_game(process: WorkerProcess, job: GameJob, dispatcher: Dispatcher,
                           emit: Emit, groups: dict[int, str], names: dict[str, str],
                           ) -> None:  # fmt: skip
        demand = {key: dispatcher.demand.get(key, 0) for key in set(groups.values())}
        await process.channel.send(Assignment(job, demand))
        while True:
            message = await process.channel.receive()
            if isinstance(message, EngineGroup):
                if message.up:
                    groups[message.pgid] = message.key
                else:
                    groups.pop(message.pgid, None)
                continue
            if isinstance(message, Started):
                names[job.engines[0]], names[job.engines[1]] = message.seat1, message.seat2
            emit(message)
            if isinstance(message, Finished | Unplayable):
                return
