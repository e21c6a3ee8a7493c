"""The Dask executor: one distributed task per game, played on a cluster's workers.

Each task plays its game in its own `trio.run` with the same `GameWorker` (and so the
same referee, engine start-up and void rules) as a local run, and returns the events a
local slot would have reported; the driver alone stores them, as they arrive. The
`distributed` package is imported only here, and only when a run asks for a cluster.

Keys and duplicates. A task's key is made from the game id, the attempt and a digest of
what the game is (its spec and both engine definitions): games are never merged with
one another, and a replay after a void game is a new task. Games are impure (engines
and clocks are), so no key is ever derived from the arguments (`pure=False` semantics).
A future resolves once; a result that still reached the driver twice would find its
game no longer in flight and be ignored there, and the store keeps one row per id.

Workers that die. The scheduler gives a task whose worker died mid-game to another
worker, which plays it from the start; the first play never returned anything, so
nothing is scored twice. A task that has killed too many workers (`KilledWorker`)
comes back as a void harness fault, which the driver replays or gives up by its policy.
A worker process other than the driver's guards its engines as the command line does
(`reaper.guard()`): a watchdog kills their process groups if the worker dies.

Engines on workers. The preflight runs on every worker present at the start, since the
engines may exist only there. An engine that cannot start on some workers is kept off
them (its games are restricted to the others, and the run says so); one that cannot
start on any worker stops the run before the first game, naming each worker and its
failure. A worker that joins later and cannot start an engine fails that game as a void
setup fault naming the worker, and is then left out for that engine.

Speed. A worker's first task measures its host's speed factor (`arbiter calibrate`),
unless one is kept in the host's cache, and every game it plays records it: hosts of
unequal speed show in `status --by-host`.

The driver is fed with a bounded window of games in flight (twice the workers' threads
by default), so a long schedule is never submitted at once; stopping the run cancels
the tasks not yet finished (a game already being played finishes on its worker and its
result is dropped).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import re
import socket
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import trio

from arbiter import logs
from arbiter.engines import reaper
from arbiter.engines.calibration import this_host
from arbiter.errors import ArbiterError, ConfigError
from arbiter.executors.dispatch import Dispatcher
from arbiter.executors.jobs import (
    Abort,
    Emit,
    EngineSeen,
    EngineStarted,
    Event,
    ExecutorSettings,
    Finished,
    GameJob,
    Keep,
    Preflight,
    machine,
    void_record,
)
from arbiter.executors.resident import release_all, resident
from arbiter.results.records import Evidence, Stage, Termination
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from distributed import Client, Future

CONNECT_TIMEOUT = 30.0  # seconds to reach the scheduler, unless TIMEOUT_VARIABLE says
TIMEOUT_VARIABLE = "ARBITER_DASK_TIMEOUT"
MAX_CONNECT_TIMEOUT = 3600.0
WORKERS_TIMEOUT = 60.0  # seconds to wait for the first worker
PREFLIGHT_TIMEOUT = 120.0  # seconds for every worker to start every engine once
CLOSE_TIMEOUT = 10.0
MAX_WINDOW = 4096  # games in flight at most, however large the cluster
INSTALL_HINT = "pip install 'atoll-arbiter[dask]' on the driver and on every worker"
_ADDRESS = re.compile(r"^[a-z][a-z0-9+.-]*://[^\s/]\S*$")
# Tells the driver's own process from a worker's: an in-process worker (a test cluster)
# shares the driver's guard and must not make the driver's process a subreaper again.
_PROCESS = os.urandom(8).hex()
_guard_lock = threading.Lock()


def check_address(value: str, where: str) -> str:
    """A scheduler address as Dask takes it (`tcp://HOST:PORT`); ConfigError otherwise."""
    if not _ADDRESS.match(value):
        raise ConfigError(
            f"{value!r} is not a Dask scheduler address",
            where=where,
            hint='give it as tcp://HOST:PORT, e.g. "tcp://10.0.0.5:8786"',
        )
    return value


def connect_timeout() -> float:
    """Seconds to reach the scheduler: ARBITER_DASK_TIMEOUT, or CONNECT_TIMEOUT.

    A variable rather than a key: how long a cluster takes to answer belongs to the
    machine the driver runs on, not to the tournament it plays.
    """
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return CONNECT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_CONNECT_TIMEOUT:  # nan fails too
        raise ConfigError(
            f"{text!r} is not a number of seconds to wait for the Dask scheduler",
            where=TIMEOUT_VARIABLE,
            hint=f"give a number above 0 and at most {MAX_CONNECT_TIMEOUT:g}, or unset it",
        )
    return value


@dataclass(frozen=True)
class TaskResult:
    """What a game's task returns: the events a local slot would have reported."""

    events: tuple[Event, ...]
    worker: str  # the Dask worker's address
    host: str
    warm: frozenset[str] = frozenset()  # the engines its thread holds warm afterwards


