"""The tournament file: its keys, declared once, and the loader that reads it.

A tournament file holds a `[tournament]` table and `[[engine]]` tables (plus, optionally,
engines taken by key from an engines file). Every error names the file and the key and
says how to fix it. An engine's `name` is its identity: the store, the standings and the
ratings are keyed by it. What a `Tournament` does once read (its schedule, its plan, its
conditions against a started store) is in `arbiter.runs.tournament_run`; its names are
importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arbiter.definitions import Key, Keys, read_small, read_toml
from arbiter.engines.config import (
    EnginesFile,
    KnownEngines,
    check_confinement,
    check_name,
    engine_definition,
    unread_engines_file,
)
from arbiter.engines.params import placeholders
from arbiter.engines.process import EngineSpec, with_clock
from arbiter.engines.sandbox import Limits, parse_limits
from arbiter.errors import ConfigError
from arbiter.executors.jobs import WARM_ENGINES, WARM_MEMORY_MB, WarmBudget
from arbiter.games.adjudication import Adjudication, adjudicate_key
from arbiter.games.solver import load_solver, solver_keys
from arbiter.results.sprt import test_from
from arbiter.results.store import resolved
from arbiter.rules import Variant
from arbiter.rules.clock import DEFAULT_TC, TC_HELP, ClockMode, TimeControl
from arbiter.runs.schedule import (
    DEFAULT_RANDOM_OPENINGS,
    Format,
    Openings,
    parse_openings,
    tournament_size,
)
from arbiter.runs.tournament_run import (
    PairingTests,
    Tournament,
    check_conditions,
    stored_openings,
)
from arbiter.text import toml_value

if TYPE_CHECKING:  # the adaptive format, with numpy, loads when used
    from arbiter.results.sprt import Sprt
    from arbiter.runs.adaptive import StopRule
    from arbiter.runs.tune import Param, TuneSettings

MAX_WARM = 1024  # engines one slot may keep running
MAX_CONCURRENCY = 256  # games at once; each is a worker process with two engines
MAX_ROUNDS = 1_000_000
MAX_GAMES = 10_000_000  # per tournament file: resuming counts its schedule once
_EXAMPLE = 'e.g. [[engine]] with name = "mine" and command = ["python3", "my_bot.py"]'
_GUIDE = "../guide"  # the reference page's links, relative to docs/reference/
_SIZES = "Atoll sizes: 7, 11, 15, 19, 23; Hex (islands = 4): 2-26"

# Where a file's engines come from: the keys `parse_engines` reads, a tournament's and
# an arena's alike.
ENGINE_SOURCES = (
    Key("engines_file", str, "an engines file to take `engines` from"),
    Key(
        "engines",
        list,
        "engines by name: keys of `engines_file`, or bundled bots",
        type_text="list of strings",
    ),
    Key(
        "sandbox",
        bool,
        "run every engine under bubblewrap, unless its own `sandbox` says otherwise (see"
        f" [Untrusted bots]({_GUIDE}/sandbox.md))",
        default=False,
    ),
    Key(
        "limits",
        dict,
        "`memory_mb`, `cpu_s`, `processes`, `disk_mb` for every engine: they fill in the"
        " ones an engine's own `limits` do not set",
    ),
)

# The [tournament] table's keys, in the order the reference lists them.
TOURNAMENT = Keys(
    Key(
        "name",
        str,
        "the tournament's identity: game ids derive from it",
        shown="the file's name without `.toml`",
    ),
    Key(
        "format",
        str,
        '`"round-robin"` (every pairing), `"gauntlet"` (the challenger against every other'
        ' engine) `"swiss"` (rounds of pairings by score, see [Swiss tournaments]'
        f'({_GUIDE}/tournaments.md#swiss-tournaments)) or `"adaptive"` (a budget of games'
        f" spent where the ranking is unsure, see [Adaptive pairing]({_GUIDE}/adaptive.md))"
        ' or `"spsa"` (a budget of games that tunes an engine\'s parameters, with a `[tune]`'
        f" table, see [Tuning]({_GUIDE}/tuning.md))",
        default=Format.ROUND_ROBIN.value,
        choices=tuple(f.value for f in Format),
        noun="format",
        hint='use "round-robin", "gauntlet", "swiss", "adaptive" or "spsa"',
    ),
    Key(
        "challenger",
        str,
        'a gauntlet\'s challenger; only with `format = "gauntlet"`',
        shown="the first engine",
    ),
    Key(
        "rounds",
        int,
        "seat-swapped game pairs per pairing; in a Swiss, Swiss rounds (at most the number"
        " of engines less one, or the number of engines in an odd field)",
        default=1,
        low=1,
        high=MAX_ROUNDS,
    ),
    Key(
        "games",
        int,
        "an adaptive or SPSA run's budget: an even number of games (they come in"
        ' seat-swapped pairs); required with `format = "adaptive"` or `"spsa"`, which have'
        " no `rounds`",
    ),
    Key(
        "until",
        str,
        'an adaptive run\'s stop rule: `"top:K"` (the first K places in order) or `"order"`'
        " (the whole order); without it the budget is played",
    ),
    Key(
        "confidence",
        float,
        "the stop rule's confidence, at least 0.5 and below 1 (see [the stop rule]"
        f"({_GUIDE}/adaptive.md#the-stop-rule))",
        default=0.95,
    ),
    Key(
        "min_games",
        int,
        "an adaptive run's games per engine before it adapts (0-1000)",
        default=4,
        low=0,
        high=1000,
    ),
    Key(
        "concurrency",
        int,
        "games at once on this machine, one worker process each"
        f" (1-{MAX_CONCURRENCY}; `--concurrency` overrides it; a Dask run ignores it)",
        default=1,
        low=1,
        high=MAX_CONCURRENCY,
    ),
    Key(
        "tc",
        str,
        "the time control, as `arbiter match --tc`; an engine's own `tc` wins",
        default=str(DEFAULT_TC),
        type_hint=TC_HELP,
    ),
    Key(
        "clock",
        str,
        "what clocks charge: `wall` time, or `cpu`, the CPU time of each engine's own"
        " processes while on move, with a wall-time ceiling; an engine's own `clock` wins"
        f" (see [Clocks]({_GUIDE}/clocks.md))",
        default="wall",
        choices=("wall", "cpu"),
    ),
    Key(
        "affinity",
        bool,
        "pin each slot's engines to cores of their own (as many as the engines' largest"
        " `threads`) and the harness to a core of its own where one is left; the run's"
        f" first lines and `status` say how (see [Clocks]({_GUIDE}/clocks.md#affinity))",
        default=False,
    ),
    Key(
        "scale_tc",
        bool,
        "measure this host's speed factor before the run (`arbiter calibrate`; from CPU"
        ' time under `clock = "cpu"`) and divide every time control by it, so that a'
        f" slow host gives the engines more time (see [Clocks]({_GUIDE}/clocks.md#calibration))",
        default=False,
    ),
    Key(
        "min_speed",
        float,
        "refuse to run on a host whose speed factor is below this (measured as for `scale_tc`)",
        low=0,
        above=True,
        high=1000,
    ),
    Key("size", int, _SIZES.replace("islands = 4", "`islands = 4`"), default=11),
    Key("islands", int, "8 for Atoll, 4 for Hex", default=8),
    Key("pie", bool, "the swap on move 2", default=True),
    adjudicate_key(_GUIDE),
    *solver_keys(_GUIDE),
    Key("openings", str, f"a file of openings, one a line (see [Openings]({_GUIDE}/openings.md))"),
    Key(
        "random_openings",
        int,
        "N random legal plies per pair (fewer than the board size), drawn from `seed`,"
        " both games of a pair from the same position; under the pie rule one stone,"
        " whatever N (move 2 is the engine's swap decision, see [Openings]"
        f"({_GUIDE}/openings.md#openings-and-the-pie-rule)); 0: every game from the empty"
        " board, where deterministic engines replay one game",
        default=DEFAULT_RANDOM_OPENINGS,
        low=0,
        shown=f"{DEFAULT_RANDOM_OPENINGS} (0 with `openings`)",
    ),
    Key("seed", int, "recorded with each game; random openings derive from it", default=1),
    Key(
        "margin",
        float,
        "seconds an engine may overrun its clock before losing on time (0-60)",
        default=0.1,
        low=0,
        high=60,
        unit=" seconds",
    ),
    Key("output", str, "the results store, beside this file", shown="`NAME.sqlite`"),
    *ENGINE_SOURCES,
    Key(
        "dask",
        str,
        "`tcp://HOST:PORT`: play on this Dask scheduler's workers (`--dask` overrides it;"
        f" see [Dask clusters]({_GUIDE}/cluster.md))",
    ),
    Key(
        "warm_engines",
        int,
        f"engines a slot keeps running between games (2-{MAX_WARM}; see [Warm engines]"
        f"({_GUIDE}/warm-engines.md))",
        default=WARM_ENGINES,
        low=2,
        high=MAX_WARM,
        hint="a slot keeps at least the two engines of its game",
    ),
    Key(
        "warm_memory_mb",
        int,
        "and their declared memory (`limits.memory_mb`) at most",
        default=WARM_MEMORY_MB,
        low=1,
        high=1 << 24,
        unit=" (16 TB)",
    ),
    Key(
        "confine_per",
        str,
        '`"game"` or `"pairing"`: how long a sandboxed or limited engine\'s process lives',
        default="game",
        choices=("game", "pairing"),
        hint='use "game" (a fresh process every game, the default) or "pairing" (kept for'
        " a pairing's games in a row)",
    ),
    Key(
        "sprt",
        dict,
        '`{ elo0 = A, elo1 = B, alpha = 0.05, beta = 0.05, model = "pairs" }`: a'
        " sequential test on every pairing, which stops scheduling it once decided;"
        " `rounds` becomes a cap, and a run warns at start when it is below the pairs the"
        " test is expected to need (Wald's average sample number: elo0 = 0, elo1 = 150"
        f" needs about 15) (see [Tournaments]({_GUIDE}/tournaments.md#the-file))",
        type_text="inline table",
    ),
    Key(
        "on_start_failure",
        str,
        '`"stop"`: an engine that cannot start stops the run before any game;'
        ' `"leave-out"`: it sits out, its games stored as void with the reason, the others'
        f" played (see [Tournaments]({_GUIDE}/tournaments.md#the-file))",
        default="stop",
        choices=("stop", "leave-out"),
        hint='use "stop" (the run stops, the default) or "leave-out" (its games are void,'
        " the rest are played)",
    ),
)
_SOURCES = Keys(*ENGINE_SOURCES)
_ADAPTIVE_KEYS = ("games", "until", "confidence", "min_games")
_TOP_KEYS = {"tournament", "engine", "tune"}


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
            hint="a tournament file has [tournament] and [[engine]] tables (and [tune] with"
            ' format = "spsa")',
        )
    table = data.get("tournament")
    if not isinstance(table, dict):
        raise ConfigError(
            "no [tournament] table",
            where=str(file),
            hint='start the file with [tournament] and name = "..."',
        )
    TOURNAMENT.refuse_unknown(table, where)

    def get(key: str, default: Any = ...) -> Any:
        return TOURNAMENT.get(table, key, where, default)

    name = get("name", file.stem)
    check_name(name, f"{where}.name")
    fmt = Format(get("format"))
    rounds = get("rounds")
    concurrency = get("concurrency")
    margin = get("margin")
    clock = ClockMode(get("clock"))
    warm = WarmBudget(get("warm_engines"), get("warm_memory_mb"))
    confine_per = get("confine_per")
    on_start_failure = get("on_start_failure")
    sprt_table = get("sprt")
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
    try:
        tc = TimeControl.parse(get("tc"))
    except ConfigError as exc:
        raise exc.located(f"{where}.tc") from exc
    islands, size, pie = get("islands"), get("size"), get("pie")
    if islands not in (4, 8):
        raise ConfigError(
            f"{islands} islands is not a variant",
            where=f"{where}.islands",
            hint="8 for Atoll, 4 for Hex",
        )
    try:
        variant = Variant(islands, size, pie)
    except ValueError as exc:
        raise ConfigError(str(exc), where=f"{where}.size", hint=_SIZES) from exc
    seed = get("seed")
    openings, openings_file = _openings(table, where, here, variant, seed)
    openings_default = "openings" not in table and "random_openings" not in table
    file_dask = get("dask")
    if file_dask is not None:
        from arbiter.executors.dask import check_address

        check_address(file_dask, f"{where}.dask")
    local = engines_here and file_dask is None
    tuned: tuple[str, tuple[Param, ...], int, Sprt | None] | None = None
    if fmt is Format.SPSA:
        from arbiter.runs.tune import read_tune

        tuned = read_tune(data.get("tune"), f"{file}: tune")
    elif "tune" in data:
        raise ConfigError(
            '[tune] is for format = "spsa" only',
            where=f"{file}: tune",
            hint='set format = "spsa", or remove the [tune] table',
        )
    filled = {} if tuned is None else {tuned[0]: [p.name for p in tuned[1]]}
    engines, conditions = parse_engines(
        file, here, table, data.get("engine", []), where, local, filled
    )
    tune: TuneSettings | None = None
    templates: dict[str, tuple[str, ...]] = {}
    if tuned is not None:
        from arbiter.runs.tune import tune_field

        tune, engines, conditions, templates = tune_field(file, tuned, engines, conditions)
    if len(engines) < 2:
        raise ConfigError(
            f"needs at least two engines, has {len(engines)}", where=str(file), hint=_EXAMPLE
        )
    challenger = get("challenger")
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
    output_value = get("output", f"{name}.sqlite")
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
    if tune is not None and budget % tune.per_iteration:
        raise ConfigError(
            f"an SPSA iteration plays {tune.per_iteration} games, and {budget} is not a"
            " multiple of it",
            where=f"{where}.games",
            hint=f"set games to a multiple of {tune.per_iteration}",
        )
    total = (
        budget
        if fmt in (Format.ADAPTIVE, Format.SPSA)
        else tournament_size(len(engines), fmt, rounds)
    )
    if total > MAX_GAMES:
        raise ConfigError(
            f"{total} games is more than {MAX_GAMES}",
            where=f"{where}.rounds",
            hint="split it into several tournaments",
        )
    engines = {key: with_clock(spec, clock) for key, spec in engines.items()}
    for key, spec in engines.items():
        assert spec.clock is not None
        conditions[key]["clock"] = spec.clock.value
    return Tournament(
        path=file,
        name=name,
        format=fmt,
        challenger=challenger,
        rounds=rounds,
        concurrency=concurrency,
        tc=tc,
        variant=variant,
        adjudicate=Adjudication(get("adjudicate")),
        solver=load_solver(get, where, here, engines, local),
        clock=clock,
        affinity=get("affinity"),
        scale_tc=get("scale_tc"),
        min_speed=get("min_speed"),
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
        tune=tune,
        templates=templates,
    )


def _adaptive(
    table: Mapping[str, Any], where: str, fmt: Format, engines: int
) -> tuple[int, StopRule | None, int]:
    """An adaptive run's budget, stop rule and warm-up; its keys only with its format
    (an SPSA run's budget too: `games`)."""
    if fmt is Format.SPSA:
        extra = [key for key in _ADAPTIVE_KEYS if key in table and key != "games"]
        if extra:
            raise ConfigError(
                f"{extra[0]} is a key of adaptive runs only",
                where=f"{where}.{extra[0]}",
                hint="an SPSA run plays its budget of games; remove the key",
            )
        table = {k: v for k, v in table.items() if k not in _ADAPTIVE_KEYS or k == "games"}
    elif fmt is not Format.ADAPTIVE:
        extra = [key for key in _ADAPTIVE_KEYS if key in table]
        if extra:
            raise ConfigError(
                f"{extra[0]} is a key of adaptive runs only",
                where=f"{where}.{extra[0]}",
                hint='set format = "adaptive", or remove the key',
            )
        return 0, None, TOURNAMENT["min_games"].default
    if "rounds" in table:
        raise ConfigError(
            "an adaptive run has a budget of games, not rounds",
            where=f"{where}.rounds",
            hint="set games = N (an even number)",
        )
    budget = TOURNAMENT.get(table, "games", where)
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
    min_games = TOURNAMENT.get(table, "min_games", where)
    confidence = TOURNAMENT.get(table, "confidence", where)
    until = TOURNAMENT.get(table, "until", where)
    if until is None:
        if "confidence" in table:
            raise ConfigError(
                "a confidence without a stop rule",
                where=f"{where}.confidence",
                hint='set until = "top:3" (or "order"), or remove the key',
            )
        return budget, None, min_games
    if fmt is Format.SPSA:
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
    file_value = TOURNAMENT.get(table, "openings", where)
    # As a match: deterministic engines from the empty board would replay one game.
    default = 0 if file_value is not None else DEFAULT_RANDOM_OPENINGS
    plies = TOURNAMENT.get(table, "random_openings", where, default)
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
    file: Path,
    here: Path,
    table: Mapping[str, Any],
    listed: Any,
    where: str,
    local: bool = True,
    filled: Mapping[str, Collection[str]] | None = None,
) -> tuple[dict[str, EngineSpec], dict[str, dict[str, Any]]]:
    """The engines a file defines: by key (`engines`, from its `engines_file` or the
    bundled bots) and in `[[engine]]` tables, with the table's `sandbox` and `limits` as
    defaults; and each one's conditions of play, as the store keeps them. A `{NAME}`
    placeholder in a command must be one of the names `filled` gives that engine (the
    parameters a tune fills in per game): any other would reach the engine as it is."""
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
        given = set((filled or {}).get(name, ()))
        for placeholder in placeholders(spec.argv):
            if placeholder not in given:
                raise ConfigError(
                    f"the command's placeholder {{{placeholder}}} is not filled by anything",
                    where=f"{source}.command",
                    hint=f"tune it with [tune] engine = {toml_value(name)} and"
                    f" [tune.params.{placeholder}], or write its value in the command",
                )
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
            # What its clock charges: set below, once the tournament's is known.
            "clock": None,
            # What it plays and how it is spoken to (stores before this key lack it).
            "dialect": {key: raw.get(key) for key in ("islands", "sizes", "swap", "time")},
        }

    confined = _SOURCES.get(table, "sandbox", where)
    limits_table = _SOURCES.get(table, "limits", where)
    limits = Limits() if limits_table is None else parse_limits(limits_table, f"{where}.limits")
    keys = _SOURCES.get(table, "engines", where)
    engines_file = _SOURCES.get(table, "engines_file", where)
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


__all__ = [
    "MAX_CONCURRENCY",
    "TC_HELP",
    "TOURNAMENT",
    "PairingTests",
    "Tournament",
    "check_conditions",
    "load_tournament",
    "read_openings",
    "stored_openings",
]
