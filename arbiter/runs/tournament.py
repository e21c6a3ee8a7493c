"""Tournaments: the TOML definition, its conditions of play, and a run on the store.

A tournament file holds a `[tournament]` table and `[[engine]]` tables (plus, optionally,
engines taken by key from an engines file). Every error names the file and the key and
says how to fix it. An engine's `name` is its identity: the store, the standings and the
ratings are keyed by it.

Conditions of play (format, time control, board, pie rule, openings, seed, and each
engine's command, folder, environment and time control) are stored with the first run;
a later run that changes one is refused unless it starts a fresh store, because its games
would not be comparable with those already played. Adding engines or rounds is not a
change of conditions: only the new games are played. A Swiss tournament pairs each round
from the results of its field, so its engines are fixed once it has started; raising
its rounds plays the new ones.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arbiter.engines.config import (
    EnginesFile,
    KnownEngines,
    check_confinement,
    check_name,
    engine_definition,
    program_hashes,
    read_small,
    read_toml,
    unread_engines_file,
)
from arbiter.engines.process import EngineSpec
from arbiter.engines.sandbox import Limits, parse_limits
from arbiter.errors import ConfigError
from arbiter.executors.jobs import WARM_ENGINES, WARM_MEMORY_MB, ExecutorSettings, WarmBudget
from arbiter.games.referee import RefereeConfig
from arbiter.results.records import GameRecord
from arbiter.results.sprt import PairTally, Sprt, Verdict, expected_pairs, judge, test_from
from arbiter.results.store import EngineEntry, Store, resolved
from arbiter.results.transcripts import TranscriptFolder
from arbiter.rules import Variant
from arbiter.rules.clock import DEFAULT_TC, TC_HELP, TimeControl
from arbiter.runs.run import Plan, Sink, Stored, hidden_files, refuse_changes, refuse_rebuilds
from arbiter.runs.schedule import (
    DEFAULT_RANDOM_OPENINGS,
    Fixed,
    Format,
    Openings,
    Schedule,
    ScheduledGame,
    pairings,
    parse_openings,
    tournament_games,
    tournament_size,
)
from arbiter.text import toml_value

if TYPE_CHECKING:  # the Swiss and adaptive formats, with networkx and numpy, load when used
    from arbiter.runs.adaptive import StopRule

_TOURNAMENT_KEYS = {
    "name": str,
    "format": str,
    "challenger": str,
    "rounds": int,
    "concurrency": int,
    "tc": str,
    "size": int,
    "islands": int,
    "pie": bool,
    "openings": str,
    "random_openings": int,
    "seed": int,
    "output": str,
    "engines_file": str,
    "engines": list,
    "margin": float,
    "sandbox": bool,
    "limits": dict,
    "dask": str,
    "warm_engines": int,
    "warm_memory_mb": int,
    "confine_per": str,
    "on_start_failure": str,
    "sprt": dict,
    "games": int,
    "until": str,
    "confidence": float,
    "min_games": int,
}
_ADAPTIVE_KEYS = ("games", "until", "confidence", "min_games")
_TOP_KEYS = {"tournament", "engine"}
MAX_WARM = 1024  # engines one slot may keep running
MAX_CONCURRENCY = 256  # games at once; each is a worker process with two engines
MAX_ROUNDS = 1_000_000
MAX_GAMES = 10_000_000  # per tournament file: resuming counts its schedule once
_EXAMPLE = 'e.g. [[engine]] with name = "mine" and command = ["python3", "my_bot.py"]'


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

    def conditions(self) -> dict[str, Any]:
        """What makes games comparable; a started store refuses changes to any of it."""
        return {
            "format": self.format.value,
            "challenger": self.challenger,
            "tc": str(self.tc),
            "size": self.variant.size,
            "islands": self.variant.islands,
            "pie": self.variant.pie,
            **self.openings.conditions(self.variant),
            "seed": self.seed,
            # Limits count per game or per pairing: games played one way are not
            # comparable with games played the other.
            "confine_per": self.confine_per,
            "sprt": None if self.sprt is None else self.sprt.conditions(),
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
        return Fixed(self._rest(store))

    def _rest(self, store: Store) -> Iterator[ScheduledGame]:
        """The games of a fixed schedule not stored, reading the store at the first game
        asked for (status builds the schedule and asks for none)."""
        yield from self.games(skip=store.done_ids())

    def stored(self, store: Store, schedule: object = None) -> int:
        """How many games of this schedule are stored (`schedule`: as `schedule(store)`
        made it before any game of this run)."""
        schedule = self.schedule(store) if schedule is None else schedule
        if self.format in (Format.SWISS, Format.ADAPTIVE):
            return int(schedule.done())  # type: ignore[attr-defined]
        return sum(there for _, there in store.stored_of(self.ids(), str))

    def left(self, schedule: object, done: int) -> int:
        """Games still to play: none once an adaptive run's stop rule has settled."""
        if self.format is Format.ADAPTIVE and schedule.over:  # type: ignore[attr-defined]
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
        return []

    def summary_json(self, schedule: object) -> dict[str, Any]:
        if self.format is Format.SWISS:
            from arbiter.runs.swiss import swiss_json

            return {"swiss": swiss_json(schedule)}  # type: ignore[arg-type]
        if self.format is Format.ADAPTIVE:
            from arbiter.runs.adaptive import adaptive_json

            return {"adaptive": adaptive_json(schedule)}  # type: ignore[arg-type]
        return {}

    @property
    def total(self) -> int:
        if self.format is Format.ADAPTIVE:
            return self.budget
        return tournament_size(len(self.engines), self.format, self.rounds)

    def plan(self, store: Store, transcripts: TranscriptFolder | None = None) -> Plan:
        """What is left of the schedule, as a run plays it, recording into `store` (and
        each game's full transcript into `transcripts`)."""
        schedule = self.schedule(store)
        # Sandboxed engines must not even read the results they are judged by: the
        # store, its kept copies (--fresh, a lost store) and the tournament file.
        hidden = (*hidden_files(self.output), str(self.path))
        specs = {k: replace(s, hidden=hidden) if s.sandbox else s for k, s in self.engines.items()}
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
                referee=RefereeConfig(margin=self.margin),
                warm=self.warm,
                keep_confined=self.confine_per == "pairing",
            ),
            games=schedule,
            total=self.total,
            left=left,
            variant=self.variant,
            tc=self.tc,
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


