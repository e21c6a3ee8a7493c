"""A match: N games between two engines, played as seat-swapped pairs on K workers.

Each worker owns one process of each engine and reuses them game after game
(`clear_board` between games); an engine that faulted is restarted before its next
game. Void games are replayed up to a limit; a match in which games keep voiding stops
and says why instead of retrying forever.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from arbiter.clock import TimeControl
from arbiter.errors import EngineError
from arbiter.process import Deadlines, Engine, EngineSpec, start_engine
from arbiter.ratings import PairStats
from arbiter.records import Evidence, GameRecord, RecordWriter, Termination
from arbiter.referee import GameSpec, Referee, RefereeConfig, _now, unsupported_variant
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
    ) -> None:
        self.specs = specs
        self.config = config
        self.writer = writer
        self.on_start = on_start or (lambda *a: None)
        self.on_finish = on_finish or (lambda *a: None)
        self.match_id = uuid.uuid4().hex[:8]
        self.referee = Referee(config.referee)
        self.names: list[str] = [s.label for s in specs]
        self._attempts: Counter[int] = Counter()
        self._consecutive_voids = 0
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
        async with trio.open_nursery() as nursery:
            for _ in range(max(1, min(self.config.concurrency, self.config.games))):
                nursery.start_soon(self._worker, receive.clone())
            await self._done.wait()
            nursery.cancel_scope.cancel()
        return self.result

    def _settle(self, number: int, record: GameRecord) -> None:
        """Store a finished attempt; requeue a void game while attempts remain."""
        if self.writer is not None:
            self.writer.write(record)
        self.on_finish(number, record)
        if record.void:
            self.result.voids.append(record)
            self._consecutive_voids += 1
            self._attempts[number] += 1
            if self._consecutive_voids >= self.config.max_consecutive_voids:
                self.result.aborted = (
                    f"{self._consecutive_voids} games in a row were void; last: {record.reason}"
                )
                self._done.set()
                return
            if self._attempts[number] < self.config.max_attempts:
                self._queue.send_nowait(number)
                return
            self.result.unplayed.append(number)
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
                    failed = await self._ensure_engines(engines, nursery, spec, number)
                    if failed is not None:
                        self._settle(number, failed)
                        continue
                    seats = [engines[order[0]], engines[order[1]]]
                    assert seats[0] is not None and seats[1] is not None
                    self.on_start(number, self.config.games, seats[0].name, seats[1].name)
                    outcome = await self.referee.play(spec, [seats[0], seats[1]])
                    for seat in outcome.faulty:
                        engine = engines[order[seat]]
                        engines[order[seat]] = None
                        if engine is not None:
                            await engine.aclose()
                    self._settle(number, outcome.record)
            finally:
                for engine in engines:
                    if engine is not None:
                        await engine.aclose()

    async def _ensure_engines(
        self,
        engines: list[Engine | None],
        nursery: trio.Nursery,
        spec: GameSpec,
        number: int,
    ) -> GameRecord | None:
        """Start whichever engines this worker lacks; a failure becomes a void record."""
        for index in (0, 1):
            if engines[index] is not None:
                continue
            try:
                engines[index] = await start_engine(
                    self.specs[index], nursery, self.config.deadlines
                )
            except EngineError as exc:
                return self._start_failure(spec, number, index, exc)
        a, b = engines
        assert a is not None and b is not None
        self.names[:] = display_names(self.specs, (a.info.name, b.info.name))
        a.name, b.name = self.names
        a.session.name, b.session.name = self.names
        self.result.names = (self.names[0], self.names[1])
        for engine in (a, b):
            problem = unsupported_variant(engine, self.config.variant)
            if problem is not None:
                self.result.aborted = problem
                self.result.config_error = True
                self._done.set()
                await trio.sleep_forever()  # cancelled by run() now that the match is done
        return None

    def _start_failure(
        self, spec: GameSpec, number: int, index: int, exc: EngineError
    ) -> GameRecord:
        order = (0, 1) if number % 2 == 1 else (1, 0)
        label = self.names[index]
        return GameRecord(
            game_id=spec.game_id,
            variant={
                "size": spec.variant.size,
                "islands": spec.variant.islands,
                "pie": spec.variant.pie,
            },
            seat1=self.names[order[0]],
            seat2=self.names[order[1]],
            tc={"seat1": str(spec.tc[0]), "seat2": str(spec.tc[1])},
            started=_now(),
            finished=_now(),
            termination=Termination.SETUP,
            void=True,
            reason=f"{label} failed to start: {exc.detail}",
            evidence=Evidence(
                engine=label,
                detail=exc.detail,
                returncode=getattr(exc, "returncode", None),
                stderr_tail=getattr(exc, "stderr_tail", ""),
            ),
            seed=spec.seed,
        )
