"""A tournament as a run plays it: its conditions of play, its schedule and plan, the
sequential tests of its pairings, and the check of its conditions against a started store.

`arbiter.runs.tournament` reads a tournament file into a `Tournament`; this module is what
is done with one. Conditions of play (format, time control, board, pie rule, openings,
seed, and each engine's command, folder, environment and time control) are stored with
the first run; a later run that changes one is refused unless it starts a fresh store,
because its games would not be comparable with those already played. Adding engines or
rounds is not a change of conditions: only the new games are played. A Swiss tournament
pairs each round from the results of its field, so its engines are fixed once it has
started; raising its rounds plays the new ones.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arbiter.engines.config import program_hashes
from arbiter.engines.process import EngineSpec
from arbiter.errors import ConfigError
from arbiter.executors.jobs import ExecutorSettings, WarmBudget
from arbiter.games.adjudication import Adjudication, stored_adjudication
from arbiter.games.referee import RefereeConfig
from arbiter.games.solver import SolverSettings
from arbiter.results.pairs import PairTally
from arbiter.results.records import GameRecord
from arbiter.results.sprt import Sprt, Verdict, expected_pairs, judge
from arbiter.results.store import EngineEntry, Store
from arbiter.results.transcripts import TranscriptFolder
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl
from arbiter.runs.run import Plan, Sink, Stored, hidden_files, refuse_changes, refuse_rebuilds
from arbiter.runs.schedule import (
    DEFAULT_RANDOM_OPENINGS,
    Fixed,
    Format,
    Openings,
    Schedule,
    ScheduledGame,
    pairings,
    tournament_games,
    tournament_size,
)

if TYPE_CHECKING:  # the Swiss and adaptive formats, with networkx and numpy, load when used
    from arbiter.runs.adaptive import StopRule
    from arbiter.runs.tune import TuneSettings


@dataclass(frozen=True)
class Tournament:
    path: Path
    name: str
    format: Format
    challenger: str | None
    rounds: int
    concurrency: int
    tc: TimeControl
    variant: Variant
    openings: Openings
    openings_file: str | None
    seed: int
    output: Path
    margin: float
    engines: dict[str, EngineSpec]  # by name (identity), in file order
    engine_conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    dask: str | None = None  # a Dask scheduler's address: play the games on its workers
    warm: WarmBudget = field(default_factory=WarmBudget)
    confine_per: str = "game"  # a confined engine is a fresh process per game or pairing
    leave_out: bool = False  # an engine that cannot start is left out, not the run stopped
    sprt: Sprt | None = None  # a sequential test on every pairing: `rounds` is then a cap
    budget: int = 0  # an adaptive run's games
    rule: StopRule | None = None  # an adaptive run's stop rule
    min_games: int = 4  # an adaptive run's games per engine before it adapts
    # The file sets neither openings nor random_openings: the default (one random stone
    # per pair) applies, unless a store started before that default says otherwise.
    openings_default: bool = False
    adjudicate: Adjudication = Adjudication.OFF  # whether proven games end early
    solver: SolverSettings | None = None  # the outside judge asked who wins, if any
    tune: TuneSettings | None = None  # an SPSA run's [tune]
    # A tuned engine's command with its placeholders, by engine key (`engines` holds it
    # filled with the start values).
    templates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    clock: ClockMode = ClockMode.WALL  # what clocks charge, unless an engine says
    affinity: bool = False  # each slot's engines on cores of their own
    scale_tc: bool = False  # time controls divided by this host's speed factor
    min_speed: float | None = None  # no run on a host slower than this
    scaled_by: float | None = None  # the host's factor the time controls were divided by
    file_tc: TimeControl | None = None  # the file's time control, before scaling

    def calibrated(self) -> bool:
        """Whether a run measures this host's speed first (`scale_tc`, `min_speed`)."""
        return self.scale_tc or self.min_speed is not None

    def on_host(self, factor: float) -> Tournament:
        """The tournament as a host of speed `factor` plays it: refused below
        `min_speed`; with `scale_tc`, every time control divided by the factor (the
        conditions keep the file's: games on every host are played under one control,
        scaled to each host)."""
        if self.min_speed is not None and factor < self.min_speed:
            raise ConfigError(
                f"this host's speed factor is {factor:.2f}, below min_speed = {self.min_speed:g}",
                where=f"{self.path}: tournament.min_speed",
                hint="run it on a faster or less loaded host (`arbiter calibrate` measures"
                " one), or lower min_speed",
            )
        if not self.scale_tc:
            return self
        engines = {
            name: spec if spec.tc is None else replace(spec, tc=spec.tc.scaled(factor))
            for name, spec in self.engines.items()
        }
        return replace(
            self, tc=self.tc.scaled(factor), engines=engines, scaled_by=factor, file_tc=self.tc
        )

    def conditions(self) -> dict[str, Any]:
        """What makes games comparable; a started store refuses changes to any of it."""
        return {
            "format": self.format.value,
            "challenger": self.challenger,
            "tc": str(self.file_tc or self.tc),
            "clock": self.clock.value,
            "scale_tc": self.scale_tc,
            "size": self.variant.size,
            "islands": self.variant.islands,
            "pie": self.variant.pie,
            "adjudicate": self.adjudicate.value,
            "solver": None if self.solver is None else self.solver.conditions(),
            **self.openings.conditions(self.variant),
            "seed": self.seed,
            # Limits count per game or per pairing: games played one way are not
            # comparable with games played the other.
            "confine_per": self.confine_per,
            "sprt": None if self.sprt is None else self.sprt.conditions(),
            # The budget sets the gains of every iteration: a tune's games are
            # comparable only with the same one.
            **(
                {}
                if self.tune is None
                else {"tune": {**self.tune.conditions(), "games": self.budget}}
            ),
        }

    def sprt_warning(self) -> str | None:
        """A warning when `rounds` caps every pairing's test below the pairs it is
        expected to need (`expected_pairs`): the run would end with most pairings
        undecided and nothing said until then."""
        if self.sprt is None:
            return None
        needed = expected_pairs(self.sprt)
        if self.rounds >= needed:
            return None
        return (
            f"warning: {self.path}: tournament.rounds = {self.rounds} caps each pairing's"
            f" SPRT (elo0 = {self.sprt.elo0:g}, elo1 = {self.sprt.elo1:g}) below the about"
            f" {needed} pairs it is expected to need: most pairings will stop undecided;"
            f" raise rounds to {needed} or more, or test a wider elo0-elo1 gap"
        )

    def definition(self) -> dict[str, Any]:
        """A snapshot of the whole definition, stored with the results."""
        return {
            "name": self.name,
            "rounds": self.rounds,
            **self.conditions(),
            "on_start_failure": "leave-out" if self.leave_out else "stop",
            "openings_file": self.openings_file,
            "engines": {name: c for name, c in self.engine_conditions.items()},
            **(
                {
                    "games": self.budget,
                    "until": None if self.rule is None else str(self.rule),
                    "confidence": None if self.rule is None else self.rule.confidence,
                    "min_games": self.min_games,
                }
                if self.format is Format.ADAPTIVE
                else {"games": self.budget}
                if self.format is Format.SPSA
                else {}
            ),
        }

    def entries(self) -> dict[str, EngineEntry]:
        """The engines as the store first keeps them, each with the hashes of what it runs."""
        return {
            name: EngineEntry(self.engine_conditions[name], spec.argv, *program_hashes(spec))
            for name, spec in self.engines.items()
        }

    def games(self, skip: Container[str] = ()) -> Iterator[ScheduledGame]:
        """The games of a fixed schedule (round-robin, gauntlet), lazily."""
        return tournament_games(
            self.name,
            list(self.engines),
            self.format,
            self.rounds,
            self.variant,
            self.openings,
            challenger=self.challenger,
            seed=self.seed,
            skip=skip,
        )

    def ids(self) -> Iterator[str]:
        """Every game id of the schedule, without computing openings."""
        for game_id, _ in self.slots():
            yield game_id

    def schedule(self, store: Store) -> Schedule:
        """The games left to play, as a run reads them: a fixed schedule passes over the
        stored games; a Swiss one is rebuilt from their results."""
        if self.format is Format.SWISS:
            from arbiter.runs.swiss import SwissSchedule

            results = {row.game_id: row.winner_seat for row in store.results()}
            return SwissSchedule(
                self.name,
                self.engines,
                self.rounds,
                self.variant,
                self.openings,
                self.seed,
                results,
            )
        if self.format is Format.ADAPTIVE:
            from arbiter.runs.adaptive import AdaptiveSchedule

            return AdaptiveSchedule(
                self.name,
                self.engines,
                self.budget,
                self.variant,
                self.openings,
                self.seed,
                store.results(),
                self.rule,
                self.min_games,
            )
        if self.tune is not None:
            from arbiter.runs.tune import TuneSchedule

            return TuneSchedule(
                self.name,
                self.tune,
                self.budget,
                self.variant,
                self.openings,
                self.seed,
                store.results(),
            )
        return Fixed(self._rest(store))

    def _rest(self, store: Store) -> Iterator[ScheduledGame]:
        """The games of a fixed schedule not stored, reading the store at the first game
        asked for (status builds the schedule and asks for none)."""
        yield from self.games(skip=store.done_ids())

    def stored(self, store: Store, schedule: object = None) -> int:
        """How many games of this schedule are stored (`schedule`: as `schedule(store)`
        made it before any game of this run)."""
        schedule = self.schedule(store) if schedule is None else schedule
        if self.format in (Format.SWISS, Format.ADAPTIVE, Format.SPSA):
            return int(schedule.done())  # type: ignore[attr-defined]
        return sum(there for _, there in store.stored_of(self.ids(), str))

    def left(self, schedule: object, done: int) -> int:
        """Games still to play: none once an adaptive run's stop rule has settled."""
        if self.format in (Format.ADAPTIVE, Format.SPSA) and schedule.over:  # type: ignore[attr-defined]
            return 0
        return max(0, self.total - done)

    def summary(self, schedule: object) -> list[str]:
        """What a format shows beside the Elo table (a Swiss's points and tie-breaks, an
        adaptive run's budget and stop rule)."""
        if self.format is Format.SWISS:
            from arbiter.runs.swiss import swiss_table

            return [swiss_table(schedule)]  # type: ignore[arg-type]
        if self.format is Format.ADAPTIVE:
            from arbiter.runs.adaptive import adaptive_lines

            return adaptive_lines(schedule)  # type: ignore[arg-type]
        if self.format is Format.SPSA:
            from arbiter.runs.tune import tune_lines

            return tune_lines(schedule)  # type: ignore[arg-type]
        return []

    def summary_json(self, schedule: object) -> dict[str, Any]:
        if self.format is Format.SWISS:
            from arbiter.runs.swiss import swiss_json

            return {"swiss": swiss_json(schedule)}  # type: ignore[arg-type]
        if self.format is Format.ADAPTIVE:
            from arbiter.runs.adaptive import adaptive_json

            return {"adaptive": adaptive_json(schedule)}  # type: ignore[arg-type]
        if self.format is Format.SPSA:
            from arbiter.runs.tune import tune_json

            return {"tune": tune_json(schedule)}  # type: ignore[arg-type]
        return {}

    @property
    def total(self) -> int:
        if self.format is Format.ADAPTIVE:
            return self.budget
        if self.tune is not None:  # the tune's games, and its confirming test's at most
            from arbiter.runs.tune import confirm_pairs

            confirm = 2 * confirm_pairs(self.budget, self.tune.confirm)
            return self.budget - self.budget % self.tune.per_iteration + confirm
        return tournament_size(len(self.engines), self.format, self.rounds)

    def plan(self, store: Store, transcripts: TranscriptFolder | None = None) -> Plan:
        """What is left of the schedule, as a run plays it, recording into `store` (and
        each game's full transcript into `transcripts`)."""
        schedule = self.schedule(store)
        # Sandboxed engines must not even read the results they are judged by: the
        # store, its kept copies (--fresh, a lost store) and the tournament file.
        hidden = (*hidden_files(self.output), str(self.path))
        specs = {k: replace(s, hidden=hidden) if s.sandbox else s for k, s in self.engines.items()}
        solver = self.solver
        if solver is not None and solver.spec.sandbox:  # the solver, too, is an engine
            solver = replace(solver, spec=replace(solver.spec, hidden=hidden))
        sink = Stored(store, self.name, self.conditions(), self.definition(), self.entries())
        sinks: list[Sink] = [sink]
        left = self.left(schedule, self.stored(store, schedule))
        tests = self.tests(store)
        if tests is not None:
            sinks.append(tests)
            left = self.left_undecided(store, tests)
        return Plan(
            settings=ExecutorSettings(
                engines=specs,
                referee=RefereeConfig(margin=self.margin, adjudicate=self.adjudicate),
                warm=self.warm,
                keep_confined=self.confine_per == "pairing",
                templates=self.templates,
                scale_tc=self.scale_tc and self.scaled_by is None,
                solver=solver,
            ),
            games=schedule,
            total=self.total,
            left=left,
            variant=self.variant,
            tc=self.tc,
            affinity=self.affinity,
            sinks=sinks,
            concurrency=self.concurrency,
            leave_out=self.playable_without if self.leave_out else None,
            keep=None if tests is None else tests.keep,
            transcripts=transcripts,
        )

    def left_undecided(self, store: Store, tests: PairingTests) -> int:
        """Games still to play when pairings are tested: the schedule's not stored, but
        for those of pairings whose test has decided."""
        return sum(
            1
            for (_, engines), there in store.stored_of(self.slots(), lambda s: s[0])
            if not there and not tests.decided(engines)
        )

    def playable_without(self, engines: Collection[str]) -> bool:
        """Whether some pairing of the schedule is left once these engines sit out (a
        gauntlet whose challenger cannot start has none)."""
        out = set(engines)
        return any(
            not out & {a, b} for a, b in pairings(list(self.engines), self.format, self.challenger)
        )

    def slots(self) -> Iterator[tuple[str, tuple[str, str]]]:
        """Every game of the schedule as (id, engines), without computing openings."""
        for game in tournament_games(
            self.name,
            list(self.engines),
            self.format,
            self.rounds,
            self.variant,
            challenger=self.challenger,
        ):
            yield game.game_id, game.engines

    def tests(self, store: Store) -> PairingTests | None:
        """Each pairing's sequential test as its stored games leave it (None without one)."""
        if self.sprt is None:
            return None
        order = {
            frozenset(p): p for p in pairings(list(self.engines), self.format, self.challenger)
        }
        tests = PairingTests(self.sprt, order)
        for pair_key, seat1, seat2, winner_seat in store.stored_rows():
            if frozenset((seat1, seat2)) in order:
                winner, loser = (seat1, seat2)[:: 1 if winner_seat == 1 else -1]
                tests.count(pair_key, winner, loser)
        return tests