def _no_nul(value: Any, where: str) -> None:
    """A NUL cannot be in a path, an argument or a name: say where it is."""
    if isinstance(value, str):
        if "\0" in value:
            raise ConfigError(
                "holds a NUL character", where=where, hint="remove the \\u0000 escape"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key, where)
            _no_nul(item, f"{where}: {key}" if ": " not in where else f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_nul(item, f"{where}[{index}]")


def typed_key(
    table: Mapping[str, Any], key: str, where: str, default: Any, keys: Mapping[str, type]
) -> Any:
    """`table[key]` (or `default`), which must be of the type `keys` gives it: a
    ConfigError naming `where.key` otherwise (an integer passes as a float, a boolean
    never as an integer)."""
    value = table.get(key, default)
    expected = keys[key]
    if value is default:
        return value
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise ConfigError(
            f"must be {'a' if expected is not int else 'an'} {_type_name(expected)},"
            f" not {toml_value(value)}",
            where=f"{where}.{key}",
        )
    return value


def _get(table: Mapping[str, Any], key: str, where: str, default: Any) -> Any:
    return typed_key(table, key, where, default, _TOURNAMENT_KEYS)


def _type_name(t: type) -> str:
    return {
        str: "string",
        int: "integer",
        bool: "boolean (true or false)",
        list: "list",
        float: "number",
        dict: "table",
    }[t]


def load_tournament(
    path: str | os.PathLike[str], *, engines_here: bool = True, store_folder: Path | None = None
) -> Tournament:
    """Read and check a tournament file; raises ConfigError naming the file and key.

    The engines' programs and folders are looked for on this machine only when they run
    here (`engines_here`) and the file names no Dask scheduler: on a cluster they run on
    the workers, where the preflight checks them; status and export start none.
    `store_folder` puts the store there instead of beside the file: an installed
    example's folder is the package's, not the user's.
    """
    file = Path(path)
    data = read_toml(file, "tournament file", "give the path of a tournament .toml file")
    _no_nul(data, str(file))
    here = file.resolve().parent
    where = f"{file}: tournament"
    unknown_top = set(data) - _TOP_KEYS
    if "arena" in data and "tournament" not in data:
        raise ConfigError(
            "an arena file, not a tournament file",
            where=str(file),
            hint=f"serve it with `arbiter arena serve {file}`; `ratings`,"
            " `report` and `tournament status` read its store",
        )
    if unknown_top:
        raise ConfigError(
            f"unknown table(s) or key(s) {', '.join(sorted(unknown_top))}",
            where=str(file),
            hint="a tournament file has [tournament] and [[engine]] tables",
        )
    table = data.get("tournament")
    if not isinstance(table, dict):
        raise ConfigError(
            "no [tournament] table",
            where=str(file),
            hint='start the file with [tournament] and name = "..."',
        )
    unknown = set(table) - set(_TOURNAMENT_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(sorted(unknown))}",
            where=where,
            hint=f"allowed keys: {', '.join(sorted(_TOURNAMENT_KEYS))}",
        )
    name = _get(table, "name", where, file.stem)
    check_name(name, f"{where}.name")
    try:
        fmt = Format(_get(table, "format", where, "round-robin"))
    except ValueError as exc:
        raise ConfigError(
            f"unknown format {toml_value(table.get('format'))}",
            where=f"{where}.format",
            hint='use "round-robin", "gauntlet", "swiss" or "adaptive"',
        ) from exc
    rounds = _get(table, "rounds", where, 1)
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ConfigError(f"must be between 1 and {MAX_ROUNDS}", where=f"{where}.rounds")
    concurrency = _get(table, "concurrency", where, 1)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ConfigError(f"must be between 1 and {MAX_CONCURRENCY}", where=f"{where}.concurrency")
    margin = float(_get(table, "margin", where, 0.1))
    if not 0 <= margin <= 60:
        raise ConfigError("must be between 0 and 60 seconds", where=f"{where}.margin")
    warm = WarmBudget(
        _get(table, "warm_engines", where, WARM_ENGINES),
        _get(table, "warm_memory_mb", where, WARM_MEMORY_MB),
    )
    if not 2 <= warm.engines <= MAX_WARM:
        raise ConfigError(
            f"must be between 2 and {MAX_WARM}",
            where=f"{where}.warm_engines",
            hint="a slot keeps at least the two engines of its game",
        )
    if not 1 <= warm.memory_mb <= 1 << 24:
        raise ConfigError("must be between 1 and 16777216 (16 TB)", where=f"{where}.warm_memory_mb")
    confine_per = _get(table, "confine_per", where, "game")
    if confine_per not in ("game", "pairing"):
        raise ConfigError(
            f"unknown value {toml_value(confine_per)}",
            where=f"{where}.confine_per",
            hint='use "game" (a fresh process every game, the default) or'
            ' "pairing" (kept for a pairing\'s games in a row)',
        )
    on_start_failure = _get(table, "on_start_failure", where, "stop")
    if on_start_failure not in ("stop", "leave-out"):
        raise ConfigError(
            f"unknown value {toml_value(on_start_failure)}",
            where=f"{where}.on_start_failure",
            hint='use "stop" (the run stops, the default) or "leave-out" (its'
            " games are void, the rest are played)",
        )
    sprt_table = _get(table, "sprt", where, None)
    sprt = None
    if sprt_table is not None:
        try:
            sprt = test_from(sprt_table)
        except ValueError as exc:
            raise ConfigError(
                str(exc),
                where=f"{where}.sprt",
                hint="e.g. sprt = { elo0 = 0, elo1 = 10, alpha = 0.05, beta = 0.05 }",
            ) from exc
        if fmt not in (Format.ROUND_ROBIN, Format.GAUNTLET):
            raise ConfigError(
                f"a {fmt.value} tournament has no fixed pairings to test",
                where=f"{where}.sprt",
                hint="sprt is for round-robin and gauntlet tournaments; remove it",
            )
    tc_text = _get(table, "tc", where, str(DEFAULT_TC))
    try:
        tc = TimeControl.parse(tc_text)
    except ConfigError as exc:
        raise exc.located(f"{where}.tc") from exc
    islands = _get(table, "islands", where, 8)
    size = _get(table, "size", where, 11)
    pie = _get(table, "pie", where, True)
    if islands not in (4, 8):
        raise ConfigError(
            f"{islands} islands is not a variant",
            where=f"{where}.islands",
            hint="8 for Atoll, 4 for Hex",
        )
    try:
        variant = Variant(islands, size, pie)
    except ValueError as exc:
        raise ConfigError(
            str(exc),
            where=f"{where}.size",
            hint="Atoll sizes: 7, 11, 15, 19, 23; Hex (islands = 4): 2-26",
        ) from exc
    seed = _get(table, "seed", where, 1)
    openings, openings_file = _openings(table, where, here, variant, seed)
    openings_default = "openings" not in table and "random_openings" not in table
    file_dask = _get(table, "dask", where, None)
    if file_dask is not None:
        from arbiter.executors.dask import check_address

        check_address(file_dask, f"{where}.dask")
    local = engines_here and file_dask is None
    engines, conditions = parse_engines(file, here, table, data.get("engine", []), where, local)
    if len(engines) < 2:
        raise ConfigError(
            f"needs at least two engines, has {len(engines)}", where=str(file), hint=_EXAMPLE
        )
    challenger = _get(table, "challenger", where, None)
    if challenger is not None and fmt is not Format.GAUNTLET:
        raise ConfigError(
            "only a gauntlet has a challenger",
            where=f"{where}.challenger",
            hint='set format = "gauntlet" or remove the key',
        )
    if fmt is Format.GAUNTLET:
        if challenger is None:
            challenger = next(iter(engines))
        elif challenger not in engines:
            raise ConfigError(
                f"no engine named {toml_value(challenger)}",
                where=f"{where}.challenger",
                hint=f"engines: {', '.join(engines)}",
            )
    if fmt is Format.SWISS:
        most = len(engines) - 1 + len(engines) % 2
        if rounds > most:
            raise ConfigError(
                f"a Swiss of {len(engines)} engines has at most {most} rounds, not {rounds}:"
                " two engines never meet twice",
                where=f"{where}.rounds",
                hint=f"set rounds = {most} or fewer, or play a round-robin",
            )
    if "output" not in table and (os.sep in name or name.startswith(".")):
        raise ConfigError(
            f"the name {toml_value(name)} cannot name the results file",
            where=f"{where}.name",
            hint='set output = "results.sqlite", or use a plain name',
        )
    output_value = _get(table, "output", where, f"{name}.sqlite")
    output = resolved((store_folder or here) / output_value, f"{where}.output")
    try:
        unusable = output.is_dir() or output == file.resolve() or not output_value.strip()
    except OSError as exc:  # a name too long
        raise ConfigError(
            f"{toml_value(output_value[:80])} cannot be the results store: {exc.strerror}",
            where=f"{where}.output",
        ) from exc
    if unusable:
        raise ConfigError(
            f"{toml_value(output_value)} cannot be the results store",
            where=f"{where}.output",
            hint='give a new file name, e.g. output = "results.sqlite"',
        )
    budget, rule, min_games = _adaptive(table, where, fmt, len(engines))
    total = budget if fmt is Format.ADAPTIVE else tournament_size(len(engines), fmt, rounds)
    if total > MAX_GAMES:
        raise ConfigError(
            f"{total} games is more than {MAX_GAMES}",
            where=f"{where}.rounds",
            hint="split it into several tournaments",
        )
    return Tournament(
        path=file,
        name=name,
        format=fmt,
        challenger=challenger,
        rounds=rounds,
        concurrency=concurrency,
        tc=tc,
        variant=variant,
        openings=openings,
        openings_file=openings_file,
        openings_default=openings_default,
        seed=seed,
        output=output,
        margin=margin,
        engines=engines,
        engine_conditions=conditions,
        dask=file_dask,
        warm=warm,
        confine_per=confine_per,
        leave_out=on_start_failure == "leave-out",
        sprt=sprt,
        budget=budget,
        rule=rule,
        min_games=min_games,
    )