@dataclass(frozen=True)
class WorkerCheck:
    worker: str
    host: str
    preflight: Preflight
    events: tuple[Event, ...] = ()  # its engines' starts, for the run's count
    warm: frozenset[str] = frozenset()  # the engines it keeps warm for its games


def _guard(driver: str) -> None:
    if driver == _PROCESS:
        return  # a worker thread of the driver's own process: its guard covers us
    with _guard_lock:
        if not reaper.guarding():
            reaper.guard()


def _where() -> tuple[str, str]:
    from distributed import get_worker

    return get_worker().address, machine()[0]


def _on_this_host(settings: ExecutorSettings) -> ExecutorSettings:
    """The settings with this worker's speed factor, which its records keep and
    `scale_tc` divides the time controls by: measured by the first task on a host that
    has none kept, before it plays (the preflight on workers present at the start, a
    game on one that joins later)."""
    speed = this_host(machine(), needed=settings.scale_tc)
    if speed is None and settings.scale_tc:
        raise ArbiterError(
            f"scale_tc: the speed factor of host {machine()[0]} could not be measured"
            " (its log says why); run `arbiter calibrate` there"
        )
    return settings if speed is None else replace(settings, speed=speed)


def play_game(
    settings: ExecutorSettings, job: GameJob, driver: str, run: str, demand: dict[str, int]
) -> TaskResult:
    """The task: play one game on this worker's resident game worker, whose engines stay
    warm for the next task on this thread (`arbiter.executors.resident`)."""
    _guard(driver)
    worker, host = _where()
    settings = _on_this_host(settings)
    events, warm = resident().play(run, settings, job, demand)
    # A set-up failure may be this worker's alone: its record says where it happened.
    said = tuple(
        replace(
            e,
            record=replace(
                e.record, reason=f"{e.record.reason} (on Dask worker {worker}, host {host})"
            ),
        )
        if isinstance(e, Finished) and e.record.termination is Termination.SETUP
        else e
        for e in events
    )
    return TaskResult(said, worker, host, warm)


def release_engines(run: str) -> int:
    """Run on every worker when a run ends: its residents close their engines."""
    return release_all(run)


def check_worker(
    settings: ExecutorSettings,
    keys: list[str],
    variant: Variant,
    tcs: dict[str, TimeControl],
    driver: str,
    run: str,
) -> WorkerCheck:
    """The preflight task: this worker starts each engine once and sets up a game, on the
    resident of its thread, which keeps them warm for the games that follow."""
    _guard(driver)
    worker, host = _where()
    settings = _on_this_host(settings)
    checked, events = resident().check(run, settings, keys, variant, tcs)
    warm = frozenset(k for k in checked.info if k not in checked.failures)
    return WorkerCheck(worker, host, checked, tuple(events), warm)


