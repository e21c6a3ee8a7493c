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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace

import trio

from arbiter.engines import reaper
from arbiter.engines.calibration import this_host
from arbiter.engines.process import harness_limit
from arbiter.executors.affinity import CoreAssignment
from arbiter.executors.dispatch import Dispatcher
from arbiter.executors.game_worker import GameWorker, hosted
from arbiter.executors.jobs import (
    Emit,
    Event,
    ExecutorSettings,
    Finished,
    GameJob,
    Keep,
    Preflight,
    Unplayable,
    machine,
    void_record,
)
from arbiter.executors.pool import Assignment, Check, Checked, EngineGroup, WorkerProcess
from arbiter.executors.preflight import preflight
from arbiter.results.records import Termination
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl

log = logging.getLogger(__name__)


class LocalExecutor:
    """K slots on this machine: trio tasks in this process, or one worker process each."""

    def __init__(
        self,
        settings: ExecutorSettings,
        concurrency: int,
        *,
        processes: bool = True,
        cores: CoreAssignment | None = None,
    ) -> None:
        self.settings = settings
        self.concurrency = max(1, concurrency)
        self.processes = processes and self.concurrency > 1
        self.cores = cores  # each slot's engines pinned to its cores (affinity)
        self.notes: list[str] = []
        self._ready: list[_Worker] = []  # worker processes started by the preflight
        self._early: list[Event] = []  # what they reported before the run
        self._hosted: GameWorker | None = None  # this process's slot, from the preflight on

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """A run's life: a slot in this process is hosted from the engine check on, so the
        engines it checks are warm for its games; worker processes outlive the check by
        themselves (`preflight`). Everything is shut down on the way out."""
        # This host's speed, for the records: kept from an earlier run, else measured
        # now, before any engine of the run competes with the measurement.
        speed = await trio.to_thread.run_sync(this_host, machine())
        if speed is not None:
            self.settings = replace(self.settings, speed=speed)
        before = os.sched_getaffinity(0) if self.cores and self.cores.harness else None
        try:
            if before is not None and self.cores is not None:
                os.sched_setaffinity(0, self.cores.harness)
            if self.processes:
                yield
            else:
                async with hosted(self.slot_settings(0), self._early.append) as worker:
                    self._hosted = worker
                    yield
        finally:
            self._hosted = None
            await self.aclose()
            if before is not None:
                os.sched_setaffinity(0, before)

    def slot_settings(self, slot: int) -> ExecutorSettings:
        """The settings as slot `slot` (from 0) plays: its engines on its own cores."""
        if self.cores is None:
            return self.settings
        cores = self.cores.slots[slot % len(self.cores.slots)]
        engines = {k: replace(s, cores=cores) for k, s in self.settings.engines.items()}
        return replace(self.settings, engines=engines)

    async def preflight(
        self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
    ) -> Preflight:
        """With worker processes, the workers that will play the games check the engines
        (a share each) and keep them warm for their first games; else a check here."""
        if not self.processes:
            if self._hosted is not None:  # checked by the slot that will play the games
                return await self._hosted.check(keys, variant, tcs)
            return await preflight(self.settings, keys, variant, tcs, max(2, self.concurrency))
        unique = list(dict.fromkeys(keys))
        checks: list[Preflight] = []
        died: list[BaseException] = []

        async def check(slot: int, share: list[str]) -> None:
            try:
                worker = _Worker(await WorkerProcess.start(self.slot_settings(slot)), slot)
            except OSError as exc:  # a limit of the harness's own, such as open files
                died.append(exc)
                return
            self._ready.append(worker)
            if share:
                checks.append(await worker.check(share, variant, tcs, self._early.append))

        try:
            async with trio.open_nursery() as nursery:
                for i in range(self.concurrency):
                    nursery.start_soon(check, i, unique[i :: self.concurrency])
        except* (EOFError, trio.BrokenResourceError) as group:
            died.extend(group.exceptions)
        if died:
            first = died[0]
            if isinstance(first, OSError) and (own := harness_limit(first)) is not None:
                return Preflight(problem=f"cannot start a worker process: {own}")
            return Preflight(
                problem="a worker process could not start or died while checking"
                f" the engines ({first!r})"
            )
        result = Preflight()
        for checked in checks:
            result.info.update(checked.info)
            result.failures.update(checked.failures)
            if checked.problem and (
                not result.problem or (checked.config_error and not result.config_error)
            ):
                result.problem, result.config_error = checked.problem, checked.config_error
        return result

    async def aclose(self) -> None:
        """Shut down the worker processes the run did not take over."""
        ready, self._ready = self._ready, []
        for worker in ready:
            await worker.close()

    async def run(
        self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit, keep: Keep | None = None
    ) -> None:
        """Play jobs until the channel is closed and drained, each slot taking the game
        its warm engines suit best (`arbiter.executors.dispatch`)."""
        slot = self._process_slot if self.processes else self._local_slot
        dispatcher = Dispatcher(jobs, self.concurrency, keep, emit)
        early, self._early = self._early, []
        for event in early:
            emit(event)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(dispatcher.fill)
            async with trio.open_nursery() as slots:
                for number in range(self.concurrency):
                    slots.start_soon(slot, dispatcher, emit, number)
            nursery.cancel_scope.cancel()  # every slot is done: nothing more will be taken

    async def _local_slot(self, dispatcher: Dispatcher, emit: Emit, number: int) -> None:
        worker, self._hosted = self._hosted, None
        if worker is not None:  # the session's, with the checked engines warm
            # Named since the check.
            worker.settings, worker.emit = self.slot_settings(number), emit
            await self._take(worker, dispatcher)
            return
        async with hosted(self.slot_settings(number), emit) as worker:
            await self._take(worker, dispatcher)

    @staticmethod
    async def _take(worker: GameWorker, dispatcher: Dispatcher) -> None:
        while (job := await dispatcher.take(worker.warm)) is not None:
            await worker.play(job, dispatcher.demand)

    async def _process_slot(self, dispatcher: Dispatcher, emit: Emit, number: int) -> None:
        while True:
            worker = await self._ready_worker()
            if worker is None:
                # A worker the check started keeps its own slot's cores: slots are alike.
                worker = _Worker(await WorkerProcess.start(self.slot_settings(number)), number)
            number = worker.slot
            try:
                while (job := await dispatcher.take(worker.groups.values())) is not None:
                    try:
                        await self._remote_game(worker, job, dispatcher, emit)
                    except (EOFError, trio.BrokenResourceError) as exc:
                        log.error(
                            "the worker process (pid %d) running game %s died: %r",
                            worker.process.process.pid,
                            job.spec.game_id,
                            exc,
                        )
                        # Named as the run named them (since the check), whether or not
                        # this slot has seen them start.
                        emit(
                            Finished(
                                job.number,
                                void_record(
                                    job.spec,
                                    self.settings.seat_names(job.engines),
                                    Termination.HARNESS,
                                    "the worker process running this game died"
                                    f" ({type(exc).__name__})",
                                ),
                            )
                        )
                        break
                else:
                    return
            finally:
                await worker.close()

    async def _ready_worker(self) -> _Worker | None:
        """A worker process the preflight started, its engines warm and now named; None
        if there is none left, or it died since the check (it played nothing yet, so
        no game is charged with its death)."""
        if not self._ready:
            return None
        worker = self._ready.pop()
        if worker.process.process.poll() is None:
            try:
                await worker.process.channel.send(self.slot_settings(worker.slot))
                return worker
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        log.warning(
            "a worker process (pid %d) died after the engine check; starting another",
            worker.process.process.pid,
        )
        await worker.close()
        return None

    @staticmethod
    async def _remote_game(
        worker: _Worker, job: GameJob, dispatcher: Dispatcher, emit: Emit
    ) -> None:
        channel = worker.process.channel
        demand = {key: dispatcher.demand.get(key, 0) for key in set(worker.groups.values())}
        await channel.send(Assignment(job, demand))
        while True:
            message = await channel.receive()
            if isinstance(message, EngineGroup):
                worker.note(message)
                continue
            emit(message)
            if isinstance(message, Finished | Unplayable):
                return


