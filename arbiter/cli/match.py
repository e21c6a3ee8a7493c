"""`arbiter match`: two engines, N games, optionally a store to resume and a test."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from typing import TYPE_CHECKING

import click

from arbiter.errors import ConfigError
from arbiter.results.records import RecordWriter
from arbiter.results.store import resolved
from arbiter.running import run_trio
from arbiter.runs.tournament import MAX_CONCURRENCY

from . import options
from .options import SPRT_GAMES, FiniteFloat, examples, no_dash
from .output import emit, handle_errors, say

if TYPE_CHECKING:
    from arbiter.runs.match_plan import MatchSetup


@click.command(
    "match",
    epilog=examples(
        "arbiter match random mcts --games 20 --tc 5+0.05",
        "arbiter match 'mine=python3 my_bot.py' mcts --sprt elo0=0,elo1=20 --games 400",
    ),
)
@click.argument("engine1")
@click.argument("engine2")
@options.engines_file()
@click.option(
    "--games",
    "-n",
    default=None,
    type=click.IntRange(1),
    help="Games to play; consecutive games swap seats (an even number balances them)."
    f"  [default: 2; with --sprt, until the test decides, at most {SPRT_GAMES:,}]",
)
@options.tc()
@options.size()
@options.islands()
@options.pie()
@click.option(
    "--adjudicate",
    type=click.Choice(["off", "proven"]),
    default="off",
    show_default=True,
    help="proven: a game ends when one side has a proven connection (bridges, edge"
    " templates, H-search), won by that side; off: every game is played out.",
)
@options.concurrency(
    help=f"Games played at once (at most {MAX_CONCURRENCY}; with --dask, games in"
    " flight, default twice the workers' threads).  [default: 1]",
)
@options.records_append()
@click.option(
    "--store",
    "store_file",
    type=click.Path(dir_okay=False),
    default=None,
    callback=no_dash("a store is a SQLite file"),
    help="Record the games in this results store (SQLite, as a tournament's);"
    " the same match run again resumes it: only the games not stored are"
    " played, and changed conditions are refused.",
)
@options.fresh(help="With --store: start a new store; the old one is kept under a dated name.")
@options.rebuilt(
    metavar="NAME",
    help="With --store: accept that this engine's program changed since the store"
    " was started, as the same engine (the store records it). Repeatable.",
)
@options.dask()
@options.seed(
    help="Recorded with each game (per-game seeds derive from it); engines do not receive"
    " it. Random openings are drawn from it: the same seed, the same openings.",
)
@click.option(
    "--openings",
    "openings_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A file of openings, one a line (cell names and swap); each pair of games plays"
    " the next line, once from each seat.",
)
@click.option(
    "--random-openings",
    type=click.IntRange(0, 25),
    default=None,
    metavar="N",
    help="Each pair of games starts from its own N random plies (under the pie rule at"
    " most one stone: move 2 is the engine's swap decision); 0 for the empty board."
    "  [default: 1]",
)
@click.option(
    "--margin",
    type=FiniteFloat(0, 60),
    default=0.1,
    show_default=True,
    help="Seconds an engine may overrun its clock before losing on time.",
)
@click.option(
    "--clock",
    type=click.Choice(["wall", "cpu"]),
    default="wall",
    show_default=True,
    help="What clocks charge: wall time, or the CPU time of each engine's own processes"
    " while on move (a move still ends at 3 times the time left in wall time); an"
    " engine's own `clock` key wins.",
)
@click.option(
    "--sprt",
    default=None,
    metavar="elo0=A,elo1=B[,alpha=0.05,beta=0.05,model=pairs]",
    help="Stop as soon as a sequential test decides whether ENGINE1 is elo0 or elo1"
    " Elo stronger than ENGINE2: the GSPRT on seat-swapped pairs (model=games: the"
    " binomial SPRT on single games); --games is the most it plays,"
    f" {SPRT_GAMES:,} if not given.",
)
@options.sandbox()
@options.transcripts()
@options.as_json(help="Print the summary as one JSON object.")
@options.quiet()
@options.log_options
@handle_errors
def match(
    engine1: str,
    engine2: str,
    engines_file: str | None,
    games: int | None,
    tcs: tuple[str, ...],
    size: int | None,
    islands: str,
    pie: bool,
    adjudicate: str,
    concurrency: int | None,
    records: str | None,
    store_file: str | None,
    fresh: bool,
    rebuilt: tuple[str, ...],
    dask: str | None,
    seed: int | None,
    openings_file: str | None,
    random_openings: int | None,
    margin: float,
    clock: str,
    sprt: str | None,
    sandbox: bool,
    transcripts_dir: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Play a match between two engines.

    ENGINE is a name from --engines or a command line run without a shell,
    e.g. "python3 my_bot.py --level 3".

    With --store FILE the games are recorded in a results store, as a tournament's: run
    the same command again after an interruption and only the games not yet stored are
    played (changed engines, time controls or board are refused; --games may change).
    `arbiter tournament status FILE`, `arbiter ratings FILE` and `arbiter report FILE
    -o PAGE.html` read it. With --dask the games are played on a Dask cluster.
    """
    from arbiter.games.adjudication import Adjudication
    from arbiter.rules.clock import ClockMode
    from arbiter.runs.match_plan import MatchRequest, match_setup

    for given, name in ((fresh, "--fresh"), (rebuilt, "--rebuilt")):
        if given and store_file is None:
            raise ConfigError(
                f"{name} is given without --store", hint=f"add --store FILE, or leave out {name}"
            )
    if dask is not None:
        from arbiter.executors.dask import check_address

        check_address(dask, "--dask")
    request = MatchRequest(
        engine1,
        engine2,
        options.known_engines(engines_file),
        games=games,
        tcs=tcs,
        size=size,
        islands=int(islands),
        pie=pie,
        adjudicate=Adjudication(adjudicate),
        concurrency=concurrency,
        seed=seed,
        openings_file=openings_file,
        random_openings=random_openings,
        margin=margin,
        clock=ClockMode(clock),
        sprt=sprt,
        sandbox=sandbox,
        here=dask is None,
    )
    setup = match_setup(request, sprt_games=SPRT_GAMES)
    for line in setup.warnings:
        say(line, err=True)
    _play(
        setup,
        records,
        store_file,
        fresh,
        rebuilt,
        dask,
        concurrency,
        transcripts_dir,
        as_json,
        quiet,
    )


