"""The `arbiter` command line: option parsing, one trio.run per command, exit codes.

Exit status: 0 success, 1 a check or run that failed, 2 bad usage or configuration,
130 interrupted by Ctrl-C, 143 stopped by SIGTERM.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from arbiter import logs
from arbiter.engines.config import (
    EnginesFile,
    KnownEngines,
    default_engines_file,
    resolve_engine,
    shared_folder_warnings,
)
from arbiter.engines.process import EngineSpec
from arbiter.errors import ArbiterError, ConfigError
from arbiter.games.referee import RefereeConfig
from arbiter.outfile import STDOUT
from arbiter.outfile import shown as output_name
from arbiter.results.records import BadLine, RecordWriter, read_records
from arbiter.results.store import resolved
from arbiter.rules import IllegalMove, Variant
from arbiter.rules.clock import TimeControl
from arbiter.running import Interrupted, run_trio
from arbiter.runs.schedule import Openings
from arbiter.runs.tournament import MAX_CONCURRENCY, read_openings
from arbiter.text import one_line, terminal

F = TypeVar("F", bound=Callable[..., Any])


class ConfigExit(click.ClickException):
    exit_code = 2


class FiniteFloat(click.FloatRange):
    """A float option that must be a finite number: `nan` passes every range comparison
    and `inf` every lower bound, so both are refused here, before anything uses them."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


# With --sprt and no --games: the test decides long before (a 5 Elo difference takes
# some thousands of games); the cap only keeps a test between two equal engines finite.
SPRT_GAMES = 20_000
MAX_ELO = 100_000  # bounds for the Elo values people give (--sprt, --anchor)


def say(message: str = "", *, err: bool = False) -> None:
    """Print human-readable text: engine-originated parts can never reach the terminal raw.

    Output that cannot be written (a closed pipe, `| head`) is dropped: what it reports
    is already stored, and a reader going away must not stop a run or lose a result."""
    emit(terminal(message), err=err)


def emit(text: str, *, err: bool = False) -> None:
    """Write text that is safe as it is (JSON), dropping it if the output is gone."""
    try:
        click.echo(text, err=err)
    except OSError:
        from arbiter.views.report import discard

        discard(sys.stderr if err else sys.stdout)


E = TypeVar("E", bound=BaseException)


def _first_leaf(group: BaseExceptionGroup[E]) -> E:
    """The first exception of a (nested) group: the one to report."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc  # type: ignore[return-value]


def _interrupted(exc: KeyboardInterrupt) -> None:
    say("Interrupted; engines were stopped.", err=True)
    sys.exit(128 + (exc.signum if isinstance(exc, Interrupted) else 2))


def _out_of_memory(exc: BaseException) -> str:
    """The harness's own memory ran out: say so, and the limit, never blame an engine.

    Dask's client raises MemoryError for things that are not memory (numpy asked to
    size a buffer from a handshake that never came): one raised in `distributed` is
    named as the client's failure, not as the harness's memory.
    """
    import resource

    dask = _raised_in(exc, "distributed")
    if dask is not None:
        return (
            f"Dask's client failed with MemoryError ({exc or 'no message'}) at {dask};"
            " the harness did not run out of memory: check the scheduler address and"
            " that the driver and the workers run the same distributed version; what"
            " was stored is intact"
        )
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    limit = (
        "" if soft == resource.RLIM_INFINITY else f" (its limit, ulimit -v, is {soft // 1024} kB)"
    )
    return (
        f"the harness itself ran out of memory{limit}; raise the limit or lower"
        " --concurrency; what was stored is intact"
    )


def _raised_in(exc: BaseException, package: str) -> str | None:
    """Where in `package` the exception passed (its innermost frame there), if it did."""
    where = None
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module == package or module.startswith(package + "."):
            where = f"{module}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def handle_errors(func: F) -> F:
    """Turn the harness's errors into one clear line and the documented exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ConfigError as exc:
            raise ConfigExit(one_line(str(exc))) from exc
        except ArbiterError as exc:
            raise click.ClickException(one_line(str(exc))) from exc
        except KeyboardInterrupt as exc:
            _interrupted(exc)
        except MemoryError as exc:
            raise click.ClickException(_out_of_memory(exc)) from exc
        except BaseExceptionGroup as group:
            stop = group.subgroup(KeyboardInterrupt)
            if stop is not None:
                _interrupted(_first_leaf(stop))
            memory = group.subgroup(MemoryError)
            if memory is not None:
                raise click.ClickException(_out_of_memory(_first_leaf(memory))) from group
            ours = group.subgroup(ArbiterError)
            if ours is None:
                raise
            first = _first_leaf(ours)
            if isinstance(first, ConfigError):
                raise ConfigExit(one_line(str(first))) from group
            raise click.ClickException(one_line(str(first))) from group

    return wrapper  # type: ignore[return-value]


