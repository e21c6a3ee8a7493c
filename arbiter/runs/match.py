"""A match: N games between two engines, played as seat-swapped pairs.

A match is a two-engine schedule (as fastchess plays one: a two-engine round robin): this
module only builds its plan (`Match.plan`), which `arbiter.runs.run` plays on any
executor, and collects its score. Given a store, a match resumes as a tournament does:
the games stored are not played again, and a run whose conditions differ from those
the store was started with is refused.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arbiter.engines.config import program_hashes
from arbiter.engines.process import Deadlines, EngineSpec
from arbiter.errors import ConfigError
from arbiter.executors.jobs import ExecutorSettings, display_names
from arbiter.games.adjudication import stored_adjudication
from arbiter.games.referee import RefereeConfig
from arbiter.results.records import GameRecord, RecordWriter
from arbiter.results.score import KEYS, MatchResult
from arbiter.results.sprt import Sprt
from arbiter.results.store import EngineEntry, Store
from arbiter.results.transcripts import TranscriptFolder
from arbiter.rules import Variant
from arbiter.rules.clock import DEFAULT_TC, ClockMode, TimeControl
from arbiter.runs.driver import Reporter, RunOutcome, Sink, VoidPolicy
from arbiter.runs.run import (
    Plan,
    Records,
    Stored,
    Unheard,
    hidden_files,
    open_executor,
    refuse_changes,
    refuse_rebuilds,
    run,
    time_controls,
)
from arbiter.runs.schedule import (
    DEFAULT_RANDOM_OPENINGS,
    Openings,
    match_game_number,
    match_games,
)

__all__ = ["Match", "MatchConfig", "MatchResult", "StoredMatch"]

# Where a match's conditions come from on the command line, for the refusal's message.
_OPTIONS = {
    "size": "--size",
    "islands": "--islands",
    "pie": "--pie/--no-pie",
    "adjudicate": "--adjudicate",
    "seed": "--seed",
    "openings": "--openings",
    "random_openings": "--random-openings",
    "swap_decision": "--pie/--no-pie",
}
# A match varies its games unless told otherwise: two deterministic engines would
# otherwise replay one pair of games. One random stone leaves the swap to the engine.
MATCH_OPENINGS = Openings(random_plies=DEFAULT_RANDOM_OPENINGS)


def _engine_option(number: int, given: str, key: str) -> str:
    return f"ENGINE{number} {given!r}: {f'--{key}' if key in ('tc', 'clock') else key}"


FRESH_HINT = (
    "use --fresh to start a new store (the old one is kept under a dated name),"
    " or give the match the store was started with"
)


@dataclass(frozen=True)
class MatchConfig:
    games: int = 2
    variant: Variant = field(default_factory=Variant)
    # One per engine, winning over an engine's own; None: each engine's own, else the
    # default (`Plan.tcs` makes that fallback).
    tc: tuple[TimeControl, TimeControl] | None = None
    concurrency: int = 1
    seed: int | None = None
    openings: Openings = MATCH_OPENINGS
    referee: RefereeConfig = field(default_factory=RefereeConfig)
    deadlines: Deadlines = field(default_factory=Deadlines)
    max_attempts: int = 3  # per game, counting the first
    max_consecutive_voids: int = 6
    # With concurrency > 1, games run in worker processes (one trio loop and one pair of
    # engines each) so that the referee work itself uses every core.
    processes: bool = True


class Match:
    """One match's plan: a two-engine schedule, its sinks and its stop rule."""

    def __init__(
        self,
        specs: tuple[EngineSpec, EngineSpec],
        config: MatchConfig,
        *,
        records: RecordWriter | None = None,
        store: Store | None = None,
        match_id: str | None = None,
        sprt: Sprt | None = None,
        given: tuple[str, str] | None = None,
        keep_records: bool = True,
        rebuilt: tuple[str, ...] = (),
        transcripts: TranscriptFolder | None = None,
    ) -> None:
        tcs = config.tc
        self.specs = (
            specs if tcs is None else (replace(specs[0], tc=tcs[0]), replace(specs[1], tc=tcs[1]))
        )
        self.config = config
        self.records = records
        self.store = store
        self.rebuilt = rebuilt  # engines whose new build is accepted as the same engine
        self.transcripts = transcripts
        self.match_id = match_id or uuid.uuid4().hex[:8]
        names = display_names(specs, ("", ""))
        self.result = MatchResult(
            names=(names[0], names[1]),
            given=given or (names[0], names[1]),
            keep=keep_records,
            test=sprt,
        )

    # ------------------------------------------------------------------ the plan

    def conditions(self) -> dict[str, Any]:
        """What makes the games of a match comparable; a started store refuses changes."""
        v = self.config.variant
        return {
            "kind": "match",
            "size": v.size,
            "islands": v.islands,
            "pie": v.pie,
            "adjudicate": self.config.referee.adjudicate.value,
            "seed": self.config.seed,
            **self.config.openings.conditions(v),
        }

    @property
    def tcs(self) -> dict[str, TimeControl]:
        """Each engine's time control, as its games are played."""
        return time_controls(dict(zip(KEYS, self.specs, strict=True)), DEFAULT_TC)

    def engine_conditions(self, key: str) -> dict[str, Any]:
        """Engine 1's or engine 2's conditions of play, as the store keeps them."""
        spec = self.specs[KEYS.index(key)]
        d = spec.dialect
        return {
            "engine": KEYS.index(key) + 1,
            "name": spec.name,
            "command": list(spec.argv),
            "cwd": spec.cwd,
            "env": dict(spec.env or {}),
            "tc": str(self.tcs[key]),
            "clock": (spec.clock or ClockMode.WALL).value,
            "options": list(spec.options),
            "sandbox": spec.sandbox,
            "limits": spec.limits.as_dict(),
            "read": list(spec.read),
            "dialect": {
                "islands": None if d.islands is None else list(d.islands),
                "sizes": None if d.sizes is None else list(d.sizes),
                "swap": d.swap,
                "time": None if d.time is None else str(d.time),
            },
        }

    def plan(self) -> Plan:
        """The match as a run plays it (once): with a store, only the games it does not
        hold, and the score starts from those it does."""
        config = self.config
        specs = dict(zip(KEYS, self.specs, strict=True))
        sinks: list[Sink] = []
        done: set[str] = set()
        hidden: list[str] = []
        if self.store is not None:
            names = self._resume(self.store)
            if names is not None:
                specs = {k: replace(s, name=names[k]) for k, s in specs.items()}
            done = self.store.done_ids()
            entries = {
                k: EngineEntry(self.engine_conditions(k), s.argv, *program_hashes(s))
                for k, s in specs.items()
            }
            definition = {
                "name": self.match_id,
                "games": config.games,
                **self.conditions(),
                "engines": {k: self.engine_conditions(k) for k in KEYS},
            }
            sinks.append(Stored(self.store, self.match_id, self.conditions(), definition, entries))
            hidden += hidden_files(self.store.path)
        if self.records is not None:
            sinks.append(Records(self.records))
            hidden.append(str(self.records.path.resolve()))
        sinks.append(self.result)
        # Sandboxed engines must not read the results they are judged by.
        specs = {k: replace(s, hidden=tuple(hidden)) if s.sandbox else s for k, s in specs.items()}
        games = match_games(
            self.match_id, config.games, config.variant, self.openings(), seed=config.seed
        )
        left = config.games - sum(1 for game_id in done if self.scheduled(game_id))
        return Plan(
            settings=ExecutorSettings(
                engines=specs, referee=config.referee, deadlines=config.deadlines
            ),
            games=(game for game in games if game.game_id not in done),
            total=config.games,
            left=left,
            variant=config.variant,
            sinks=sinks,
            concurrency=config.concurrency,
            stop=self.result.decided,
            policy=VoidPolicy(config.max_attempts, config.max_consecutive_voids),
            transcripts=self.transcripts,
        )

    def openings(self) -> Openings:
        """The openings as drawn: from --seed where given (the same seed, the same
        openings), otherwise from the match's id, which its store keeps for a resume."""
        openings = self.config.openings
        if self.config.seed is not None:
            return replace(openings, seed=self.config.seed)
        digest = hashlib.sha256(self.match_id.encode()).digest()
        return replace(openings, seed=int.from_bytes(digest[:8], "big"))

    def scheduled(self, game_id: str) -> bool:
        """Whether a stored game is one of this match's `games` (ids carry the number)."""
        number = match_game_number(self.match_id, game_id)
        return number is not None and number <= self.config.games

    def _resume(self, store: Store) -> dict[str, str] | None:
        """Check a started store against this match and take over its id, its engines'
        names and its games so far; None if the store is new."""
        stored = store.conditions()
        if stored is None:
            if self.rebuilt:
                raise ConfigError(
                    "--rebuilt is given for a new store",
                    where="--rebuilt",
                    hint="leave it out: there is no earlier build to accept",
                )
            return None
        where = str(store.path)
        if stored.get("kind") != "match":
            raise ConfigError(
                f"the store holds tournament {store.meta('tournament')!r}, not a match",
                where=where,
                hint="give a new --store file, or"
                " run that tournament with 'arbiter tournament run'",
            )
        # A match stored before openings were kept played from the empty board.
        stored = {"openings": None, "random_openings": 0, **stored_adjudication(stored)}
        refuse_changes(
            stored, self.conditions(), lambda k: _OPTIONS.get(k, k), store.path.name, FRESH_HINT
        )
        by_position = {d.get("engine"): (name, d) for name, d in store.engine_definitions().items()}
        names: dict[str, str] = {}
        for number, key in enumerate(KEYS, 1):
            if number not in by_position:
                raise ConfigError(
                    f"the store has no engine {number} of a match", where=where, hint=FRESH_HINT
                )
            name, definition = by_position[number]
            given = self.result.given[number - 1]
            refuse_changes(
                definition,
                self.engine_conditions(key),
                functools.partial(_engine_option, number, given),
                store.path.name,
                FRESH_HINT,
            )
            names[key] = name
        specs = {names[k]: spec for k, spec in zip(KEYS, self.specs, strict=True)}
        engines = {
            names[k]: f"ENGINE{i} {self.result.given[i - 1]!r}" for i, k in enumerate(KEYS, 1)
        }
        refuse_rebuilds(store, specs, self.rebuilt, engines.__getitem__, "match")
        self.match_id = str(store.meta("tournament"))
        self.result.names = (names[KEYS[0]], names[KEYS[1]])
        for data, _ in store.records():
            record = GameRecord.from_json(data)
            if self.scheduled(record.game_id):
                self.result.add_stored(record)
        return names

    # ------------------------------------------------------------------ the run

    async def run(self, reporter: Reporter | None = None) -> MatchResult:
        """Play the match on this machine (the command line chooses its executor itself)."""
        plan = self.plan()
        executor = open_executor(plan, processes=self.config.processes)
        return self.finish(await run(plan, executor, reporter or Unheard()))

    def finish(self, outcome: RunOutcome) -> MatchResult:
        """The result, once the run is over: how it ended, and the test's last word."""
        result = self.result
        result.aborted, result.config_error = outcome.aborted, outcome.config_error
        result.unplayed = [game.number for game in outcome.unplayed]
        result.notes = list(outcome.notes)
        if result.test is not None:
            result.sprt = result.sprt_result()
        return result


@dataclass(frozen=True)
class StoredMatch:
    """A match as its store describes it (what `tournament status` shows of one)."""

    name: str  # the match's id
    total: int  # its games, as the last run was given them
    output: Path  # the store

    @classmethod
    def read(cls, store: Store) -> StoredMatch:
        conditions = store.conditions() or {}
        definition = store.definition() or {}
        games = definition.get("games")
        if conditions.get("kind") != "match" or type(games) is not int:
            raise ConfigError(
                "not the store of a match",
                where=str(store.path),
                hint="give a tournament's .toml file, or the --store file of an 'arbiter match'",
            )
        return cls(str(store.meta("tournament")), games, store.path)

    def stored(self, store: Store) -> int:
        """How many games of this match are stored."""
        return store.numbered_stored(f"{self.name}-", self.total)