def _play(
    setup: MatchSetup,
    records: str | None,
    store_file: str | None,
    fresh: bool,
    rebuilt: tuple[str, ...],
    dask: str | None,
    concurrency: int | None,
    transcripts_dir: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Open the store and the records file, play the match's plan, print its score."""
    from arbiter.results.store import Store
    from arbiter.runs.match_plan import oversubscribed
    from arbiter.runs.run import open_executor, run
    from arbiter.views.report import Progress, summary_json, summary_lines

    games, test = setup.config.games, setup.test
    with contextlib.ExitStack() as stack:
        store = None
        if store_file is not None:
            store, kept = Store.open_for_run(
                resolved(store_file, "--store"), fresh=fresh, origin="--store"
            )
            stack.enter_context(store)
            if kept is not None:
                say(f"The previous store was kept as {kept}.", err=True)
        writer = RecordWriter(records) if records else None
        if writer is not None:
            stack.callback(writer.close)
        runner = setup.match(
            records=writer,
            store=store,
            rebuilt=rebuilt,
            transcripts=options.transcript_folder(transcripts_dir),
        )
        plan = runner.plan()
        if plan.left < games and not quiet:
            stored = runner.result.stats().games
            to_play = (
                "its test has decided: nothing to play"
                if runner.result.decided()
                else f"{plan.left} to play"
            )
            say(
                f"Match {runner.match_id}: {games} games, {stored} stored, {to_play}"
                f" ({store_file})",
                err=True,
            )
        executor = open_executor(plan, concurrency=concurrency, dask=dask)
        if dask is None and (
            warning := oversubscribed(plan.concurrency, plan.left, "--concurrency")
        ):
            say(warning, err=True)
        progress = Progress(
            sys.stderr,
            games,
            done=games - plan.left,
            quiet=quiet,
            status=None if test is None else lambda: runner.result.sprt_result().line(),
        )

        def summary() -> None:
            if as_json:
                emit(json.dumps(summary_json(runner.result)))
            else:
                for line in summary_lines(runner.result):
                    say(line)

        try:
            result = runner.finish(run_trio(functools.partial(run, plan, executor, progress)))
        except KeyboardInterrupt:
            progress.close()
            runner.result.aborted = "interrupted; games in flight were not recorded" + (
                " and are played when the match is run again" if store else ""
            )
            if test is not None:
                runner.result.sprt = runner.result.sprt_result()  # where the test stands
            summary()  # the score of the games finished, as recorded
            raise
        finally:
            progress.close()
        if store is not None:
            store.verify()  # never a score over games nobody will find
    if result.config_error:
        raise ConfigError(result.aborted, hint="choose another engine or variant")
    summary()
    if result.aborted:
        sys.exit(1)
    if result.unplayed:
        say(
            f"{len(result.unplayed)} of {games} games could not be played"
            + (" (run again to retry them)." if store_file else "."),
            err=True,
        )
        sys.exit(1)
