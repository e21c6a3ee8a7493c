"""A match: N games between two engines, played as seat-swapped pairs on K slots.

A match is a two-engine schedule run by the same driver and executor as a tournament
(see `arbiter.runs.driver`); this module only says which games a match plays and collects its
results for the summary.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from arbiter.engines.process import Deadlines, EngineSpec
from arbiter.executors.jobs import ExecutorSettings, display_names
from arbiter.executors.local import LocalExecutor
from arbiter.executors.preflight import preflight
from arbiter.games.referee import GameSpec, RefereeConfig
from arbiter.results.ratings import PairStats, SprtResult, sprt
from arbiter.results.records import GameRecord, RecordWriter
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl
from arbiter.runs.driver import Driver, VoidPolicy
from arbiter.runs.schedule import ScheduledGame, match_games

StartHook = Callable[[int, int, str, str], None]
FinishHook = Callable[[int, GameRecord, str], None]  # game number, record, void-game note

__all__ = ["Match", "MatchConfig", "MatchResult", "display_names"]


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
    """What a match produced, counted by engine identity (index 0 or 1, as given).

    Counts only, so a match of any length runs in constant memory; the records
    themselves are kept in `records` and `voids` only when asked for (`keep_records`).
    """

    names: tuple[str, str]  # display names, fixed from the first answers
    given: tuple[str, str] = ("", "")  # the engines as given (engines-file key or command)
    wins: list[int] = field(default_factory=lambda: [0, 0])
    seat1: int = 0  # rated games won by seat 1
    ended: Counter[str] = field(default_factory=Counter)  # terminations of rated games
    void_count: int = 0
    records: list[GameRecord] = field(default_factory=list)  # rated games, in finish order
    voids: list[GameRecord] = field(default_factory=list)
    unplayed: list[int] = field(default_factory=list)  # game numbers given up on
    aborted: str = ""
    config_error: bool = False  # aborted because the engines cannot play this match
    sprt: SprtResult | None = None  # the test's state at the end, when one was run

    def stats(self) -> PairStats:
        return PairStats(self.wins[0], self.wins[1])

    def terminations(self) -> Counter[str]:
        return self.ended

    def sprt_result(self, test: tuple[float, float, float, float] | None) -> SprtResult:
        stats = self.stats()
        assert test is not None
        return sprt(stats.wins, stats.losses, *test)

    def seat1_wins(self) -> int:
        return self.seat1

    def add(self, engines: tuple[str, str], record: GameRecord, keep: bool) -> None:
        """Count a finished game; `engines` are the seats' engine indices ("0", "1")."""
        if record.void:
            self.void_count += 1
            if keep:
                self.voids.append(record)
            return
        seat = 0 if record.winner == record.seat1 else 1
        self.wins[int(engines[seat])] += 1
        self.seat1 += seat == 0
        self.ended[str(record.termination)] += 1
        if keep:
            self.records.append(record)


class Match:
    """Runs one match: a two-engine schedule on the local executor, records to the writer."""

    def __init__(
        self,
        specs: tuple[EngineSpec, EngineSpec],
        config: MatchConfig,
        *,
        writer: RecordWriter | None = None,
        on_start: StartHook | None = None,
        on_finish: FinishHook | None = None,
        match_id: str | None = None,
        sprt: tuple[float, float, float, float] | None = None,
        given: tuple[str, str] | None = None,
        keep_records: bool = True,
    ) -> None:
        self.specs = specs
        self.config = config
        self.writer = writer
        self.on_start = on_start or (lambda *a: None)
        self.on_finish = on_finish or (lambda *a: None)
        self.match_id = match_id or uuid.uuid4().hex[:8]
        self.sprt = sprt
        self.keep_records = keep_records
        names = display_names(specs, ("", ""))
        self.result = MatchResult(names=(names[0], names[1]), given=given or (names[0], names[1]))

    def game_spec(self, game: ScheduledGame) -> GameSpec:
        tc = self.config.tc
        return GameSpec(
            game_id=game.game_id,
            variant=self.config.variant,
            tc=(tc[int(game.engines[0])], tc[int(game.engines[1])]),
            opening=game.opening,
            seed=game.seed,
            pair=game.pair_key,
            commands=(self.specs[int(game.engines[0])].argv, self.specs[int(game.engines[1])].argv),
        )

    async def run(self) -> MatchResult:
        config = self.config
        settings = ExecutorSettings(
            engines={"0": self.specs[0], "1": self.specs[1]},
            referee=config.referee,
            deadlines=config.deadlines,
        )
        checked = await preflight(settings, ["0", "1"], config.variant,
                                  {"0": config.tc[0], "1": config.tc[1]})  # fmt: skip
        if checked.problem:
            self.result.aborted, self.result.config_error = checked.problem, checked.config_error
            return self.result
        # Names fixed once from the engines' first answers, so that every process (and
        # every record) names each engine the same way, however often it restarts.
        replies = [checked.info[k].name if k in checked.info else "" for k in ("0", "1")]
        names = display_names(self.specs, replies)
        named = {k: replace(self.specs[i], name=names[i]) for i, k in enumerate(("0", "1"))}
        settings = replace(settings, engines=named)
        self.result.names = (names[0], names[1])
        # Built from the named settings: a worker process that restarts an engine must
        # not name it from that process's own answer.
        executor = LocalExecutor(
            settings, min(config.concurrency, config.games), processes=config.processes
        )
        driver = Driver(
            match_games(self.match_id, config.games, config.variant, seed=config.seed),
            self.game_spec,
            executor,
            self if self.writer is not None else None,
            policy=VoidPolicy(config.max_attempts, config.max_consecutive_voids),
            on_start=self._started,
            on_finish=self._finished,
            stop=self._decided if self.sprt is not None else None,
        )
        outcome = await driver.run()
        self.result.aborted = outcome.aborted
        self.result.config_error = outcome.config_error
        self.result.unplayed = [game.number for game in outcome.unplayed]
        if self.sprt is not None:
            self.result.sprt = self.result.sprt_result(self.sprt)
        return self.result

    def _decided(self) -> bool:
        """The SPRT, after each rated game: stop once it accepts either hypothesis."""
        return self.result.sprt_result(self.sprt).result != "inconclusive"

    def write(self, game: ScheduledGame, record: GameRecord) -> None:
        assert self.writer is not None
        self.writer.write(record)

    def _started(self, game: ScheduledGame, seat1: str, seat2: str) -> None:
        self.on_start(game.number, self.config.games, seat1, seat2)

    def _finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        self.result.add(game.engines, record, self.keep_records)
        self.on_finish(game.number, record, note)