class PairingTests:
    """The sequential test of every pairing, as a run's sink: each rated game counts
    (whole pairs under the pair model), and a decided pairing plays no more games."""

    def __init__(self, test: Sprt, order: Mapping[frozenset[str], tuple[str, str]]) -> None:
        self.test = test
        self.order = order  # a pairing's engines, the one under test first
        self.tally = PairTally(lambda x, y: order[frozenset((x, y))])
        self._decided: set[frozenset[str]] = set()
        self._begun: set[str] = set()  # pairs with a game started in this run
        self._shown: dict[tuple[str, str], Verdict] = {}  # as the last progress block said

    def verdicts(self) -> list[tuple[tuple[str, str], Verdict]]:
        """Every pairing's test, in schedule order."""
        return [(pair, judge(self.test, *self.tally.counts(*pair))) for pair in self.order.values()]

    def progress(self, rounds: int) -> list[str]:
        """A progress block's lines: one summary line of the tests by state, then the
        tests that changed since the last block (an untouched one never shows). With
        many engines every pairing's line in every block would bury the few that moved.
        """
        verdicts = self.verdicts()
        states: dict[str, int] = {}
        for _, v in verdicts:
            states[v.state(rounds)] = states.get(v.state(rounds), 0) + 1
        counts = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        lines = [f"SPRT on {len(verdicts)} pairings: {counts}"]
        untouched = judge(self.test, [0, 0, 0], 0, 0)
        for (a, b), v in verdicts:
            if v != self._shown.get((a, b), untouched):
                lines.append(f"{a} vs {b}: {v.line(rounds)}")
                self._shown[a, b] = v
        return lines

    def keep(self, game: ScheduledGame) -> bool:
        """Whether to play a game about to start: a pair begun is played whole (a test
        counts whole pairs), a decided pairing no more."""
        if game.pair_key in self._begun:
            return True
        if self.decided(game.engines):
            return False
        self._begun.add(game.pair_key)
        return True

    def decided(self, engines: tuple[str, str]) -> bool:
        key = frozenset(engines)
        if key not in self._decided:
            verdict = judge(self.test, *self.tally.counts(*self.order[key]))
            if verdict.result == "inconclusive":
                return False
            self._decided.add(key)  # a decided test stays decided: no more games
        return True

    def begin(self, names: Mapping[str, str]) -> None:
        pass

    def count(self, pair_key: str, winner: str, loser: str) -> None:
        """Count a rated game, in the order games were stored. A decided test stays
        decided: the games of a pair that was still being played when it decided are
        rated like any other, but its test no longer counts them (they could undo it)."""
        if frozenset((winner, loser)) in self._decided:
            return
        self.tally.add(pair_key, winner, loser)
        self.decided((winner, loser))

    def write(self, game: ScheduledGame, record: GameRecord) -> None:
        if not record.void:
            winner = game.engines[0] if record.winner == record.seat1 else game.engines[1]
            loser = game.engines[1] if winner == game.engines[0] else game.engines[0]
            self.count(game.pair_key, winner, loser)

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        pass

    def engine_started(self, name: str, seconds: float) -> None:
        pass