def _adaptive(
    table: Mapping[str, Any], where: str, fmt: Format, engines: int
) -> tuple[int, StopRule | None, int]:
    """An adaptive run's budget, stop rule and warm-up; its keys only with its format."""
    if fmt is not Format.ADAPTIVE:
        extra = [key for key in _ADAPTIVE_KEYS if key in table]
        if extra:
            raise ConfigError(
                f"{extra[0]} is a key of adaptive runs only",
                where=f"{where}.{extra[0]}",
                hint='set format = "adaptive", or remove the key',
            )
        return 0, None, 4
    if "rounds" in table:
        raise ConfigError(
            "an adaptive run has a budget of games, not rounds",
            where=f"{where}.rounds",
            hint="set games = N (an even number)",
        )
    budget = _get(table, "games", where, None)
    if budget is None:
        raise ConfigError(
            "an adaptive run needs a budget of games",
            where=f"{where}.games",
            hint="e.g. games = 1000",
        )
    if not 2 <= budget <= MAX_GAMES or budget % 2:
        raise ConfigError(
            f"must be an even number between 2 and {MAX_GAMES}, not {budget}",
            where=f"{where}.games",
            hint="games come in seat-swapped pairs",
        )
    min_games = _get(table, "min_games", where, 4)
    if not 0 <= min_games <= 1000:
        raise ConfigError("must be between 0 and 1000", where=f"{where}.min_games")
    confidence = float(_get(table, "confidence", where, 0.95))
    until = _get(table, "until", where, None)
    if until is None:
        if "confidence" in table:
            raise ConfigError(
                "a confidence without a stop rule",
                where=f"{where}.confidence",
                hint='set until = "top:3" (or "order"), or remove the key',
            )
        return budget, None, min_games
    from arbiter.runs.adaptive import StopRule, parse_until

    try:
        top = parse_until(until)
    except ValueError as exc:
        raise ConfigError(
            str(exc),
            where=f"{where}.until",
            hint='use "top:K" (the first K places, in order) or "order" (the whole order)',
        ) from exc
    if top is not None and top >= engines:
        raise ConfigError(
            f"top:{top} of {engines} engines",
            where=f"{where}.until",
            hint=f'use at most top:{engines - 1}, or "order"',
        )
    if not 0.5 <= confidence < 1:
        raise ConfigError(
            f"must be at least 0.5 and below 1, not {confidence}",
            where=f"{where}.confidence",
            hint="e.g. confidence = 0.95",
        )
    return budget, StopRule(top, confidence), min_games