class _Worker:
    """A worker process and the engine groups it reported (killed here if it dies)."""

    def __init__(self, process: WorkerProcess, slot: int) -> None:
        self.process = process
        self.slot = slot  # whose cores its engines run on (affinity)
        self.groups: dict[int, str] = {}  # its engines' process groups, by engine key

    async def check(
        self,
        keys: list[str],
        variant: Variant,
        tcs: Mapping[str, TimeControl],
        early: Callable[[Event], None],
    ) -> Preflight:
        """The preflight of `keys` in this worker, its engines kept warm there."""
        channel = self.process.channel
        await channel.send(Check(tuple(keys), variant, {k: tcs[k] for k in keys}))
        while True:
            message = await channel.receive()
            if isinstance(message, Checked):
                return message.preflight
            if isinstance(message, EngineGroup):
                self.note(message)
            else:
                early(message)  # an engine seen or started: told when the run begins

    def note(self, message: EngineGroup) -> None:
        if message.up:
            self.groups[message.pgid] = message.key
        else:
            self.groups.pop(message.pgid, None)

    async def close(self) -> None:
        await self.process.aclose()
        # A worker that exited cleanly shut its own engines down (their groups may be
        # reused by now); one that died left them to us.
        if self.process.process.returncode != 0:
            for pgid in self.groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            reaper.reap_orphans()  # what its engines left behind came to us