def _same_field(t: Tournament, started: set[str]) -> None:
    """A Swiss pairs every round from the results of the field it started with: an
    engine added or removed would change the pairings of rounds already played."""
    added, removed = sorted(set(t.engines) - started), sorted(started - set(t.engines))
    if not (added or removed):
        return
    change = "; ".join(
        f"{what} {', '.join(names)}"
        for what, names in (("added", added), ("removed", removed))
        if names
    )
    raise ConfigError(
        f"the engines changed since the store {t.output.name} was started ({change}): a"
        " Swiss pairs each round from the results of the engines it started with",
        where=f"{t.path}: engine",
        hint="restore the engines, or use --fresh to start a new"
        " store (the old one is kept under a dated name)",
    )


def stored_openings(t: Tournament, store: Store) -> tuple[Tournament, str | None]:
    """The tournament as its store was started, where the file leaves openings unsaid.

    A file without `openings` or `random_openings` played every game from the empty
    board before the default became one random stone per pair. Such a store resumes as
    it was started (its games stay comparable: no game of one kind is rated with games
    of the other), with a note saying so and how to get the new default; refusing it
    would make a file that did not change unusable. A new store gets the default.
    """
    stored = store.conditions()
    if not t.openings_default or stored is None:
        return t, None
    if stored.get("openings") or stored.get("random_openings"):
        return t, None
    note = (
        f"Note: the store {t.output.name} was started when a file without random_openings"
        " played every game from the empty board; its games go on doing so. For a random"
        f" stone per pair, set random_openings = {DEFAULT_RANDOM_OPENINGS} in {t.path}"
        " and use --fresh (the old store is kept under a dated name)."
    )
    return replace(t, openings=Openings(seed=t.seed)), note