def _openings(
    table: Mapping[str, Any], where: str, here: Path, variant: Variant, seed: int
) -> tuple[Openings, str | None]:
    file_value = _get(table, "openings", where, None)
    # As a match: deterministic engines from the empty board would replay one game.
    default = 0 if file_value is not None else DEFAULT_RANDOM_OPENINGS
    plies = _get(table, "random_openings", where, default)
    if plies < 0:
        raise ConfigError("must not be negative", where=f"{where}.random_openings")
    if file_value is not None and plies:
        raise ConfigError(
            "openings and random_openings are both set", where=where, hint="choose one"
        )
    if file_value is None:
        if plies and Openings(random_plies=plies).random_stones(variant) >= variant.size:
            raise ConfigError(
                f"{plies} random plies is too many for size {variant.size}",
                where=f"{where}.random_openings",
            )
        return Openings(random_plies=plies, seed=seed), None
    return read_openings(
        here / file_value,
        variant,
        f"{where}.openings",
        "the path is relative to the tournament file",
    ), file_value


def read_openings(path: Path, variant: Variant, where: str, hint: str) -> Openings:
    """An openings file's lines for this variant, or a ConfigError naming the file (or
    its line) and saying how to write one."""
    try:
        text = read_small(path, "openings file")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read openings file {str(path)!r}: {exc}", where=where, hint=hint
        ) from exc
    try:
        lines = parse_openings(text, variant)
    except ValueError as exc:
        raise ConfigError(
            f"{exc}", where=str(path), hint=f"each line is a legal opening for {variant}"
        ) from exc
    if not lines:
        raise ConfigError(
            "the openings file holds no openings",
            where=str(path),
            hint="one opening a line: cell names and swap, # comments",
        )
    return Openings(lines=tuple(lines))