async def _settled(future: Future[Any], token: trio.lowlevel.TrioToken) -> tuple[str, Any]:
    """Wait for a future without holding a thread, then fetch its outcome."""
    done = trio.Event()

    def on_done(_: Future[Any]) -> None:  # called in a thread of distributed's
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    future.add_done_callback(on_done)  # type: ignore[no-untyped-call]
    await done.wait()
    return await trio.to_thread.run_sync(_outcome, future, abandon_on_cancel=True)


def _outcome(future: Future[Any]) -> tuple[str, Any]:
    """A done future's value, fetched from its worker (blocking: run in a thread).

    A result whose worker died before it was fetched is computed again by the scheduler,
    and this waits for that play.
    """
    if future.status == "cancelled":
        return "cancelled", None
    try:
        return "ok", future.result()
    except Exception as exc:
        return "error", exc


class DaskExecutor:
    """Games as tasks on a Dask cluster; the driver's process keeps the store."""

    def __init__(
        self,
        settings: ExecutorSettings,
        address: str,
        *,
        window: int | None = None,
        where: str = "--dask",
    ) -> None:
        self.settings = settings
        self.address = address
        self.window = window  # games in flight; None: twice the workers' threads
        self.where = where  # the option or key that named the scheduler, for errors
        self.notes: list[str] = []
        self._client: Client | None = None
        self._bad: dict[str, dict[str, str]] = {}  # engine key -> worker -> why it failed
        self._seen: set[str] = set()
        self._preflight_seen: list[EngineSeen] = []
        self._preflight_started: list[EngineStarted] = []
        self._voids: Counter[str] = Counter()  # void plays of games not yet settled
        self._threads: dict[str, int] = {}
        self._threads_at = -math.inf
        self._inflight = 0
        self._load: Counter[str] = Counter()  # games sent to each worker, not yet back
        self._warm: dict[str, frozenset[str]] = {}  # engines each worker holds warm
        # A task was sent (a check or a game): its worker may hold engines for this run,
        # even if the run ended before any task came back.
        self._engaged = False
        self._run = os.urandom(8).hex()  # this run, as the workers' residents know it
        self._room = trio.Event()
        self._abandoned: list[Future[Any]] = []

    # ------------------------------------------------------------------ cluster

    async def _connect(self) -> Client:
        if self._client is not None:
            return self._client
        try:
            import distributed
        except ImportError as exc:
            raise ConfigError(
                "running on a Dask cluster needs the distributed package",
                where=self.where,
                hint=INSTALL_HINT,
            ) from exc

        timeout = connect_timeout()
        gave_up = threading.Event()

        def connect() -> Client:
            # A plain connection first: a Client that never reached its scheduler fails
            # again, noisily, when it is collected.
            parts = urllib.parse.urlsplit(self.address)
            if parts.scheme == "tcp" and parts.hostname and parts.port:
                socket.create_connection((parts.hostname, parts.port), timeout=timeout).close()
            client = distributed.Client(  # type: ignore[no-untyped-call]
                self.address, timeout=timeout, set_as_default=False
            )
            if gave_up.is_set():  # the run went on without it: nobody else will close it
                client.close()  # type: ignore[no-untyped-call]
            return client

        hint = (
            f"start it with 'dask scheduler' and give the tcp://HOST:PORT it prints;"
            f" {TIMEOUT_VARIABLE}=SECONDS waits longer"
        )
        # Distributed's own timeout is not kept once a listener has accepted the TCP
        # connection, so the whole connect has a deadline here; the thread left blocked
        # is a daemon thread of trio's and never holds up the end of the process.
        try:
            with trio.move_on_after(timeout) as scope:
                self._client = await trio.to_thread.run_sync(connect, abandon_on_cancel=True)
        except Exception as exc:
            # Whatever the client raised while connecting (the installed distributed can
            # raise a MemoryError from numpy on a timed-out handshake) means one thing.
            raise ConfigError(
                f"cannot reach the Dask scheduler at {self.address} within {timeout:g} s:"
                f" {type(exc).__name__}: {exc}",
                where=self.where,
                hint=hint,
            ) from exc
        if scope.cancelled_caught:
            gave_up.set()
            raise ConfigError(
                f"the Dask scheduler at {self.address} accepted the connection but did not"
                f" answer within {timeout:g} s",
                where=self.where,
                hint=hint,
            )
        assert self._client is not None
        return self._client

    async def _workers(self, client: Client, *, wait: bool = False) -> dict[str, int]:
        """Worker addresses and their threads, refreshed at most every two seconds."""
        if wait:
            try:
                await trio.to_thread.run_sync(
                    lambda: client.wait_for_workers(1, timeout=WORKERS_TIMEOUT),
                    abandon_on_cancel=True,
                )
            except TimeoutError as exc:
                raise ConfigError(
                    f"no Dask worker joined the scheduler at {self.address} within"
                    f" {WORKERS_TIMEOUT:.0f} s",
                    where=self.where,
                    hint=f"start workers with 'dask worker {self.address} --nthreads 1'",
                ) from exc
        if wait or time.monotonic() - self._threads_at > 2:
            threads = await trio.to_thread.run_sync(client.nthreads, abandon_on_cancel=True)
            self._threads = {str(k): int(v) for k, v in threads.items()}
            self._threads_at = time.monotonic()
        return self._threads

    async def _limit(self, client: Client) -> int:
        if self.window is not None:
            return self.window
        threads = sum((await self._workers(client)).values())
        return max(2, min(MAX_WINDOW, 2 * threads))

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """A run on the cluster: its workers' engines are released when it ends."""
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        abandoned, self._abandoned = self._abandoned, []
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
            if abandoned:
                await trio.to_thread.run_sync(client.cancel, abandoned, abandon_on_cancel=True)
            if self._engaged:
                # The run is over: the workers' warm engines go now, not when idle.
                with trio.move_on_after(CLOSE_TIMEOUT / 2), contextlib.suppress(Exception):
                    await trio.to_thread.run_sync(
                        lambda: client.run(release_engines, self._run), abandon_on_cancel=True
                    )
            await trio.to_thread.run_sync(client.close, abandon_on_cancel=True)

    # ---------------------------------------------------------------- preflight

    async def preflight(
        self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
    ) -> Preflight:
        """Every worker present starts every engine once: engines may exist only there."""
        client = await self._connect()
        workers = await self._workers(client, wait=True)
        run = os.urandom(4).hex()
        self._engaged = True
        futures = [
            client.submit(
                check_worker,
                self.settings,
                list(dict.fromkeys(keys)),
                variant,
                dict(tcs),
                _PROCESS,
                self._run,
                key=f"arbiter-preflight-{run}-{address}",
                workers=[address],
                allow_other_workers=False,
            )
            for address in workers
        ]
        checks: list[WorkerCheck] = []
        token = trio.lowlevel.current_trio_token()
        pending = dict(zip(workers, futures, strict=True))
        scopes: dict[str, trio.CancelScope] = {}

        async def check(worker: str, future: Future[Any]) -> None:
            with scopes.setdefault(worker, trio.CancelScope()):
                status, value = await _settled(future, token)
                if status == "ok":
                    checks.append(value)
            del pending[worker]

        try:
            with trio.move_on_after(PREFLIGHT_TIMEOUT):
                async with trio.open_nursery() as nursery:
                    for worker, future in pending.items():
                        nursery.start_soon(check, worker, future)
                    # A worker that leaves before its check ends is not waited for: its
                    # task cannot run anywhere else.
                    while pending:
                        await trio.sleep(1)  # the cluster's membership, polled
                        present = await self._workers(client)
                        for worker in [w for w in pending if w not in present]:
                            scopes[worker].cancel()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
                await trio.to_thread.run_sync(client.cancel, futures, abandon_on_cancel=True)
        return self._combine(keys, checks, len(workers))

    def _combine(self, keys: Sequence[str], checks: Sequence[WorkerCheck], asked: int) -> Preflight:
        result = Preflight()
        if not checks:
            result.problem = (
                f"none of the {asked} Dask workers at {self.address} finished"
                f" the engine check within {PREFLIGHT_TIMEOUT:.0f} s"
            )
            return result
        for check in checks:
            checked = check.preflight
            self._warm[check.worker] = check.warm
            self._preflight_started += [e for e in check.events if isinstance(e, EngineStarted)]
            if checked.config_error:
                result.problem = f"{checked.problem} (on Dask worker {check.worker})"
                result.config_error = True
                return result
            for key, info in checked.info.items():
                result.info.setdefault(key, info)
            for key, why in checked.failures.items():
                self._bad.setdefault(key, {})[check.worker] = why
            if checked.problem and not checked.failures:
                result.problem = f"{checked.problem} (on Dask worker {check.worker})"
                return result
        for key in dict.fromkeys(keys):  # the run may leave out what starts nowhere
            if key not in result.info:
                result.failures[key] = self._nowhere(key)
                result.problem = result.problem or result.failures[key]
        for key, bad in self._bad.items():
            if key in result.failures:
                continue
            self.notes.append(
                f"{self.settings.engines[key].label} cannot start on Dask"
                f" worker(s) {', '.join(sorted(bad))}: its games were played"
                " on the others"
            )
        if len(checks) < asked:
            self.notes.append(
                f"{asked - len(checks)} of {asked} Dask workers did not finish"
                " the engine check in time"
            )
        self._preflight_seen = [EngineSeen(key, info) for key, info in result.info.items()]
        return result

    def _nowhere(self, key: str) -> str:
        failures = sorted(self._bad.get(key, {}).items())
        shown = "; ".join(f"on {worker}: {why}" for worker, why in failures[:3])
        more = f"; and {len(failures) - 3} more workers" if len(failures) > 3 else ""
        return (
            f"no Dask worker can start {self.settings.engines[key].label}: {shown}{more};"
            " the engine's command must resolve on every worker"
        )

    def _allowed(self, job: GameJob, workers: Mapping[str, int]) -> list[str] | None:
        """Where this job may run: anywhere (None), or the workers that can start both."""
        bad = set().union(*(self._bad.get(key, {}) for key in job.engines))
        if not bad:
            return None
        return [worker for worker in workers if worker not in bad]

    # --------------------------------------------------------------------- run

    async def run(
        self, jobs: trio.MemoryReceiveChannel[GameJob], emit: Emit, keep: Keep | None = None
    ) -> None:
        """Send games as workers have room, each to the worker whose warm engines suit
        it best (a preference the scheduler drops when that worker leaves)."""
        client = await self._connect()
        for seen in self._preflight_seen:
            self._report(seen, emit)
        for started in self._preflight_started:
            emit(started)
        token = trio.lowlevel.current_trio_token()
        dispatcher = Dispatcher(jobs, await self._limit(client), keep, emit)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(dispatcher.fill)
            while True:
                while self._inflight >= await self._limit(client):
                    await self._room.wait()
                    self._room = trio.Event()
                workers = await self._workers(client)
                target = self._freest(workers)
                job = await dispatcher.take(self._warm.get(target, frozenset()))
                if job is None:
                    break
                allowed = self._allowed(job, workers)
                if allowed == []:
                    bad = next(k for k in job.engines if self._bad.get(k))
                    emit(Abort(self._nowhere(bad)))
                    nursery.cancel_scope.cancel()
                    return
                if allowed is not None and target not in allowed:
                    target = self._freest({w: workers[w] for w in allowed})
                demand = {k: dispatcher.demand.get(k, 0) for k in self._warm.get(target, ())}
                self._inflight += 1
                self._load[target] += 1
                nursery.start_soon(self._game, client, token, job, allowed, target, demand, emit)

    def _freest(self, workers: Mapping[str, int]) -> str:
        """The worker with the most threads free (by the games sent to it), "" if none."""
        return max(workers, key=lambda w: (workers[w] - self._load[w], w), default="")

    def _key(self, job: GameJob) -> str:
        """The game id, its attempt (a replay after a void game is a new task) and a
        digest of what the game is, so that no two different games share a key."""
        what = repr(
            (job.spec, [self.settings.engines[k] for k in job.engines], self.settings.referee)
        )
        digest = hashlib.sha256(what.encode()).hexdigest()[:12]
        attempt = self._voids[job.spec.game_id] + 1
        return f"arbiter-game-{job.spec.game_id}-{attempt}-{digest}"

    async def _game(
        self,
        client: Client,
        token: trio.lowlevel.TrioToken,
        job: GameJob,
        allowed: list[str] | None,
        target: str,
        demand: dict[str, int],
        emit: Emit,
    ) -> None:
        # Restricted to the workers that can start both engines, else a preference for
        # the one holding them warm, which the scheduler drops if it leaves.
        where = allowed if allowed is not None else [target] if target else None
        self._engaged = True
        future = client.submit(
            play_game,
            self.settings,
            job,
            _PROCESS,
            self._run,
            demand,
            key=self._key(job),
            workers=where,
            allow_other_workers=allowed is None,
            retries=0,
        )
        settled = False
        try:
            status, value = await _settled(future, token)
            settled = True
        finally:
            self._inflight -= 1
            self._load[target] -= 1
            self._room.set()
            if not settled:
                self._abandoned.append(future)  # cancelled at close
        if status == "ok":
            self._deliver(job, value, emit)
            return
        evidence = None
        if status == "error" and type(value).__name__ == "KilledWorker":
            reason = f"the Dask workers running this game died ({value})"
        elif status == "error":
            first = value
            while isinstance(first, BaseExceptionGroup):  # a trio nursery's: say what failed
                first = first.exceptions[0]
            detail = f"{type(first).__name__}: {str(first)[:500]}"
            evidence = Evidence.of_harness(detail, value)
            log.error("game %s failed on the cluster:\n%s", job.spec.game_id, evidence.traceback)
            reason = (
                f"the game's task failed on the cluster: {detail}; the traceback is in"
                f" the record's evidence and in {logs.where()}"
            )
        else:
            reason = "the Dask scheduler dropped this game (lost connection?)"
        seats = self.settings.seat_names(job.engines)  # as the run named them
        self._voids[job.spec.game_id] += 1
        emit(
            Finished(
                job.number,
                void_record(job.spec, seats, Termination.HARNESS, reason[:1000], evidence),
            )
        )

    def _report(self, event: EngineSeen, emit: Emit) -> None:
        if event.key not in self._seen:
            self._seen.add(event.key)
            emit(event)

    def _deliver(self, job: GameJob, result: TaskResult, emit: Emit) -> None:
        self._warm[result.worker] = result.warm
        for event in result.events:
            if isinstance(event, EngineSeen):
                self._report(event, emit)
                continue
            if isinstance(event, Finished):
                if event.record.void:
                    self._voids[job.spec.game_id] += 1
                else:
                    self._voids.pop(job.spec.game_id, None)
            emit(event)
            if isinstance(event, Finished):
                self._left_out(job, event, result.worker)

    def _left_out(self, job: GameJob, event: Finished, worker: str) -> None:
        """An engine that could not start on this worker is kept off it from now on."""
        record = event.record
        evidence = record.evidence
        if not (record.void and evidence is not None and evidence.stage == Stage.START):
            return
        key = job.engines[1 if evidence.engine == record.seat2 else 0]
        self._bad.setdefault(key, {})[worker] = record.reason