def check_conditions(t: Tournament, store: Store, rebuilt: Iterable[str] = ()) -> None:
    """Refuse a run whose conditions differ from the store's, naming the first change.

    An engine's program is part of its identity: a new build at the same path would
    otherwise be rated together with the old one's games. `rebuilt` names engines whose
    new build the operator accepts as the same engine (the store records it).
    """
    stored = store.conditions()
    fix = (
        "use --fresh to start a new store (the old one is kept under a dated name),"
        " or restore the old value"
    )
    if stored is not None:
        if (
            stored.get("pie")
            and "swap_decision" not in stored
            and (stored.get("random_openings") or 0) > 1
        ):
            raise ConfigError(
                f"the store {t.output} was started when a random opening of"
                f" {stored['random_openings']} plies played move 2 at random; under the pie"
                " rule that move is now the swap decision of the engine on move, and games"
                " of the two kinds are not comparable",
                where=f"{t.path}: tournament.random_openings",
                hint="use --fresh to start a new store (the old one is kept under a dated name)",
            )
        if store.meta("tournament") != t.name:
            raise ConfigError(
                f"the store {t.output} holds tournament {store.meta('tournament')!r},"
                f" not {t.name!r}",
                where=f"{t.path}: tournament.name",
                hint=fix,
            )
        refuse_changes(
            stored_adjudication(stored),
            t.conditions(),
            f"{t.path}: tournament.".__add__,
            t.output.name,
            fix,
        )
        if t.format is Format.SWISS:
            _same_field(t, set(store.engine_definitions()))
    known = store.engine_definitions()
    for name, conditions in t.engine_conditions.items():
        if name in known:
            prefix = f"{t.path}: engine {name!r}."
            refuse_changes(known[name], conditions, prefix.__add__, t.output.name, fix)
    refuse_rebuilds(
        store, t.engines, rebuilt, lambda name: f"{t.path}: engine {name!r}", "tournament"
    )
