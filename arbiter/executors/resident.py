"""Resident game workers: engines kept warm between the games of short-lived tasks.

A Dask task is a function call on a pool thread; a game worker's engines need a trio loop
that keeps running between calls (their stderr is drained, their exits watched). So each
task thread gets a resident: a daemon thread of its own running one trio loop, which
keeps a `GameWorker` and its engines from one task to the next. The task hands its game
to its resident and waits for the events, as if it had played the game itself.

A resident lets its engines go when a game of another run comes (another tournament on
the same cluster), after `IDLE` seconds without a game, when its run ends (`release`:
at once if idle, else right after the game it is playing, and after any game of that run
still queued on the worker), or when its process dies (the reaper's watchdog kills their
groups).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping, Sequence

import trio

from arbiter.executors.game_worker import hosted
from arbiter.executors.jobs import Event, ExecutorSettings, GameJob, Preflight
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl

log = logging.getLogger(__name__)

IDLE = 60.0  # seconds without a game before a resident closes its engines

_lock = threading.Lock()
_residents: dict[int, Resident] = {}  # by the ident of the task thread they serve
_ended: set[str] = set()  # runs whose engines are to go as soon as each game ends


class Resident:
    """One thread, one trio loop, one game worker at a time."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._requests: trio.MemorySendChannel[_Request] | None = None
        self.thread = threading.Thread(
            target=trio.run, args=(self._main,), name="arbiter-resident", daemon=True
        )
        self.thread.start()
        self._ready.wait()

    async def _main(self) -> None:
        send, receive = trio.open_memory_channel[_Request](math.inf)
        self._token, self._requests = trio.lowlevel.current_trio_token(), send
        self._ready.set()
        pending: _Request | None = None
        while True:
            request = pending or await receive.receive()
            pending = None
            if request.released:
                request.done([])  # a release, with no engines held
                continue
            try:
                pending = await self._serve(request, receive)
            except Exception:
                log.debug(
                    "a game failed on its resident; the next gets a fresh worker", exc_info=True
                )  # its caller has the error

    async def _serve(
        self, first: _Request, receive: trio.MemoryReceiveChannel[_Request]
    ) -> _Request | None:
        """Serve the games of one run with one game worker; return the first request it
        cannot serve (another run's), or None after a release, the end of the run or
        `IDLE` seconds without a game. The worker's engines are closed on the way out."""
        settings, run = first.settings, first.run
        assert settings is not None
        events: list[Event] = []
        request: _Request | None = first
        async with hosted(settings, events.append) as worker:
            while request is not None and request.run == run:
                if request.released:  # its run ended: answered once the engines are closed
                    break
                assert request.settings is not None
                worker.settings = request.settings  # the run names its engines after its check
                events.clear()
                checked = None
                try:
                    if request.job is not None:
                        await worker.play(request.job, request.demand)
                    elif request.check is not None:
                        checked = await worker.check(*request.check)
                except Exception as exc:
                    request.failed(exc)
                    raise
                request.done(list(events), worker.warm, checked)
                with _lock:
                    if run in _ended:
                        return None
                with trio.move_on_after(IDLE):
                    request = None
                    request = await receive.receive()
                    while request.released and request.run != run:
                        request.done([])  # another run ended: none of its engines are here
                        request = await receive.receive()
        if request is not None and request.released:
            request.done([])
            return None
        return request

    def play(
        self, run: str, settings: ExecutorSettings, job: GameJob, demand: Mapping[str, int]
    ) -> tuple[list[Event], frozenset[str]]:
        """Play a game of `run` on this resident (blocking the calling thread): the events
        a slot would have reported, and the engines the resident holds warm afterwards."""
        request = _Request(run, settings, job, demand)
        self._submit(request)
        events, warm, _ = request.wait()
        return events, warm

    def check(
        self,
        run: str,
        settings: ExecutorSettings,
        keys: Sequence[str],
        variant: Variant,
        tcs: Mapping[str, TimeControl],
    ) -> tuple[Preflight, list[Event]]:
        """The preflight of `run` on this resident, whose engines stay warm for its games:
        what the engines said, and the events of their starts."""
        request = _Request(run, settings, None, {}, check=(keys, variant, tcs))
        self._submit(request)
        events, _, checked = request.wait()
        assert checked is not None
        return checked, events

    def release(self, run: str) -> None:
        """Close the resident's engines if they are `run`'s: at once if idle, else after
        its game. The caller does not wait (it may be a Dask worker's event loop, which
        must not stop for a game to end)."""
        self._submit(_Request(run, None, None, {}))

    def _submit(self, request: _Request) -> None:
        assert self._token is not None and self._requests is not None
        requests = self._requests
        trio.from_thread.run_sync(requests.send_nowait, request, trio_token=self._token)


class _Request:
    """A game (or a release) for a resident, and the answer its caller waits for."""

    def __init__(
        self,
        run: str,
        settings: ExecutorSettings | None,
        job: GameJob | None,
        demand: Mapping[str, int],
        *,
        check: tuple[Sequence[str], Variant, Mapping[str, TimeControl]] | None = None,
    ) -> None:
        self.run = run
        self.settings = settings
        self.job = job
        self.demand = demand
        self.check = check
        self.released = job is None and check is None
        self._finished = threading.Event()
        self._events: list[Event] = []
        self._warm: frozenset[str] = frozenset()
        self._checked: Preflight | None = None
        self._error: BaseException | None = None

    def done(
        self,
        events: list[Event],
        warm: frozenset[str] = frozenset(),
        checked: Preflight | None = None,
    ) -> None:
        self._events = events
        self._warm = warm
        self._checked = checked
        self._finished.set()

    def failed(self, exc: BaseException) -> None:
        self._error = exc
        self._finished.set()

    def wait(self) -> tuple[list[Event], frozenset[str], Preflight | None]:
        self._finished.wait()
        if self._error is not None:
            raise self._error
        return self._events, self._warm, self._checked


def resident() -> Resident:
    """The resident of the calling thread, started on first use."""
    ident = threading.get_ident()
    with _lock:
        found = _residents.get(ident)
        if found is None or not found.thread.is_alive():
            found = _residents[ident] = Resident()
        return found


def release_all(run: str) -> int:
    """The run has ended: every resident in this process holding its engines closes them,
    now if idle, else after its game (without waiting for it); how many residents there
    were."""
    with _lock:
        _ended.add(run)
        residents = [r for r in _residents.values() if r.thread.is_alive()]
    for r in residents:
        r.release(run)
    return len(residents)
