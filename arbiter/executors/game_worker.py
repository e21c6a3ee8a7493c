"""The game worker: plays jobs one at a time with engines it keeps warm between games.

A worker reuses its engines game after game (`clear_board` between games): it keeps the
engines of its last few pairings and closes the least recently used ones beyond that. An
engine that faulted is closed at once and restarted for its next game. Every host (a slot
in this process, a worker process, a Dask task) runs one through `hosted`.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

import trio

from arbiter.engines import reaper
from arbiter.engines.params import fill, placeholders, shown
from arbiter.engines.player import Player
from arbiter.engines.process import Engine, EngineSpec, start_engine
from arbiter.errors import EngineError
from arbiter.executors.jobs import (
    Emit,
    EngineSeen,
    EngineStarted,
    ExecutorSettings,
    Finished,
    GameJob,
    Preflight,
    Started,
    Unplayable,
    machine,
    void_record,
)
from arbiter.executors.preflight import preflight
from arbiter.games.referee import GameSpec, Referee
from arbiter.games.solver import OutsideJudge
from arbiter.results.records import Evidence, GameRecord, Stage, Termination
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl

log = logging.getLogger(__name__)

_NONE: Mapping[str, int] = {}  # no pending games known: the least recently used goes first

EngineHook = Callable[[str, Engine, bool], None]  # key, engine, up: started, else closing
Demand = Mapping[str, int]  # pending games that use an engine, by its key (absent: none)


@asynccontextmanager
async def hosted(
    settings: ExecutorSettings, emit: Emit, *, on_engine: EngineHook | None = None
) -> AsyncIterator[GameWorker]:
    """A game worker with a nursery for its engines, whose engines are shut down on the
    way out, however the host leaves (its jobs done, cancelled, or failing)."""
    async with trio.open_nursery() as nursery:
        worker = GameWorker(settings, nursery, emit, on_engine=on_engine)
        try:
            yield worker
        finally:
            await worker.aclose()


class GameWorker:
    """Plays jobs one at a time with engines it starts, keeps and restarts as needed."""

    def __init__(
        self,
        settings: ExecutorSettings,
        nursery: trio.Nursery,
        emit: Emit,
        *,
        on_engine: EngineHook | None = None,
    ) -> None:
        self.settings = settings
        self.nursery = nursery
        self.emit = emit
        self.on_engine = on_engine or (lambda key, engine, up: None)
        self.referee = Referee(settings.referee)
        self.engines: OrderedDict[str, Engine] = OrderedDict()  # least recently used first
        self._seen: set[str] = set()
        self._pairing: dict[str, frozenset[str]] = {}  # kept confined engines: their pairing
        # Engines started with a game's parameter values: their specs, by the key they
        # are kept under (the engine's key and the values), and that engine's key.
        self._filled: dict[str, EngineSpec] = {}
        self._base: dict[str, str] = {}
        # The outside judge, one solver engine kept by this worker for all its games.
        self.judge = (
            None
            if settings.solver is None
            else OutsideJudge(settings.solver, nursery, settings.deadlines)
        )

    @property
    def warm(self) -> frozenset[str]:
        """The engines this worker holds running: what the next game should use."""
        return frozenset(self.engines)

    def _spec(self, key: str) -> EngineSpec:
        return self._filled.get(key) or self.settings.engines[key]

    def _keys(self, job: GameJob) -> tuple[str, str]:
        """The keys a game's engines are kept under: a seat with values for placeholders
        of its command is its engine started with them (another process than the
        engine's other values); values told by protocol keep the engine's process."""
        keys = list(job.engines)
        for seat, values in enumerate(job.spec.params):
            key = job.engines[seat]
            template = self.settings.templates.get(key, ())
            named = set(placeholders(template))
            filled_values = tuple((n, v) for n, v in values if n in named)
            if not filled_values:
                continue
            filled = f"{key}\0{json.dumps(filled_values)}"
            if filled not in self._filled:
                argv = fill(template, dict(filled_values))
                self._filled[filled] = replace(self.settings.engines[key], argv=argv)
                self._base[filled] = key
            keys[seat] = filled
        return keys[0], keys[1]

    def _told(self, job: GameJob, seat: int) -> tuple[tuple[str, str], ...]:
        """A seat's values told by protocol: those its command has no placeholder for."""
        named = set(placeholders(self.settings.templates.get(job.engines[seat], ())))
        return tuple((n, shown(v)) for n, v in job.spec.params[seat] if n not in named)

    async def play(self, job: GameJob, demand: Demand = _NONE) -> None:
        """Play one game. `demand` says how many pending games use an engine: when the
        budget forces one out to make room, the least wanted goes first."""
        told = (self._told(job, 0), self._told(job, 1))
        keys = self._keys(job)
        if keys != job.engines:
            job = replace(job, engines=keys)
        pairing = frozenset(job.engines)
        for key, played in list(self._pairing.items()):
            if played != pairing:  # a confined engine lasts one pairing's games at most
                await self._close(key)
        engines: list[Engine | None] = [self.engines.get(k) for k in job.engines]
        missing = [seat for seat in (0, 1) if engines[seat] is None]
        for seat in (0, 1):
            if engines[seat] is not None:
                self.engines.move_to_end(job.engines[seat])
        await self._make_room([job.engines[seat] for seat in missing], job.engines, demand)
        failed: dict[int, EngineError] = {}

        async def start(seat: int) -> None:
            try:
                engines[seat] = await self._start(job.engines[seat])
            except EngineError as exc:
                failed[seat] = exc

        # Both engines new: started side by side, since a slow start is the cost to cut.
        async with trio.open_nursery() as starting:
            for seat in missing:
                starting.start_soon(start, seat)
        if failed:
            seat = min(failed)
            self.emit(Finished(job.number, self._start_failure(job, seat, failed[seat])))
            return
        a, b = engines
        assert a is not None and b is not None
        base = (self._base.get(keys[0], keys[0]), self._base.get(keys[1], keys[1]))
        names = self.settings.seat_names(base, [a.info.name, b.info.name])
        players = [Player.of(a), Player.of(b)]
        for player, name, values in zip(players, names, told, strict=True):
            player.name = name
            player.params = values
        for player in players:
            problem = player.unsupported(job.spec.variant) or player.params_problem()
            if problem is not None:
                self.emit(Unplayable(job.number, problem))
                return
        self.emit(Started(job.number, names[0], names[1]))
        host, cpu = machine()
        outcome = await self.referee.play(
            self._on_host(job.spec), players, host=host, cpu=cpu, solver=self.judge
        )
        record, speed = outcome.record, self.settings.speed
        if speed is not None:
            record = replace(record, speed=speed.under("cpu" in record.clock.values()))
        # The record first, then clean up.
        self.emit(Finished(job.number, record, outcome.transcript))
        reaper.check_watchdog()
        for seat, key in enumerate(job.engines):
            # A sandboxed engine, and all it started, lasts one game: nothing it left
            # running or wrote in its scratch folder reaches the next; an engine with
            # limits too, so that they and the kernel's counters are per game. Kept
            # confined engines last the games of one pairing instead.
            spec = self._spec(key)
            confined = bool(spec.sandbox or spec.limits)
            if seat in outcome.faulty or (confined and not self.settings.keep_confined):
                await self._close(key)
            elif confined:
                self._pairing[key] = pairing

    def _on_host(self, spec: GameSpec) -> GameSpec:
        """The game as this host plays it: with `scale_tc`, each seat's time control
        divided by this host's factor (from CPU time where the seat's clock charges it)."""
        speed = self.settings.speed
        if not self.settings.scale_tc or speed is None:
            return spec
        tc = tuple(
            tc.scaled(speed.under(clock is ClockMode.CPU))
            for tc, clock in zip(spec.tc, spec.clocks, strict=True)
        )
        return replace(spec, tc=(tc[0], tc[1]))

    async def _start(self, key: str) -> Engine:
        spec = self._spec(key)
        launched = trio.current_time()
        try:
            engine = await start_engine(spec, self.nursery, self.settings.deadlines)
        except EngineError:
            raise
        except Exception as exc:
            raise EngineError(spec.label, f"{type(exc).__name__}: {exc}") from exc
        self.engines[key] = engine
        base = self._base.get(key, key)
        self.emit(EngineStarted(base, trio.current_time() - launched))
        log.debug("started engine %s (pid %d)", base, engine.process.pid)
        self.on_engine(key, engine, True)
        if base not in self._seen:
            self._seen.add(base)
            self.emit(EngineSeen(base, engine.info))
        return engine

    async def _close(self, key: str) -> None:
        self._pairing.pop(key, None)
        engine = self.engines.pop(key, None)
        if key in self._filled:  # a later game at these values makes its spec again
            del self._filled[key], self._base[key]
        if engine is not None:
            self.on_engine(key, engine, False)
            await engine.aclose()

    async def check(
        self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
    ) -> Preflight:
        """The preflight (`arbiter.executors.preflight`) on engines this worker starts and
        keeps: an engine that passes is already warm for its first game here."""

        probing: set[str] = set()

        def fresh(key: str) -> bool:  # confined: a fresh process every game
            spec = self.settings.engines[key]
            return bool(spec.sandbox or spec.limits) and not self.settings.keep_confined

        @asynccontextmanager
        async def kept(key: str) -> AsyncIterator[Engine]:
            engine = await self._start(key)
            probing.add(key)
            try:
                yield engine
            finally:
                probing.discard(key)
                if fresh(key):
                    await self._close(key)
                # Within the budget as the check goes, not only at its end: a pool of
                # many engines never runs all at once here.
                await self._make_room([], probing, _NONE)

        checked = await preflight(self.settings, keys, variant, tcs, opener=kept)
        for key in list(self.engines):
            if key in checked.failures or checked.problem or fresh(key):
                # The run stops, this engine will not play here, or it is confined and
                # plays every game in a fresh process.
                await self._close(key)
        return checked

    def _memory_mb(self, key: str) -> int:
        limits = self._spec(key).limits
        return (limits.memory_mb or 0) if limits is not None else 0

    async def _make_room(self, keys: list[str], keep: Collection[str], demand: Demand) -> None:
        """Close engines until `keys` fit the budget, the least wanted by the pending games
        first (the least recently used among equals); the game's own engines stay."""
        budget = self.settings.warm
        need = sum(self._memory_mb(k) for k in keys)
        while True:
            used = sum(self._memory_mb(k) for k in self.engines)
            # Memory is held too when nothing new is started (after the check, which
            # keeps what it started): what runs must fit, not only what starts.
            if (
                len(self.engines) + len(keys) <= max(2, budget.engines)
                and used + need <= budget.memory_mb
            ):
                return
            spare = [k for k in self.engines if k not in keep]  # least recently used first
            if not spare:
                return  # a game's two engines always fit
            order = {k: i for i, k in enumerate(spare)}
            await self._close(min(spare, key=lambda k: (demand.get(k, 0), order[k])))

    async def aclose(self) -> None:
        for key in list(self.engines):
            await self._close(key)
        if self.judge is not None:
            await self.judge.aclose()

    def _start_failure(self, job: GameJob, seat: int, exc: EngineError) -> GameRecord:
        a, b = (self._base.get(key, key) for key in job.engines)
        names = self.settings.seat_names((a, b))
        label = names[seat]
        evidence = Evidence(
            engine=label,
            detail=exc.detail,
            returncode=getattr(exc, "returncode", None),
            stderr_tail=getattr(exc, "stderr_tail", ""),
            stage=Stage.START,
        )
        return void_record(
            job.spec,
            names,
            Termination.SETUP,
            f"{label} failed to start: {exc.detail}",
            evidence,
            where=machine(),
        )