def parse_engines(
    file: Path, here: Path, table: Mapping[str, Any], listed: Any, where: str, local: bool = True
) -> tuple[dict[str, EngineSpec], dict[str, dict[str, Any]]]:
    """The engines a file defines: by key (`engines`, from its `engines_file` or the
    bundled bots) and in `[[engine]]` tables, with the table's `sandbox` and `limits` as
    defaults; and each one's conditions of play, as the store keeps them."""
    engines: dict[str, EngineSpec] = {}
    conditions: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}

    def add(spec: EngineSpec, raw: Mapping[str, Any], source: str) -> None:
        name = spec.name
        assert name is not None
        if name in engines:
            raise ConfigError(
                f"duplicate engine name {toml_value(name)} (also {sources[name]})",
                where=source,
                hint="engine names are identities: make them unique",
            )
        sources[name] = source
        # The tournament's sandbox and limits are defaults: an engine's own win.
        spec = replace(
            spec, sandbox=raw.get("sandbox", confined), limits=spec.limits.merged(limits)
        )
        if local:
            check_confinement(spec, source)
        engines[name] = spec
        conditions[name] = {
            "command": raw.get("command"),
            "cwd": raw.get("cwd", "."),
            "env": raw.get("env", {}),
            "tc": str(spec.tc) if spec.tc else None,
            "options": list(spec.options),
            "sandbox": spec.sandbox,
            "limits": spec.limits.as_dict(),
            "read": list(spec.read),
            # What it plays and how it is spoken to (stores before this key lack it).
            "dialect": {key: raw.get(key) for key in ("islands", "sizes", "swap", "time")},
        }

    confined = _get(table, "sandbox", where, False)
    limits_table = _get(table, "limits", where, None)
    limits = Limits() if limits_table is None else parse_limits(limits_table, f"{where}.limits")
    keys = _get(table, "engines", where, None)
    engines_file = _get(table, "engines_file", where, None)
    if keys is not None:
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ConfigError("must be a list of engine keys (strings)", where=f"{where}.engines")
        # A listed name is the engines file's, then an [[engine]] entry's, then a bundled
        # bot's: what the user defined wins over what comes with arbiter.
        user = None
        if engines_file is not None:
            origin = f"{where}.engines_file (relative to the tournament file)"
            user = EnginesFile(here / engines_file, origin=origin)
        known = KnownEngines(user)
        entries = listed if isinstance(listed, list) else []
        own = {e["name"] for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)}
        for key in keys:
            if key in own and (user is None or key not in user):
                continue  # its [[engine]] entry, below
            book = known.book(key)
            if book is None:
                where_from = (
                    f"{engines_file} or the bundled bots"
                    if engines_file
                    else "the bundled bots (there is no engines_file)"
                )
                unread = unread_engines_file(here, user)
                hint = f"known: {', '.join(known)}; or define it in an [[engine]] table"
                if unread is not None:
                    hint = f'{unread} is not read: set engines_file = "{unread.name}"'
                raise ConfigError(
                    f"no engine {toml_value(key)} in {where_from}",
                    where=f"{where}.engines",
                    hint=hint,
                )
            add(book.spec(key, local=local), book.tables[key], book.where(key))
    if not isinstance(listed, list):
        raise ConfigError(
            "engine must be an array of tables",
            where=str(file),
            hint="write each engine as [[engine]]",
        )
    for number, entry in enumerate(listed, 1):
        label = entry.get("name") if isinstance(entry, dict) else None
        source = f"{file}: engine " + (repr(label) if isinstance(label, str) else f"#{number}")
        spec = engine_definition(entry, where=source, here=here, local=local)
        add(spec, entry, source)
    return engines, conditions


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
        refuse_changes(stored, t.conditions(), f"{t.path}: tournament.".__add__, t.output.name, fix)
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


__all__ = [
    "TC_HELP",
    "Tournament",
    "check_conditions",
    "load_tournament",
    "read_openings",
    "stored_openings",
]
