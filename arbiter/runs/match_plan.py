"""A match as the command line asks for it: the engines named, the time controls, the
board, the openings and the test, checked and turned into a `Match` ready to plan.

The command line only parses options; what they mean (which engine a name is, which
board a size is, how many games a test may take) is decided here, where any front
that starts a match can use it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from arbiter.engines.config import KnownEngines, resolve_engine, shared_folder_warnings
from arbiter.engines.process import EngineSpec, with_clock
from arbiter.errors import ConfigError
from arbiter.games.adjudication import Adjudication
from arbiter.games.referee import RefereeConfig
from arbiter.results.records import RecordWriter
from arbiter.results.sprt import Sprt
from arbiter.results.store import Store
from arbiter.results.transcripts import TranscriptFolder
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl
from arbiter.runs.match import MATCH_OPENINGS, Match, MatchConfig
from arbiter.runs.schedule import Openings
from arbiter.runs.tournament import read_openings


@dataclass(frozen=True)
class MatchRequest:
    """A match as asked for: each value as given, None where not given."""

    engine1: str
    engine2: str
    known: KnownEngines
    games: int | None = None
    tcs: tuple[str, ...] = ()
    size: int | None = None
    islands: int = 8
    pie: bool = True
    adjudicate: Adjudication = Adjudication.OFF
    concurrency: int | None = None
    seed: int | None = None
    openings_file: str | None = None
    random_openings: int | None = None
    margin: float = 0.1
    clock: ClockMode = ClockMode.WALL  # what clocks charge, unless an engine's definition says
    sprt: str | None = None
    sandbox: bool = False
    here: bool = True  # the engines run on this machine (not on a cluster's workers)


@dataclass(frozen=True)
class MatchSetup:
    """What a request means: the engines as they will be started, the conditions of
    play, the test, and how results name the engines."""

    specs: tuple[EngineSpec, EngineSpec]
    config: MatchConfig
    test: Sprt | None
    given: tuple[str, str]
    warnings: list[str]

    def match(
        self,
        *,
        records: RecordWriter | None,
        store: Store | None,
        rebuilt: tuple[str, ...],
        transcripts: TranscriptFolder | None,
    ) -> Match:
        """The match, recording into `records` and `store` (either may be None)."""
        return Match(
            self.specs,
            self.config,
            records=records,
            store=store,
            sprt=self.test,
            given=self.given,
            keep_records=False,
            rebuilt=rebuilt,
            transcripts=transcripts,
        )


def match_setup(request: MatchRequest, *, sprt_games: int) -> MatchSetup:
    """Check a request and say what it means; `sprt_games` is the most games a test
    plays when no number of games is given. Raises ConfigError naming the option."""
    known = request.known
    here = request.here  # on a cluster, the workers' preflight checks the engines
    specs = (
        resolve_engine(request.engine1, known, local=here),
        resolve_engine(request.engine2, known, local=here),
    )
    if len(request.tcs) > 2:
        raise ConfigError("--tc given more than twice", hint="one for both, or one per engine")
    parsed = [TimeControl.parse(t) for t in request.tcs]
    test = None
    if request.sprt is not None:
        from arbiter.results.sprt import parse_test

        try:
            test = parse_test(request.sprt)
        except ValueError as exc:
            raise ConfigError(
                str(exc),
                where="--sprt",
                hint="e.g. --sprt elo0=0,elo1=10 (and alpha=, beta=, model=pairs|games)",
            ) from exc
    games = request.games
    if games is None:
        games = sprt_games if test is not None else 2
    variant = match_variant(request.islands, request.size, request.pie)
    # --tc wins; otherwise each engine's own tc from the engines file, else the default.
    config = MatchConfig(
        games=games,
        variant=variant,
        tc=(parsed[0], parsed[-1]) if parsed else None,
        concurrency=request.concurrency or 1,
        seed=request.seed,
        openings=match_openings(request.openings_file, request.random_openings, variant),
        referee=RefereeConfig(margin=request.margin, adjudicate=request.adjudicate),
    )
    engine1, engine2 = request.engine1, request.engine2
    clock = request.clock
    specs = (
        with_clock(confined(specs[0], request.sandbox, (), f"engine {engine1!r}", here), clock),
        with_clock(confined(specs[1], request.sandbox, (), f"engine {engine2!r}", here), clock),
    )
    return MatchSetup(
        specs=specs,
        config=config,
        test=test,
        given=(given_name(engine1, known, specs[0]), given_name(engine2, known, specs[1])),
        warnings=shared_folder_warnings({engine1: specs[0], engine2: specs[1]}),
    )


def match_variant(islands: int, size: int | None, pie: bool) -> Variant:
    """The board of --islands, --size and --pie (size 11 unless given)."""
    try:
        return Variant(islands, size if size is not None else 11, pie)
    except ValueError as exc:
        raise ConfigError(str(exc), where="--size/--islands") from exc


def match_openings(file: str | None, plies: int | None, variant: Variant) -> Openings:
    """The openings of --openings FILE or --random-openings N (one random ply if neither)."""
    if file is None:
        openings = MATCH_OPENINGS if plies is None else Openings(random_plies=plies)
        if openings.random_stones(variant) >= variant.size:
            raise ConfigError(
                f"{plies} random plies is too many for size {variant.size}",
                where="--random-openings",
                hint=f"give fewer than {variant.size}",
            )
        return openings
    if plies is not None:
        raise ConfigError("--openings and --random-openings are both given", hint="choose one")
    return read_openings(
        Path(file), variant, "--openings", "one opening a line: cell names and swap, # comments"
    )


def confined(
    spec: EngineSpec, sandbox: bool, hidden: tuple[str, ...], where: str, here: bool = True
) -> EngineSpec:
    """The engine as this run starts it: sandboxed if asked here or in its definition,
    never able to read the run's records; checked here if it runs `here`."""
    from arbiter.engines.config import check_confinement

    spec = dataclasses.replace(spec, sandbox=spec.sandbox or sandbox)
    if here:
        check_confinement(spec, where)
    return dataclasses.replace(spec, hidden=hidden) if spec.sandbox else spec


def given_name(text: str, known: KnownEngines, spec: EngineSpec) -> str:
    """How results name an engine given on the command line: its engines-file key, the
    NAME of NAME=COMMAND, or the command line itself."""
    if text in known:
        return text
    return spec.name or text


def oversubscribed(concurrency: int, left: int, option: str) -> str | None:
    """The warning for more engines on move at once than cores, or None. In a game one
    engine thinks while the other waits for its move, so a game keeps one core busy;
    with more games than cores, engines share a core and a move slowed by the host loses
    on time. The demo's two games on two cores fit."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    games = min(concurrency, left)  # no more slots than games to play
    if not cores or games <= cores:
        return None
    plural = "s" if cores > 1 else ""
    return (
        f"warning: {option} {concurrency} plays {games} games at once on {cores} core{plural}:"
        f" the engines on move (one a game) share the core{plural} and may lose on time for"
        f" the host's sake; at most {cores} game{plural} at once gives each a core (half"
        " that for engines that ponder, thinking on their opponent's time too)"
    )