def no_dash(why: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An output option's check: `-` means standard output for every command, and this
    output cannot go there (`why`), so it is refused rather than written to a file named
    `-`."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value == STDOUT:
            raise click.BadParameter(
                f"- is standard output, and {why}; give a path (./- for one named -)"
            )
        return value

    return check


def log_options(func: F) -> F:
    """`--log FILE` and `-v` for the commands that play games (see arbiter.logs)."""

    @click.option(
        "--log",
        "log_file",
        type=click.Path(dir_okay=False),
        default=None,
        callback=no_dash("the log is appended to a file (-v logs to stderr)"),
        help="Append the harness's own log (every level, tracebacks of harness"
        " faults) to this file.",
    )
    @click.option(
        "--verbose",
        "-v",
        count=True,
        help="Log to stderr: -v for what happens, -vv for every detail.",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, log_file: str | None, verbose: int, **kwargs: Any) -> Any:
        try:
            logs.configure(log_file, verbose)
        except ConfigError as exc:
            raise ConfigExit(one_line(str(exc))) from exc
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def transcripts_option(func: F) -> F:
    """`--transcripts DIR` for the commands that play games."""
    return click.option(
        "--transcripts",
        "transcripts_dir",
        type=click.Path(file_okay=False),
        default=None,
        callback=no_dash("transcripts are files of their own in a folder"),
        help="Write each game's full protocol transcript (both engines, timed, as cutechess's"
        " debug log; at most 1 MiB of exchanges a game, its start and its end) to a file of"
        " its own in this folder, made if missing.",
    )(func)


def _transcripts(folder: str | None) -> Any:
    if folder is None:
        return None
    from arbiter.results.transcripts import TranscriptFolder

    return TranscriptFolder(folder)


def examples(*lines: str) -> str:
    """A command's help ends with examples, kept as written (click rewraps text)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


# Click 8.2 shows a group's help, when it is called with nothing, by a UsageError.
_SHOWS_HELP: tuple[type[click.UsageError], ...] = tuple(
    getattr(click.exceptions, name)
    for name in ["NoArgsIsHelpError"]
    if hasattr(click.exceptions, name)
)


class OneLineUsage(click.Group):
    """The root command: a bad command-line value is one line on stderr (what was wrong,
    which option, where the help is) and exit status 2, as a configuration error is;
    Click's own report repeats the usage block above it. Every subcommand's parsing runs
    inside the root's `make_context` or `invoke`, so this one place covers them all."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with _usage_in_one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _usage_in_one_line():
            return super().invoke(ctx)


@contextlib.contextmanager
def _usage_in_one_line() -> Iterator[None]:
    try:
        yield
    except _SHOWS_HELP:
        raise  # a group called with nothing shows its help, as Click does
    except click.UsageError as exc:
        raise _one_line_usage(exc) from exc


def _one_line_usage(exc: click.UsageError) -> ConfigExit:
    """A usage error as one line: Click's message, and the help that says how to fix it."""
    message = exc.format_message().rstrip(".")
    if exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
    return ConfigExit(one_line(message))


@click.group(
    cls=OneLineUsage,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples(
        "arbiter tournament run --example demo",
        "arbiter new bot my_bot.py && arbiter check 'python3 my_bot.py'",
    ),
)
@click.version_option(package_name="atoll-arbiter")
def main() -> None:
    """Atoll Arbiter: referee and tournament harness for Atoll and Hex engines."""


def _variant(islands: int, size: int | None, pie: bool) -> Variant:
    try:
        return Variant(islands, size if size is not None else 11, pie)
    except ValueError as exc:
        raise ConfigError(str(exc), where="--size/--islands") from exc


def _engines(engines_file: str | None) -> KnownEngines:
    """The names an ENGINE argument may use: --engines FILE (or `engines/engines.toml`
    here), then the bundled bots."""
    found = engines_file or default_engines_file()
    return KnownEngines(EnginesFile(found) if found else None)


@main.command(
    epilog=examples(
        "arbiter match random mcts --games 20 --tc 5+0.05",
        "arbiter match 'mine=python3 my_bot.py' mcts --sprt elo0=0,elo1=20 --games 400",
    )
)
@click.argument("engine1")
@click.argument("engine2")
@click.option(
    "--engines",
    "engines_file",
    type=click.Path(dir_okay=False),
    help="TOML file defining engines by name; its names win over the bundled bots'.",
)
@click.option(
    "--games",
    "-n",
    default=None,
    type=click.IntRange(1),
    help="Games to play; consecutive games swap seats (an even number balances them)."
    f"  [default: 2; with --sprt, until the test decides, at most {SPRT_GAMES:,}]",
)
@click.option(
    "--tc",
    "tcs",
    multiple=True,
    metavar="TC",
    help="Time control: BASE+INC seconds (10+0.1), MOVES/BASE+INC (40/60+0.5: BASE"
    " again every 40 moves), st=S (S seconds per move) or inf. Give it twice"
    " for one per engine, in ENGINE1, ENGINE2 order.  [default: 10+0.1]",
)
@click.option(
    "--size",
    type=int,
    default=None,
    help="Board size (Atoll: 7, 11, 15, 19, 23; Hex: 2-26).  [default: 11]",
)
@click.option(
    "--islands",
    type=click.Choice(["8", "4"]),
    default="8",
    show_default=True,
    help="8 for Atoll, 4 for Hex.",
)
@click.option("--pie/--no-pie", default=True, show_default=True, help="Allow the swap on move 2.")
@click.option(
    "--concurrency",
    "-c",
    default=None,
    type=click.IntRange(1, MAX_CONCURRENCY),
    help=f"Games played at once (at most {MAX_CONCURRENCY}; with --dask, games in"
    " flight, default twice the workers' threads).  [default: 1]",
)
@click.option(
    "--records",
    type=click.Path(dir_okay=False),
    callback=no_dash(
        "the match's summary goes there; write the records to a file, or export"
        " them from --store with `tournament export STORE --records -`"
    ),
    help="Append one JSON line per game to this file.",
)
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
@click.option(
    "--fresh",
    is_flag=True,
    help="With --store: start a new store; the old one is kept under a dated name.",
)
@click.option(
    "--rebuilt",
    multiple=True,
    metavar="NAME",
    help="With --store: accept that this engine's program changed since the store"
    " was started, as the same engine (the store records it). Repeatable.",
)
@click.option(
    "--dask",
    "dask",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Play the games on the workers of this Dask scheduler (default: this machine).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
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
    "--sprt",
    default=None,
    metavar="elo0=A,elo1=B[,alpha=0.05,beta=0.05,model=pairs]",
    help="Stop as soon as a sequential test decides whether ENGINE1 is elo0 or elo1"
    " Elo stronger than ENGINE2: the GSPRT on seat-swapped pairs (model=games: the"
    " binomial SPRT on single games); --games is the most it plays,"
    f" {SPRT_GAMES:,} if not given.",
)
@click.option(
    "--sandbox",
    is_flag=True,
    help="Run both engines under bubblewrap (see the guide on untrusted bots).",
)
@transcripts_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@log_options
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
    from arbiter.results.store import Store
    from arbiter.runs.match import Match, MatchConfig
    from arbiter.runs.run import open_executor, run
    from arbiter.views.report import Progress, summary_json, summary_lines

    for given, name in ((fresh, "--fresh"), (rebuilt, "--rebuilt")):
        if given and store_file is None:
            raise ConfigError(
                f"{name} is given without --store", hint=f"add --store FILE, or leave out {name}"
            )
    if dask is not None:
        from arbiter.executors.dask import check_address

        check_address(dask, "--dask")
    known = _engines(engines_file)
    here = dask is None  # on a cluster, the workers' preflight checks the engines
    specs = (resolve_engine(engine1, known, local=here), resolve_engine(engine2, known, local=here))
    if len(tcs) > 2:
        raise ConfigError("--tc given more than twice", hint="one for both, or one per engine")
    parsed = [TimeControl.parse(t) for t in tcs]
    test = None
    if sprt is not None:
        from arbiter.results.sprt import parse_test

        try:
            test = parse_test(sprt)
        except ValueError as exc:
            raise ConfigError(
                str(exc),
                where="--sprt",
                hint="e.g. --sprt elo0=0,elo1=10 (and alpha=, beta=, model=pairs|games)",
            ) from exc
    if games is None:
        games = SPRT_GAMES if test is not None else 2
    variant = _variant(int(islands), size, pie)
    # --tc wins; otherwise each engine's own tc from the engines file, else the default.
    config = MatchConfig(
        games=games,
        variant=variant,
        tc=(parsed[0], parsed[-1]) if parsed else None,
        concurrency=concurrency or 1,
        seed=seed,
        openings=_match_openings(openings_file, random_openings, variant),
        referee=RefereeConfig(margin=margin),
    )
    specs = (
        _confined(specs[0], sandbox, (), f"engine {engine1!r}", here),
        _confined(specs[1], sandbox, (), f"engine {engine2!r}", here),
    )
    for line in shared_folder_warnings({engine1: specs[0], engine2: specs[1]}):
        say(line, err=True)
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
        runner = Match(
            specs,
            config,
            records=writer,
            store=store,
            sprt=test,
            given=(_given(engine1, known, specs[0]), _given(engine2, known, specs[1])),
            keep_records=False,
            rebuilt=rebuilt,
            transcripts=_transcripts(transcripts_dir),
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
        if dask is None:
            _warn_oversubscribed(plan.concurrency, plan.left, "--concurrency")
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


def _warn_oversubscribed(concurrency: int, left: int, option: str) -> None:
    """Once per command, on stderr: more engines on move at once than cores. In a game
    one engine thinks while the other waits for its move, so a game keeps one core busy;
    with more games than cores, engines share a core and a move slowed by the host loses
    on time. The demo's two games on two cores fit."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    games = min(concurrency, left)  # no more slots than games to play
    if not cores or games <= cores:
        return
    plural = "s" if cores > 1 else ""
    say(
        f"warning: {option} {concurrency} plays {games} games at once on {cores} core{plural}:"
        f" the engines on move (one a game) share the core{plural} and may lose on time for"
        f" the host's sake; at most {cores} game{plural} at once gives each a core (half"
        " that for engines that ponder, thinking on their opponent's time too)",
        err=True,
    )


def _match_openings(file: str | None, plies: int | None, variant: Variant) -> Openings:
    from arbiter.runs.match import MATCH_OPENINGS

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


def _confined(
    spec: EngineSpec, sandbox: bool, hidden: tuple[str, ...], where: str, here: bool = True
) -> EngineSpec:
    """The engine as this run starts it: sandboxed if asked here or in its definition,
    never able to read the run's records; checked here if it runs `here`."""
    from arbiter.engines.config import check_confinement

    spec = dataclasses.replace(spec, sandbox=spec.sandbox or sandbox)
    if here:
        check_confinement(spec, where)
    return dataclasses.replace(spec, hidden=hidden) if spec.sandbox else spec


def _given(text: str, known: KnownEngines, spec: EngineSpec) -> str:
    """How results name an engine given on the command line: its engines-file key, the
    NAME of NAME=COMMAND, or the command line itself."""
    if text in known:
        return text
    return spec.name or text


@main.command(
    epilog=examples(
        "arbiter show games.jsonl --game 3 --ply 20 --svg position.svg",
        "arbiter show hex.jsonl --game 3 --sgf game3.sgf",
    )
)
@click.argument("records", type=click.Path(dir_okay=False))
@click.option(
    "--game",
    "game_id",
    default=None,
    help="Game id, a unique prefix of one, or a number: the game number in a file"
    " of one match, else the number in the listing (default: list the games).",
)
@click.option(
    "--ply", type=click.IntRange(0), default=None, help="Show the position after this many plies."
)
@click.option(
    "--svg",
    "svg",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the position as a standalone SVG picture to this file.",
)
@click.option(
    "--sgf",
    "sgf",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="Write the Hex game given by --game, or without --game every rated Hex game of"
    " the file, as SGF (as HexGui writes it) to this file; - for standard output.",
)
@click.option("--strict", is_flag=True, help="A line that is not a valid record is an error.")
@handle_errors
def show(
    records: str,
    game_id: str | None,
    ply: int | None,
    svg: str | None,
    sgf: str | None,
    strict: bool,
) -> None:
    """List the games of a records file, or print one as a board with its moves.

    The list is written as the file is read, and a game named by its id (or a prefix of
    it, or its match's game number) is found without checking every other record, so
    that both work on files of any size."""
    from arbiter.views.report import describe_game, list_games

    _records_only(records)
    bad: list[BadLine] = []
    if sgf is not None:
        if ply is not None or svg is not None:
            raise ConfigError(
                "--sgf writes whole games, not a position",
                where="--sgf",
                hint="give --ply and --svg in a command of their own",
            )
        _show_sgf(read_records(records, None if strict else bad), bad, game_id, records, sgf)
        return
    if game_id is None and ply is None and svg is None:
        shown = 0
        for line in list_games(read_records(records, None if strict else bad)):
            say(line)
            shown += 1
        for problem in bad:
            say(f"skipped {problem}", err=True)
        _no_games(range(shown), records)
        return
    chosen = _find_game(records, game_id, strict)
    if ply is not None and ply > len(chosen.moves):
        raise ConfigError(
            f"--ply {ply} is out of range", hint=f"the game has {len(chosen.moves)} plies"
        )
    try:
        if svg is not None:
            from arbiter.views.html import position_svg

            _write_whole(svg, [position_svg(chosen, ply)], (b"<?xml", b"<svg"))
            say(
                f"Wrote game {chosen.game_id} after {len(chosen.moves) if ply is None else ply}"
                f" of {len(chosen.moves)} plies to {output_name(svg)}.",
                err=True,
            )
            return
        lines = describe_game(chosen, ply)
    except IllegalMove as exc:
        raise ConfigError(str(exc), where=f"{records}: game {chosen.game_id}") from exc
    for line in lines:
        say(line)


def _records_only(path: str) -> None:
    """`show` reads a records file: a tournament or arena file, or a store, is named as
    what it is (read as records, each of its lines would be reported as a bad one)."""
    from arbiter.results.standings import source_kind

    if not os.path.isfile(path):
        return  # read_records says what is wrong with it
    if path.endswith(".toml"):
        what = "an arena file" if _arena_file(path) else "a tournament file"
    elif source_kind(path) == "store":
        what = "a store"
    else:
        return
    raise ConfigError(
        f"{what}, not a records file",
        where=path,
        hint=f"write its games as records first: arbiter tournament export"
        f" {shlex.quote(path)} --records games.jsonl",
    )


def _arena_file(path: str) -> bool:
    from arbiter.arena.config import is_arena_file

    return is_arena_file(path)


def _no_games(games: Any, records: str) -> None:
    if not games:
        raise ConfigError(
            "the file holds no games",
            where=records,
            hint="records files are written by 'arbiter match --records'",
        )


def _find_game(path: str, game_id: str | None, strict: bool) -> Any:
    """`show --game`: the game named, as `_choose_game` would choose it from every record
    of the file, found in one pass that reads each line's game id alone and checks only
    the record it shows. Under --strict, without --game, or for a number that is the
    number in the listing (no id, nor its match's game number), every record is read and
    checked, so that the numbers are the listing's."""
    from arbiter.results.records import parse_line, scan_ids

    bad: list[BadLine] = []

    def checked() -> Any:
        chosen = _choose_game(read_records(path, None if strict else bad), game_id, path)
        for problem in bad:
            say(f"skipped {problem}", err=True)
        return chosen

    if strict or game_id is None:
        return checked()
    digits = game_id.isascii() and game_id.isdigit()
    exact: tuple[int, str] | None = None
    numbered: tuple[int, str] | None = None
    prefixed: dict[str, tuple[int, str]] = {}
    starting: set[str] = set()  # the ids that start with it, counted up to _MANY
    heads: set[str] = set()
    sample: list[str] = []
    lines = 0
    for number, found, line in scan_ids(path):
        lines += 1
        if found is None:
            continue
        if len(sample) < 6:
            sample.append(found)
        if found == game_id:
            exact = (number, line)
        if len(heads) < 2:
            heads.add(found.rsplit("-", 1)[0])
        if digits and found.rsplit("-", 1)[-1] == game_id:
            numbered = (number, line)
        if found.startswith(game_id):
            if found in prefixed or len(prefixed) < 2:
                prefixed[found] = (number, line)
            if len(starting) <= _MANY:
                starting.add(found)
    if exact is None and numbered is not None and len(heads) == 1:
        exact = numbered
    if exact is None and digits and 1 <= int(game_id) <= lines:
        return checked()  # the number in the listing
    if exact is None and len(prefixed) == 1:
        exact = next(iter(prefixed.values()))
    if exact is None:
        if not lines:
            _no_games([], path)
        if prefixed:
            raise ConfigError(
                f"{_count(starting)} games start with {game_id!r}",
                where=path,
                hint="give more of the id",
            )
        shown = ", ".join(sample[:5]) + (" ..." if len(sample) > 5 else "")
        raise ConfigError(
            f"no game {game_id!r}",
            where=path,
            hint=f"give an id, a prefix or a number; ids here: {shown}",
        )
    number, line = exact
    try:
        return parse_line(line)
    except ValueError as exc:
        raise ConfigError(
            f"not a game record ({exc})",
            where=f"{path}:{number}",
            hint="records files are written by 'arbiter match --records'",
        ) from exc


_MANY = 1000  # ids that start with an ambiguous prefix, counted before saying "more than"


def _count(ids: set[str]) -> str:
    return f"more than {_MANY}" if len(ids) > _MANY else str(len(ids))


def _show_sgf(
    games: Iterator[Any], bad: list[BadLine], game_id: str | None, where: str, out: str
) -> None:
    """`show --sgf`: one game (a void attempt too, its result `Void`), or every rated Hex
    game of the file as one SGF collection, saying what was left out. The file is read
    once, as the collection is written: memory does not follow the number of games."""
    from arbiter.views import sgf as sgf_format

    def skipped() -> None:
        for problem in bad:
            say(f"skipped {problem}", err=True)
        bad.clear()

    notes: list[str] = []
    trees: Iterable[str]
    if game_id is not None:
        try:
            chosen = _choose_game(games, game_id, where)
        finally:
            skipped()
        if not sgf_format.is_hex(chosen):
            raise ConfigError(
                f"game {chosen.game_id} is an Atoll game; {sgf_format.NO_STANDARD_FORMAT}",
                where=where,
                hint="its record in this file is the one to share",
            )
        try:
            trees = [sgf_format.game_tree(chosen)]
        except IllegalMove as exc:
            raise ConfigError(str(exc), where=f"{where}: game {chosen.game_id}") from exc
        what = f"game {chosen.game_id}"
    else:
        selection = sgf_format.Selection()
        trees = _sgf_collection(games, selection, skipped, where)
        what = ""
    if out == "-":
        for tree in trees:
            try:
                click.echo(tree, nl=False)
            except OSError:
                from arbiter.views.report import discard

                discard(sys.stdout)
                return
    else:
        _write_whole(out, trees, (b"(",))
    if game_id is None:
        what = sgf_format.games(selection.written)
        notes = selection.notes()
    say(f"Wrote {what} as SGF to {output_name(out)}.", err=True)
    for note in notes:
        say(note, err=True)


def _sgf_collection(
    games: Iterator[Any], selection: Any, skipped: Callable[[], None], where: str
) -> Iterator[str]:
    """The SGF trees of the rated Hex games, as the records are read; a file that held no
    game, or no rated Hex game, is an error once it is read (nothing was written yet)."""
    from arbiter.views import sgf as sgf_format

    count = 0

    def counted() -> Iterator[Any]:
        nonlocal count
        for game in games:
            count += 1
            yield game

    yield from sgf_format.collection(counted(), selection)
    skipped()
    _no_games(count, where)
    if not selection.written:
        raise ConfigError(
            "no rated Hex game to write as SGF"
            + (f"; {sgf_format.NO_STANDARD_FORMAT}" if selection.atoll else ""),
            where=where,
            hint="this file is the record to share"
            if selection.atoll
            else "a void attempt is written only when named with --game",
        )


def _write_whole(path: str, pieces: Iterable[str], kinds: tuple[bytes, ...]) -> None:
    """Write a file whole or not at all; a file already there is replaced only if it
    starts like one of `kinds` (never a store, a records file or a tournament file given
    by mistake); a device, pipe or FIFO is streamed to."""
    from arbiter.outfile import write_lines

    write_lines(path, pieces, kinds=kinds)


def _choose_game(games: Iterable[Any], game_id: str | None, where: str) -> Any:
    """By exact id, by number in the file (or a match's game number), or by unique prefix;
    one pass over `games`, keeping only the candidates."""
    last = exact = numbered = at_number = None
    heads: set[str] = set()
    prefixed: dict[str, Any] = {}
    starting: set[str] = set()  # the ids that start with it, counted up to _MANY
    sample: list[str] = []
    count = 0
    digits = game_id is not None and game_id.isascii() and game_id.isdigit()
    wanted = int(game_id) if game_id is not None and digits else 0
    for g in games:
        count += 1
        last = g
        if game_id is None:
            continue
        if len(sample) < 6:
            sample.append(g.game_id)
        if g.game_id == game_id:
            exact = g
        if len(heads) < 2:
            heads.add(g.game_id.rsplit("-", 1)[0])
        if digits and g.game_id.rsplit("-", 1)[-1] == game_id:
            numbered = g
        if count == wanted:
            at_number = g
        if g.game_id.startswith(game_id) and (g.game_id in prefixed or len(prefixed) < 2):
            prefixed[g.game_id] = g
        if g.game_id.startswith(game_id) and len(starting) <= _MANY:
            starting.add(g.game_id)
    _no_games(count, where)
    if game_id is None:
        return last
    if exact is not None:
        return exact
    if digits:
        if len(heads) == 1 and numbered is not None:
            return numbered  # one match's game number (its latest attempt)
        if at_number is not None:
            return at_number  # the number in the listing
    if len(prefixed) == 1:
        return next(iter(prefixed.values()))
    if prefixed:
        raise ConfigError(
            f"{_count(starting)} games start with {game_id!r}",
            where=where,
            hint="give more of the id",
        )
    shown = ", ".join(sample[:5]) + (" ..." if len(sample) > 5 else "")
    raise ConfigError(
        f"no game {game_id!r}",
        where=where,
        hint=f"give an id, a prefix or a number; ids here: {shown}",
    )


@main.command(
    epilog=examples(
        "arbiter check heuristic",
        "arbiter check --sandbox 'mine=python3 my_bot.py' --json",
    )
)
@click.argument("engine")
@click.option(
    "--engines",
    "engines_file",
    type=click.Path(dir_okay=False),
    help="TOML file defining engines by name; its names win over the bundled bots'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--timeout",
    type=FiniteFloat(0, 3600, min_open=True),
    default=None,
    help="Seconds allowed for each answer, the start-up handshake included.  [default: as"
    " the referee allows: 10, and 30 for the handshake]",
)
@click.option(
    "--seed",
    type=int,
    default=1,
    show_default=True,
    help="Chooses the test positions (the same seed, the same positions).",
)
@click.option(
    "--sandbox", is_flag=True, help="Check it under bubblewrap, as a sandboxed tournament runs it."
)
@click.option(
    "--transcripts",
    "transcripts_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write each position's exchange with the engine to a file of its own in this"
    " folder (made if missing); -v shows them on stderr.",
)
@log_options
@handle_errors
def check(
    engine: str,
    engines_file: str | None,
    as_json: bool,
    timeout: float | None,
    seed: int,
    sandbox: bool,
    transcripts_dir: str | None,
) -> None:
    """Check that an engine plays by the protocol, the way matches will run it.

    Every variant it lists or declares, its engine definition's keys honoured (options,
    islands, sizes, swap, time); for bot authors.
    """
    from arbiter.check import run_checks, summary_table

    spec = _confined(
        resolve_engine(engine, _engines(engines_file)), sandbox, (), f"engine {engine!r}"
    )
    folder = None if transcripts_dir is None else _transcripts(transcripts_dir).path
    show = click.get_current_context().params.get("verbose", 0) > 0
    results = run_trio(
        functools.partial(
            run_checks, spec, timeout=timeout, seed=seed, transcripts=folder, show=show
        )
    )
    if as_json:
        emit(json.dumps([r.to_json() for r in results], indent=2))
    else:
        say(summary_table(results))
    if not all(r.passed for r in results if r.required):
        sys.exit(1)


@main.command(
    "engines",
    epilog=examples("arbiter engines", "arbiter engines --engines my_engines.toml --json"),
)
@click.option(
    "--engines",
    "engines_file",
    type=click.Path(dir_okay=False),
    help="TOML file defining engines by name (default: engines/engines.toml here, if any).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@handle_errors
def engines_command(engines_file: str | None, as_json: bool) -> None:
    """List the engines known by name here: the engines file's, then the bundled bots.

    A name in the engines file wins over a bundled bot of the same name; such a bundled
    bot is listed as overridden. The command is the one a match runs (in the folder
    shown), so it can be tried by hand.

    A broken entry is listed too, and named on stderr with what is wrong; the others can
    still be used. Exit status 1 when an entry is broken, 2 when the file cannot be read.
    """
    from arbiter.text import terminal

    known = _engines(engines_file)
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    broken: list[str] = []
    for book in known.books:
        for key in book:
            entry: dict[str, Any] = {
                "name": key,
                "from": "bundled" if book.bundled else str(book.path),
            }
            if book.bundled and known.user is not None and key in known.user:
                entry["from"] = f"bundled, overridden by {known.user.path}"
            try:
                spec = book.spec(key, local=False)
            except ConfigError as exc:
                entry.update(command=None, cwd=None, problem=one_line(str(exc)))
                problems.append(one_line(str(exc)))
                broken.append(key)
            else:
                entry.update(command=list(spec.argv), cwd=spec.cwd)
            rows.append(entry)
    if as_json:
        emit(json.dumps(rows, indent=2))
    else:
        from tabulate import tabulate

        table = [
            [
                terminal(r["name"]),
                terminal(r["from"]),
                terminal(shlex.join(r["command"])) if r["command"] else "(broken: see below)",
            ]
            for r in rows
        ]
        say(tabulate(table, headers=["engine", "from", "command"], tablefmt="simple"))
        say()
        say(
            "Bundled bots run in the installed package's bots folder; an engines file's run in"
            " its folder unless it sets cwd. Use a name as ENGINE in `match` and `check`, or in"
            " a tournament's engines list."
        )
    for problem in problems:
        say(f"error: {terminal(problem)}", err=True)
    if problems:
        usable = len(rows) - len(broken)
        say(
            f"{len(broken)} of {len(rows)} entries broken ({terminal(', '.join(broken))}): fix"
            f" or remove them; the other {usable} can be used.",
            err=True,
        )
        sys.exit(1)


@main.group(
    epilog=examples(
        "arbiter new bot my_bot.py", "arbiter new tournament league.toml --bot my_bot.py"
    )
)
def new() -> None:
    """Starting points to edit: a bot of your own, a tournament file."""


@new.command(
    "bot",
    epilog=examples("arbiter new bot my_bot.py", "arbiter new bot bots/fox.py --name fox"),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--name", default=None, help="The name it answers and results show.  [default: FILE's stem]"
)
@handle_errors
def new_bot(file: str, name: str | None) -> None:
    """Write a bot to start from: the protocol skeleton, standalone (Python's standard
    library only), with its name filled in. Replace its choose_move with your strategy.

    Never replaces an existing file.
    """
    from arbiter.scaffold import new_bot as write_bot
    from arbiter.scaffold import saved_as

    label = write_bot(file, name)
    say(
        f"Wrote {output_name(file)}: a bot named {label!r} that plays a random legal move.",
        err=True,
    )
    command = shlex.join(["python3", saved_as(file, "bot")])
    say("Next:", err=True)
    say(f"  arbiter check {shlex.quote(f'{label}={command}')}", err=True)
    say(f"  arbiter match {shlex.quote(f'{label}={command}')} random --games 10", err=True)


@new.command(
    "tournament",
    epilog=examples(
        "arbiter new tournament league.toml",
        "arbiter new tournament league.toml --bot bots/fox.py --bot bots/owl.py",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--bot",
    "bots",
    multiple=True,
    metavar="PATH",
    help="A bot program to add as an [[engine]] entry (repeatable).",
)
@handle_errors
def new_tournament(file: str, bots: tuple[str, ...]) -> None:
    """Write a commented tournament file: a round-robin of the bundled bots and yours.

    Never replaces an existing file.
    """
    from arbiter.scaffold import new_tournament as write_tournament
    from arbiter.scaffold import saved_as

    estimate = write_tournament(file, bots)
    say(
        f"Wrote {output_name(file)}. Play it with: arbiter tournament run"
        f" {shlex.quote(saved_as(file, 'tournament'))}",
        err=True,
    )
    say(f"It plays {estimate}.", err=True)


# ------------------------------------------------------------------ tournaments


def example_option(func: F) -> F:
    """FILE, or --example NAME: a tournament file installed with arbiter, run from any
    folder, its store in the current folder."""
    from arbiter.scaffold import examples

    func = click.argument("file", required=False, type=click.Path(dir_okay=False))(func)
    return click.option(
        "--example",
        type=click.Choice(examples()),
        default=None,
        help="Instead of FILE, a tournament installed with arbiter; its store goes in the"
        " current folder (NAME.sqlite).",
    )(func)


def _results_file(file: str, store_folder: Path | None = None) -> Any:
    """A tournament or an arena file, as the commands that read results take it: for its
    store (its `output`), and a tournament's schedule; no engine is started or looked for."""
    from arbiter.arena.config import is_arena_file, load_arena
    from arbiter.runs.tournament import load_tournament

    if is_arena_file(file):
        return load_arena(file, engines_here=False)
    return load_tournament(file, engines_here=False, store_folder=store_folder)


def _is_tournament(t: Any) -> bool:
    from arbiter.runs.tournament import Tournament

    return isinstance(t, Tournament)


def _tournament_file(file: str | None, example: str | None) -> tuple[str, Path | None]:
    """The tournament file a command reads, and where its store is when not beside it."""
    from arbiter.scaffold import EXAMPLES

    if (file is None) == (example is None):
        raise ConfigError(
            "give a tournament FILE or --example NAME"
            if file is None
            else "give either FILE or --example, not both",
            where="FILE",
            hint="e.g. arbiter tournament run --example demo",
        )
    if example is not None:
        return str(EXAMPLES / f"{example}.toml"), Path.cwd()
    assert file is not None
    return file, None


@main.group(
    epilog=examples(
        "arbiter tournament run tournaments/demo.toml",
        "arbiter tournament status tournaments/demo.toml --json",
    )
)
def tournament() -> None:
    """Round-robin, gauntlet, Swiss and adaptive tournaments in TOML files, stored in SQLite."""


def _unneeded(t: Any, games: int) -> str:
    """The games a tournament will not play after all, and why, for its header lines."""
    if games <= 0:
        return ""
    why = "their pairings' tests decided" if t.sprt is not None else "the stop rule settled"
    return f", {games} not needed ({why})"


def _store_standings(store: Any) -> str:
    from arbiter.results.standings import Tally, standings, table

    tally = Tally.from_store(store)
    return table(standings(tally)) if tally.games else "No rated games yet."


def _tournament_notes(store: Any, outside: int = 0) -> list[str]:
    lines = []
    if outside:
        lines.append(
            f"Note: {outside} stored games are outside this schedule (played with more"
            " rounds or other engines); the table rates them with the rest."
        )
    for a, b, n in store.identical_pairings():
        lines.append(
            f"Note: all {n} games between {a} and {b} were identical (per seat order):"
            " deterministic engines replay one game; use openings or random_openings."
        )
    voids = store.void_summary()
    if voids:
        lines.append("Void games not yet replayed:")
        lines += [f"  {n} x {term}: {reason[:200]}" for term, reason, n in voids[:10]]
    return lines


def _damaged(store: Any, strict: bool) -> None:
    """A reader's damaged store rows: skipped with a line each, or refused (--strict);
    so are those found later, as the records they are in are read."""
    from arbiter.results.store import READ_HINT

    def found(damage: Any) -> None:
        if strict:
            raise ConfigError(str(damage), hint=READ_HINT)
        say(f"skipped {damage}", err=True)

    for damage in store.damage:
        found(damage)
    store.on_damage = found


def _outside(t: Any, store: Any, schedule: Any = None) -> tuple[int, int]:
    """(games of this schedule stored, stored games outside it): status and the table
    count the same games, the second number says which the schedule does not hold."""
    done = t.stored(store) if schedule is None else t.stored(store, schedule)
    return done, store.games_stored() - done


@tournament.command(
    "run",
    epilog=examples(
        "arbiter tournament run --example demo",
        "arbiter tournament run league.toml --dask tcp://scheduler:8786",
    ),
)
@example_option
@click.option(
    "--fresh", is_flag=True, help="Start a new store; the old one is kept under a dated name."
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(1, MAX_CONCURRENCY),
    default=None,
    help="Games played at once (default: the file's concurrency; with --dask,"
    " games in flight, default twice the workers' threads).",
)
@click.option(
    "--dask",
    "dask",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Play the games on the workers of this Dask scheduler (default: the"
    " file's dask key, else this machine).",
)
@click.option(
    "--every",
    type=click.IntRange(0),
    default=10,
    show_default=True,
    help="Print the standings every N games (0: only at the end).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@click.option(
    "--rebuilt",
    multiple=True,
    metavar="ENGINE",
    help="Accept that this engine's program changed since the store was started,"
    " as the same engine (the store records it). Repeatable.",
)
@transcripts_option
@log_options
@handle_errors
def tournament_run(
    file: str | None,
    example: str | None,
    fresh: bool,
    concurrency: int | None,
    dask: str | None,
    every: int,
    quiet: bool,
    rebuilt: tuple[str, ...],
    transcripts_dir: str | None,
) -> None:
    """Play what is left of a tournament and print the Elo table.

    Running the same file again resumes it; adding an engine or raising `rounds` plays
    only the new games. Changing a condition of play needs --fresh.
    """
    from arbiter.results.store import Store
    from arbiter.runs.run import open_executor, run
    from arbiter.runs.tournament import (
        PairingTests,
        check_conditions,
        load_tournament,
        stored_openings,
    )
    from arbiter.views.report import TournamentProgress

    if dask is not None:
        from arbiter.executors.dask import check_address

        check_address(dask, "--dask")
    file, store_folder = _tournament_file(file, example)
    t = load_tournament(file, engines_here=dask is None, store_folder=store_folder)
    for line in shared_folder_warnings(t.engines):
        say(line, err=True)
    if (warning := t.sprt_warning()) is not None:
        say(warning, err=True)
    store, kept = Store.open_for_run(t.output, fresh=fresh, origin=f"{file}: tournament.output")
    with store:
        if kept is not None:
            say(f"The previous store was kept as {kept}.", err=True)
        t, note = stored_openings(t, store)
        if note is not None and not quiet:
            say(note, err=True)
        check_conditions(t, store, rebuilt)
        plan = t.plan(store, _transcripts(transcripts_dir))
        executor = open_executor(
            plan,
            concurrency=concurrency,
            dask=dask or t.dask,
            where="--dask" if dask else f"{t.path}: tournament.dask",
        )
        if not (dask or t.dask):
            option = "--concurrency" if concurrency else f"{t.path}: tournament.concurrency ="
            _warn_oversubscribed(concurrency or t.concurrency, plan.left, option)

        # The run's own tests, kept up to date as games are stored: the tables every
        # few games need not read the store's games again.
        tests = next((sink for sink in plan.sinks if isinstance(sink, PairingTests)), None)

        def tables(full: bool = False) -> str:
            """The standings; with tests, every pairing's at the end (`full`), and in a
            progress block a summary and the tests that changed since the last one."""
            parts = [*t.summary(plan.games), _store_standings(store)]
            if tests is not None:
                lines = (
                    [f"{a} vs {b}: {v.line(t.rounds)}" for (a, b), v in tests.verdicts()]
                    if full
                    else tests.progress(t.rounds)
                )
                parts.append("\n".join(lines))
            return "\n\n".join(parts)

        stored = t.stored(store, plan.games)
        progress = TournamentProgress(
            sys.stderr, t.total, tables, done=stored, every=every, quiet=quiet
        )
        if not quiet:
            say(
                f"Tournament {t.name}: {t.total} games, {stored} stored, {plan.left} to play"
                f"{_unneeded(t, t.total - stored - plan.left)} ({t.output})",
                err=True,
            )
        try:
            outcome = run_trio(functools.partial(run, plan, executor, progress))
        except KeyboardInterrupt:
            progress.close()
            say(tables(full=True))
            say("Stopped: games in flight were not stored and are replayed on resume.")
            raise
        finally:
            progress.close()
        if outcome.config_error:
            raise ConfigError(outcome.aborted, hint="choose another engine or variant")
        store.verify()  # never a table over games nobody will find
        _, outside = _outside(t, store, plan.games)
        say(tables(full=True))
        for line in _tournament_notes(store, outside) + outcome.notes:
            say(line)
        if outcome.unplayed:
            say(
                f"Given up after repeated voids: {len(outcome.unplayed)} games"
                " (run again to retry them)."
            )
        if outcome.aborted:
            say(f"Tournament stopped: {outcome.aborted}")
        if outcome.aborted or outcome.unplayed or outcome.left_out:
            sys.exit(1)


@tournament.command(
    "status",
    epilog=examples(
        "arbiter tournament status league.toml",
        "arbiter tournament status match.sqlite --json --by-host",
    ),
)
@example_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--by-host",
    is_flag=True,
    help="Also the standings of each host's games alone (a slow node shows up).",
)
@click.option("--strict", is_flag=True, help="A damaged store row is an error.")
@handle_errors
def tournament_status(
    file: str | None, example: str | None, as_json: bool, by_host: bool, strict: bool
) -> None:
    """Games done and left, current standings, void games and why.

    FILE is a tournament file, an arena file (its store), or the store of a match
    (`arbiter match --store`).

    One snapshot of the store: every number shown is from the same moment, also while
    a run is writing. `done` counts the schedule's games stored; the table rates every
    stored game, and `outside_schedule` says how many of those the schedule no longer
    holds (rounds lowered, engines removed): done + outside_schedule = games.
    """
    from arbiter.results.ratings import DEFAULT_PRIOR
    from arbiter.results.standings import (
        Tally,
        host_heading,
        host_json,
        source_kind,
        standings,
        to_json,
    )
    from arbiter.results.standings import by_host as split_by_host
    from arbiter.results.store import Store
    from arbiter.runs.match import StoredMatch
    from arbiter.runs.tournament import load_tournament

    t: Any
    file, store_folder = _tournament_file(file, example)
    opened = None  # a match's store, read once (opening checks every row written since)
    if file.endswith(".toml"):
        t = _results_file(file, store_folder)
        if not _is_tournament(t):  # an arena: its own status, from its store
            if by_host:
                raise ConfigError(
                    "--by-host is for tournaments and matches",
                    where=file,
                    hint=f"leave it out: arbiter tournament status {file}",
                )
            _arena_status(t, as_json, strict)
            return
    elif source_kind(file) == "store":
        opened = Store.open_read(file)
        try:
            t = StoredMatch.read(opened)  # a match's store: it holds its own schedule
        except BaseException:
            opened.close()
            raise
    else:  # its engines are not started here
        t = load_tournament(file, engines_here=False, store_folder=store_folder)
    kind = "Match" if isinstance(t, StoredMatch) else "Tournament"
    hosts = []
    outside = 0
    starts, start_seconds, attempts = 0, 0.0, 0
    summary: list[str] = []  # what the format shows beside the Elo table
    extra: dict[str, Any] = {}
    tests = None
    left = None  # games still to play: the schedule's not stored, but for decided tests
    if opened is None and not t.output.exists():
        done, voids, board = 0, [], None
        notes: list[str] = []
    else:
        with opened if opened is not None else Store.open_read(t.output) as store:
            _damaged(store, strict)
            schedule = None if kind == "Match" else t.schedule(store)
            done, outside = _outside(t, store, schedule)
            if schedule is not None:
                summary, extra = t.summary(schedule), t.summary_json(schedule)
                left = t.left(schedule, done)
            voids = store.void_summary()
            tally = Tally.from_store(store)
            board = standings(tally, prior=DEFAULT_PRIOR) if tally.games else None
            notes = _tournament_notes(store, outside)
            starts, start_seconds = store.engine_starts()
            attempts = store.games_stored() + store.void_count()
            if by_host:
                hosts = split_by_host(store)
            if kind == "Tournament" and t.sprt is not None:
                tests = t.tests(store)
                left = t.left_undecided(store, tests)
    left = t.total - done if left is None else left
    verdicts = [] if tests is None else tests.verdicts()
    if as_json:
        data: dict[str, Any] = {
            "tournament": t.name,
            "kind": kind.lower(),
            "store": str(t.output),
            "scheduled": t.total,
            "done": done,
            "left": left,
            "outside_schedule": outside,
            "voids": [{"termination": a, "reason": b, "count": n} for a, b, n in voids],
            "engine_starts": {
                "count": starts,
                "seconds": start_seconds,
                "per_game": round(starts / attempts, 3) if attempts else None,
            },
        }
        data.update(
            to_json(board)
            if board is not None
            else {
                "engines": [],
                "seat_advantage": {"elo": None, "error": None},
                "games": 0,
                "prior": DEFAULT_PRIOR,
                "connected": True,
                "components": None,
            }
        )
        data.update(extra)
        if by_host:
            data["hosts"] = [host_json(h) for h in hosts]
        if kind == "Tournament" and t.sprt is not None:
            data["sprt"] = [{"engines": list(pair), **v.as_json()} for pair, v in verdicts]
        emit(json.dumps(data))
        return
    unneeded = _unneeded(t, t.total - done - left) if kind == "Tournament" else ""
    say(f"{kind} {t.name}: {done} of {t.total} games played, {left} left{unneeded} ({t.output})")
    from arbiter.results.standings import table

    for text in summary:
        say(text)
        say("")
    say(table(board) if board is not None else "No rated games yet.")
    if starts:
        per_game = f", {starts / attempts:.2f} per game played" if attempts else ""
        say(f"Engines were started {starts} times{per_game}, taking {start_seconds:.1f} s in all.")
    for (a, b), verdict in verdicts:
        say(f"{a} vs {b}: {verdict.line(t.rounds)}")
    for line in notes:
        say(line)
    for h in hosts:
        say("")
        say(host_heading(h))
        say(table(h.board))


@tournament.command(
    "export",
    epilog=examples(
        "arbiter tournament export league.toml --records /dev/stdout | head",
        "arbiter tournament export hex.toml --format sgf --out hex.sgf",
    ),
)
@example_option
@click.option(
    "--records",
    "records_out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write every stored game to this JSON Lines file (void attempts too);"
    " a device or pipe (/dev/stdout, a FIFO) is streamed to.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "sgf"]),
    default=None,
    help="What --out holds: jsonl, as --records; sgf, every rated Hex game as one SGF"
    " collection (as HexGui writes them; Atoll has no standard format).  [default: jsonl]",
)
@click.option(
    "--out",
    "-o",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write the games in --format to this file; a device or pipe is streamed to.",
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option("--strict", is_flag=True, help="A damaged store row is an error.")
@handle_errors
def tournament_export(
    file: str | None,
    example: str | None,
    records_out: str | None,
    fmt: str | None,
    out: str | None,
    force: bool,
    strict: bool,
) -> None:
    """Write every stored game as a records line, void attempts flagged, or the rated
    Hex games as SGF.

    FILE is a tournament file, an arena file (its store), or the store of a match
    (`arbiter match --store`)."""
    from arbiter.outfile import write_lines
    from arbiter.results.standings import source_kind
    from arbiter.results.store import Store, store_files

    if (records_out is None) == (out is None):
        raise ConfigError(
            "give --records FILE or --out FILE"
            if out is None
            else "give either --records or --out, not both",
            where="--records/--out",
            hint="--records FILE writes JSON lines, --format sgf --out FILE SGF",
        )
    if records_out is not None and fmt == "sgf":
        raise ConfigError(
            "--records writes JSON lines, not SGF",
            where="--format",
            hint="write SGF with --format sgf --out FILE",
        )
    sgf = fmt == "sgf"
    out = out if out is not None else records_out
    assert out is not None
    option = "--out" if records_out is None else "--records"
    suffix = ".sgf" if sgf else ".jsonl"
    file, store_folder = _tournament_file(file, example)
    if not file.endswith(".toml") and source_kind(file) == "store":
        store_path, own = Path(file), [Path(file)]  # a match's store holds its own schedule
    else:  # a tournament or arena file; its engines are not started here
        t = _results_file(file, store_folder)
        store_path, own = t.output, [t.path]
    target = resolved(out, option)
    protected = {*(resolved(p) for p in own), *store_files(store_path)}
    if target in protected:
        raise ConfigError(
            f"the {'SGF' if sgf else 'records'} file would overwrite the tournament's own files",
            where=out,
            hint=f"choose a new {suffix} path",
        )
    with Store.open_read(store_path) as store:
        _damaged(store, strict)
        if sgf:
            _export_sgf(store, out, force)
            return
        n = write_lines(out, store.record_lines(), force=force, hint="choose a new .jsonl path")
    say(f"Wrote {n} records to {output_name(out)}.", err=True)


def _export_sgf(store: Any, out: str, force: bool) -> None:
    """The store's rated Hex games as one SGF collection, in the order they were played;
    refused (before anything is written) when there is none, saying why."""
    from arbiter.outfile import write_lines
    from arbiter.results.records import GameRecord
    from arbiter.views import sgf as sgf_format

    found = sgf_format.census(store.records())
    if not found.written:
        if found.atoll:
            raise ConfigError(
                f"the store holds Atoll games; {sgf_format.NO_STANDARD_FORMAT}",
                where=out,
                hint=sgf_format.USE_RECORDS,
            )
        raise ConfigError(
            "the store holds no rated game to write as SGF",
            where=out,
            hint="export once games have been played",
        )
    selection = sgf_format.Selection()
    records = (GameRecord.from_json(data) for data, _ in store.records())
    write_lines(
        out, sgf_format.collection(records, selection), force=force, hint="choose a new .sgf path"
    )
    say(f"Wrote {sgf_format.games(selection.written)} as SGF to {output_name(out)}.", err=True)
    for note in selection.notes():
        say(note, err=True)


# --------------------------------------------------------------------- ratings


def _anchors(texts: Sequence[str]) -> dict[str, float]:
    """The --anchor values (each NAME=ELO) as engine name: Elo, in the order given."""
    out: dict[str, float] = {}
    for text in texts:
        name, elo = _anchor(text)
        if name in out:
            raise ConfigError(
                f"--anchor names {name!r} twice (at {out[name]:g} and {elo:g})",
                hint="give each anchored engine one rating",
            )
        out[name] = elo
    return out


def _anchor(text: str) -> tuple[str, float]:
    name, sep, value = text.rpartition("=")
    try:
        elo = float(value) if sep and name else float("x")
    except ValueError as exc:
        raise ConfigError(
            f"bad --anchor {text!r}", hint="write it as NAME=ELO, e.g. random=0"
        ) from exc
    if not abs(elo) <= MAX_ELO:  # also refuses nan
        raise ConfigError(
            f"--anchor Elo {value} is out of range",
            hint=f"give a rating between -{MAX_ELO} and {MAX_ELO}",
        )
    return name, elo


@main.command(
    epilog=examples(
        "arbiter ratings tournaments/demo.toml --matrix",
        "arbiter ratings a.sqlite b.jsonl --anchor random=0 --anchor mcts=1500 --format markdown",
    )
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--prior",
    type=FiniteFloat(0),
    default=None,
    help="Virtual games per engine, scored 50% against the pool mean, that keep"
    " all-win and all-loss engines finite; 0 is plain maximum likelihood."
    "  [default: 2]",
)
@click.option(
    "--anchor",
    "anchors",
    multiple=True,
    metavar="NAME=ELO",
    help="Hold this engine at this rating and fit the others against it; repeat it to"
    " anchor several engines (default: the pool mean is 0).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--matrix",
    is_flag=True,
    help="Add the head-to-head table: each pairing's own Elo estimate beside the pool"
    " fit's difference (with --format csv it is printed instead of the leaderboard, one"
    " table per file; with json it is the key 'matrix').",
)
@click.option(
    "--split-by",
    "split_by",
    default=None,
    metavar="conditions|KEY,...",
    help="Rate an engine's games under different conditions as different engines, named"
    " NAME [VALUES]: 'conditions' for all, or a comma list of tc, board, version"
    " (the engine's answer), command.  [default: one engine per name, with a warning]",
)
@click.option("--strict", is_flag=True, help="A line that is not a valid record is an error.")
@handle_errors
def ratings(
    sources: tuple[str, ...],
    prior: float | None,
    anchors: tuple[str, ...],
    fmt: str,
    as_json: bool,
    matrix: bool,
    split_by: str | None,
    strict: bool,
) -> None:
    """The leaderboard of tournament or arena files, stores or records files (combined).

    Bradley-Terry maximum likelihood over all games jointly, with a seat-1 advantage
    term; errors are 95% intervals. Void games are skipped. An engine name whose games
    were played under different conditions (time control, board, version, command) is
    named on stderr with what differs and where; --split-by rates them apart.
    """
    from arbiter.results.standings import matrix as matrix_table
    from arbiter.results.standings import split_keys, table

    split: tuple[str, ...] = ()
    if split_by is not None:
        try:
            split = split_keys(split_by)
        except ValueError as exc:
            raise ConfigError(
                str(exc),
                where="--split-by",
                hint="e.g. --split-by conditions, or --split-by tc,version",
            ) from exc
    board, _ = _gathered_standings(sources, prior, anchors, strict, split=split)
    if as_json or fmt == "json":
        from arbiter.results.standings import to_json

        emit(json.dumps(to_json(board, matrix=matrix)))
        return
    if fmt == "csv" and matrix:
        say(matrix_table(board, fmt))
        return
    say(table(board, fmt))
    if matrix:
        say("")
        say(matrix_table(board, fmt))


@main.command(
    epilog=examples(
        "arbiter report tournaments/demo.toml -o demo.html",
        "arbiter report a.sqlite b.sqlite -o both.html --title 'Spring league'",
    )
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write (one self-contained page).",
)
@click.option("--title", default=None, help="The page title (default: the tournament name).")
@click.option("--prior", type=FiniteFloat(0), default=None, help="As for `ratings`.  [default: 2]")
@click.option(
    "--anchor",
    "anchors",
    multiple=True,
    metavar="NAME=ELO",
    help="Hold this engine at this rating and fit the others against it; repeat it to"
    " anchor several engines (default: the pool mean is 0).",
)
@click.option(
    "--games",
    "recent",
    type=click.IntRange(0),
    default=1000,
    show_default=True,
    help="Embed the N most recent games in the game list and the viewer (besides the"
    " most recent 500 games lost by a fault or void and the last 2 of each pairing);"
    " the tables count every game whatever is embedded.",
)
@click.option(
    "--all-games",
    is_flag=True,
    help="Embed every game (a page of about 350 bytes a game: 35 MB at 100,000 games).",
)
@click.option("--strict", is_flag=True, help="A line that is not a valid record is an error.")
@handle_errors
def report(
    sources: tuple[str, ...],
    output: str,
    title: str | None,
    prior: float | None,
    anchors: tuple[str, ...],
    recent: int,
    all_games: bool,
    strict: bool,
) -> None:
    """Write a tournament report: one HTML page that works offline.

    SOURCES as for `ratings` (tournament files, stores, records files, combined). The
    page has the leaderboard, a plot of the ratings, the cross table, the conditions of
    play of each source, the games in schedule order (filterable, and as a records file
    to download) and a viewer that replays each game on the board.

    Every table counts every game; the game list, the viewer and the download embed a
    selection (--games, --all-games), so that the page stays light at a million games.
    The page says how many games it leaves out and how to see them.
    """
    from arbiter.results.standings import Games, Selection
    from arbiter.views.html import render_gathered

    if resolved(output, "--output") in {resolved(s) for s in sources}:
        raise ConfigError(
            "the report would overwrite one of its sources",
            where=output,
            hint="choose a new .html path",
        )
    selection = Selection(recent=None if all_games else recent)
    keep = Games(selection=selection)
    board, names = _gathered_standings(sources, prior, anchors, strict, keep)
    heading = title or (", ".join(names) if names else "Atoll games")
    records = keep.records
    page = render_gathered(
        board,
        keep,
        title=heading,
        sources=[Path(s).name for s in sources],
        download=Path(output).stem + "-games.jsonl",
        tests=_pairing_tests(sources),
        formats=_format_results(sources),
        selection=None if all_games else selection,
    )
    _write_whole(output, [page], (b"<!doctype html",))
    left = keep.read - len(records)
    say(
        f"Wrote {output_name(output)}: {board.games} rated games, {len(records)} in the viewer"
        + (f" ({left} more not embedded: --games N or --all-games embeds them)" if left else "")
        + f" ({len(page.encode()) / 1e6:.2f} MB).",
        err=True,
    )


def _format_results(sources: tuple[str, ...]) -> list[Any]:
    """Each tournament file's own result under its format (a Swiss's standings with its
    tie-breaks, an adaptive run's budget and stop rule), as `tournament status` gives it."""
    from arbiter.results.store import Store
    from arbiter.views.html import FormatResult

    out = []
    for source in sources:
        if not source.endswith(".toml"):
            continue
        t = _results_file(source)
        if not _is_tournament(t) or not t.output.exists():
            continue
        with Store.open_read(t.output) as store:
            schedule = t.schedule(store)
            data = t.summary_json(schedule)
            if data:
                out.append(FormatResult(Path(source).name, data, t.summary(schedule)))
    return out


def _pairing_tests(sources: tuple[str, ...]) -> list[Any]:
    """Each tournament file's tested pairings, as its store leaves them."""
    from arbiter.results.store import Store

    out = []
    for source in sources:
        if not source.endswith(".toml"):
            continue
        t = _results_file(source)
        if not _is_tournament(t) or t.sprt is None or not t.output.exists():
            continue
        with Store.open_read(t.output) as store:
            tests = t.tests(store)
        assert tests is not None
        out += [(Path(source).name, t.sprt, pair, v, t.rounds) for pair, v in tests.verdicts()]
    return out


@main.group(
    epilog=examples(
        "arbiter arena serve arena.toml",
        "arbiter arena connect arena.example.org:8080 --name alice --token T mybot",
    )
)
def arena() -> None:
    """A continuous rated ladder that engines connect to over the network."""


@arena.command(
    "serve",
    epilog=examples("arbiter arena serve arena.toml", "arbiter arena serve arena.toml -v"),
)
@click.argument("file", type=click.Path(dir_okay=False))
@log_options
@handle_errors
def arena_serve(file: str) -> None:
    """Run the arena of FILE until stopped: engines connect, play and are rated.

    The server listens on the file's `listen` address: browsers read the live page at
    `/`, engines connect at `/engine` (`arbiter arena connect`). Ctrl-C or SIGTERM stops
    it; games in flight are void and never stored, and the next start goes on from the
    store. TLS belongs in a reverse proxy in front (docs/guide/arena.md)."""
    from arbiter.arena.config import load_arena
    from arbiter.arena.serve import serve

    spec = load_arena(file)
    run_trio(functools.partial(serve, spec, lambda line: say(line, err=True)))


@arena.command(
    "connect",
    epilog=examples(
        "arbiter arena connect 127.0.0.1:8080 --name alice --token T heuristic",
        "arbiter arena connect wss://arena.example.org --name alice --token T"
        " 'alice=./alice --threads 4'",
    ),
)
@click.argument("address")
@click.argument("engine")
@click.option("--name", required=True, help="The name the arena knows this engine by.")
@click.option(
    "--token",
    default=None,
    envvar="ARBITER_ARENA_TOKEN",
    help="The token `arbiter arena token` printed (or set ARBITER_ARENA_TOKEN, which keeps"
    " it out of the process list).",
)
@click.option(
    "--engines",
    "engines_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Engines file for ENGINE names (default: engines/engines.toml here, then the"
    " bundled bots).",
)
@click.option(
    "--sessions",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Engine processes to run, each playing one game at a time (up to the"
    " games_at_once of the arena's entry for NAME).",
)
@log_options
@handle_errors
def arena_connect(
    address: str, engine: str, name: str, token: str | None, engines_file: str | None, sessions: int
) -> None:
    """Run ENGINE here and relay it to the arena at ADDRESS until stopped.

    ADDRESS is HOST:PORT, or a ws:// or wss:// URL. ENGINE is a name from an engines
    file, a bundled bot or NAME=COMMAND, with its dialect keys. A dropped connection or a
    restarted server is reconnected to with backoff, and the engine is kept running
    across it; a refused name or token is one line and exit status 2."""
    from arbiter.arena.client import Refused, arena_url, connect
    from arbiter.engines.config import check_name

    if not token:
        raise ConfigError(
            "no token",
            where="--token",
            hint="give --token or set ARBITER_ARENA_TOKEN; the arena's"
            " organiser makes one with `arbiter arena token NAME`",
        )
    check_name(name, "--name")
    url = arena_url(address)
    spec = resolve_engine(engine, _engines(engines_file))
    try:
        run_trio(
            functools.partial(
                connect, url, name, token, spec, lambda line: say(line, err=True), sessions
            )
        )
    except Refused as exc:
        raise ConfigExit(one_line(f"the arena refused {name}: {exc}")) from exc
    except BaseExceptionGroup as group:
        refused = group.subgroup(Refused)
        if refused is not None:
            raise ConfigExit(
                one_line(f"the arena refused {name}: {_first_leaf(refused)}")
            ) from group
        raise


@arena.command(
    "token",
    epilog=examples("arbiter arena token alice", "arbiter arena token alice --games-at-once 2"),
)
@click.argument("name")
@click.option(
    "--games-at-once",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Games this engine may play at the same time.",
)
@handle_errors
def arena_token(name: str, games_at_once: int) -> None:
    """Print a new token for NAME on the first line, then the [[player]] entry to paste
    into the arena file (it holds a salted hash of the token, never the token)."""
    from arbiter.arena.config import hash_token, new_token
    from arbiter.engines.config import check_name

    check_name(name, "NAME")
    token = new_token()
    emit(token)
    entry = f'\n[[player]]\nname = {json.dumps(name)}\ntoken_hash = "{hash_token(token)}"\n'
    if games_at_once != 1:
        entry += f"games_at_once = {games_at_once}\n"
    emit(entry)
    say(
        f"Give the token (the first line) to {name}'s owner; paste the rest into the arena"
        " file and restart the server.",
        err=True,
    )


@arena.command(
    "status",
    epilog=examples("arbiter arena status arena.toml", "arbiter arena status arena.toml --json"),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@handle_errors
def arena_status(file: str, as_json: bool) -> None:
    """The arena's games so far and its ratings (anchors held at theirs), from its store.

    It reads the store only, and works while the server runs."""
    from arbiter.arena.config import load_arena

    _arena_status(load_arena(file, engines_here=False), as_json, strict=False)


def _arena_status(spec: Any, as_json: bool, strict: bool) -> None:
    """`arena status`, and `tournament status` of an arena file."""
    from arbiter.results.store import Store

    if not spec.output.exists():
        raise ConfigError(
            f"no store yet at {spec.output}",
            where=str(spec.path),
            hint=f"start the server: arbiter arena serve {spec.path}",
        )
    with Store.open_read(spec.output) as store:
        _damaged(store, strict)
        stored, voids = store.games_stored(), store.void_count()
    from arbiter.arena.web import arena_standings

    board = arena_standings(spec.output, spec.anchors) if stored else None
    if as_json:
        from arbiter.results.standings import to_json

        data: dict[str, Any] = {
            "arena": spec.name,
            "store": str(spec.output),
            "games": stored,
            "void_attempts": voids,
            "anchors": dict(spec.anchors),
        }
        if board is not None:
            data["standings"] = to_json(board)
        emit(json.dumps(data))
        return
    say(f"Arena {spec.name}: {stored} games stored, {voids} void attempts, in {spec.output}.")
    if board is not None:
        from arbiter.results.standings import table

        say(table(board))


@arena.command(
    "export",
    epilog=examples("arbiter arena export arena.toml --records games.jsonl"),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--records",
    "records_out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Write every stored game to this JSON Lines file (void attempts too).",
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option("--strict", is_flag=True, help="A damaged store row is an error.")
@click.pass_context
@handle_errors
def arena_export(
    ctx: click.Context, file: str, records_out: str, force: bool, strict: bool
) -> None:
    """Write the arena's games as records (what `ratings`, `report` and `show` read)."""
    from arbiter.arena.config import load_arena

    spec = load_arena(file, engines_here=False)
    if resolved(records_out, "--records") == spec.path.resolve():
        raise ConfigError(
            "the records file would overwrite the arena file",
            where=records_out,
            hint="choose a new .jsonl path",
        )
    ctx.invoke(
        tournament_export,
        file=str(spec.output),
        example=None,
        records_out=records_out,
        fmt=None,
        out=None,
        force=force,
        strict=strict,
    )


def _gathered_standings(
    sources: tuple[str, ...],
    prior: float | None,
    anchors: Sequence[str],
    strict: bool,
    keep: Any = None,
    split: tuple[str, ...] | None = None,
) -> tuple[Any, list[str]]:
    """The standings of SOURCE arguments combined (as `ratings` and `report` read them),
    and the tournament names met; duplicates, skipped lines and engines whose games were
    played under different conditions said on stderr. With `keep` (standings.Games), the
    records counted are kept there; `split` (condition keys) rates an engine's games
    under different conditions apart (None: the command has no --split-by)."""
    from arbiter.results.ratings import DEFAULT_PRIOR
    from arbiter.results.standings import Identities, gather, standings

    pinned = _anchors(anchors)  # before reading: a mistyped option costs no time
    # A tournament file stands for its store, and gives the report its schedule's order.
    stores = []
    for index, source in enumerate(sources):
        if not source.endswith(".toml"):
            stores.append(source)
            continue
        t = _results_file(source)
        stores.append(str(t.output))
        if keep is not None and _is_tournament(t):
            keep.schedules[index] = {game_id: n for n, game_id in enumerate(t.ids())}
    identities = Identities(split or ())
    tally, bad, names = gather(stores, keep, identities, labels=list(sources))
    if tally.duplicates:
        say(
            f"{tally.duplicates} games appeared in more than one source and were counted once.",
            err=True,
        )
    from arbiter.results.store import READ_HINT, Damage

    for line in bad:
        if strict:
            raise ConfigError(
                str(line),
                hint=READ_HINT
                if isinstance(line, Damage)
                else "fix or remove the line, or leave out --strict",
            )
        say(f"skipped {line}", err=True)
    if not tally.games:
        raise ConfigError(
            "no rated games in " + ", ".join(sources),
            hint="give records files, a store or a tournament file with games",
        )
    labels = identities.labels() if split else {}
    for note in identities.split_lines(labels) if split else []:
        say(note, err=True)
    remedy = (
        "; --split-by conditions rates them apart"
        if split is not None
        else "; `arbiter ratings --split-by conditions` rates them apart"
    )
    for mixed in identities.mixed():
        say(f"Warning: {mixed}{remedy}.", err=True)
    if prior is not None and not 0 <= prior <= 1e6:  # also refuses nan
        raise ConfigError(f"--prior {prior} is out of range", hint="give 0 to 1000000 games")
    for anchor in pinned:
        if anchor in tally.names:
            continue
        split_names = identities.split_names(anchor, labels)
        if split_names:
            raise ConfigError(
                f"--anchor names {anchor!r}, whose games are rated apart"
                f" by {', '.join(split or ())}",
                hint="anchor one of " + ", ".join(repr(n) for n in split_names),
            )
        raise ConfigError(
            f"--anchor names {anchor!r}, which has no games here",
            hint=f"engines: {', '.join(list(tally.names)[:20])}",
        )
    board = standings(
        tally, prior=DEFAULT_PRIOR if prior is None else prior, anchors=pinned or None
    )
    return board, names


def run() -> None:
    """The `arbiter` program: the command line, as the guardian of the engines it starts."""
    from arbiter.engines.reaper import guard, reap_orphans
    from arbiter.running import install_signal_handlers

    install_signal_handlers()
    guard()  # engines die with this process; what they leave behind is adopted and killed
    try:
        main()
    finally:
        reap_orphans()


if __name__ == "__main__":
    run()
