"""Every option that more than one command takes, declared once (as pip's `cmdoptions`).

A shared option is a factory: `@options.strict_store()` declares it as every command
has it, and a keyword changes one attribute where a command's help says more
(`@options.fresh(help=...)`). The values they give are turned into the harness's own
types here too (`known_engines`, `transcript_folder`, `parse_anchors`), so that every
command reads an option the same way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from arbiter import logs
from arbiter.cli.outfile import STDOUT
from arbiter.engines.config import EnginesFile, KnownEngines, default_engines_file
from arbiter.errors import ConfigError
from arbiter.runs.tournament import MAX_CONCURRENCY
from arbiter.text import one_line

from .output import ConfigExit

F = TypeVar("F", bound=Callable[..., Any])

# With --sprt and no --games: the test decides long before (a 5 Elo difference takes
# some thousands of games); the cap only keeps a test between two equal engines finite.
SPRT_GAMES = 20_000
MAX_ELO = 100_000  # bounds for the Elo values people give (--sprt, --anchor)


class FiniteFloat(click.FloatRange):
    """A float option that must be a finite number: `nan` passes every range comparison
    and `inf` every lower bound, so both are refused here, before anything uses them."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


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


def examples(*lines: str) -> str:
    """A command's help ends with examples, kept as written (click rewraps text)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def _shared(*decls: str, **attrs: Any) -> Callable[..., Callable[[F], F]]:
    """An option declared once; a command may change an attribute (its help, mostly)."""

    def option(**changes: Any) -> Callable[[F], F]:
        return click.option(*decls, **{**attrs, **changes})

    return option


engines_file = _shared(
    "--engines",
    "engines_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML file defining engines by name; its names win over the bundled bots'.",
)
as_json = _shared("--json", "as_json", is_flag=True, help="Print one JSON object.")
quiet = _shared("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
strict_store = _shared("--strict", is_flag=True, help="A damaged store row is an error.")
strict_records = _shared(
    "--strict", is_flag=True, help="A line that is not a valid record is an error."
)
force = _shared("--force", is_flag=True, help="Replace the output file if it exists.")
fresh = _shared(
    "--fresh", is_flag=True, help="Start a new store; the old one is kept under a dated name."
)
rebuilt = _shared(
    "--rebuilt",
    multiple=True,
    metavar="ENGINE",
    help="Accept that this engine's program changed since the store was started,"
    " as the same engine (the store records it). Repeatable.",
)
concurrency = _shared(
    "--concurrency",
    "-c",
    type=click.IntRange(1, MAX_CONCURRENCY),
    default=None,
    help="Games played at once.",
)
dask = _shared(
    "--dask",
    "dask",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Play the games on the workers of this Dask scheduler (default: this machine).",
)
seed = _shared("--seed", type=int, default=None, help="The seed.")
sandbox = _shared(
    "--sandbox",
    is_flag=True,
    help="Run both engines under bubblewrap (see the guide on untrusted bots).",
)
room = _shared(
    "--room",
    default=None,
    metavar="NAME",
    help="The room to read, where an arena file has [[room]] tables (needed where it has several).",
)
board_filter = _shared(
    "--variant",
    default=None,
    metavar="BOARD",
    help="Only this board, as the map names it (atoll-8/11, hex/11).",
)
transcripts = _shared(
    "--transcripts",
    "transcripts_dir",
    type=click.Path(file_okay=False),
    default=None,
    callback=no_dash("transcripts are files of their own in a folder"),
    help="Write each game's full protocol transcript (both engines, timed, as cutechess's"
    " debug log; at most 1 MiB of exchanges a game, its start and its end) to a file of"
    " its own in this folder, made if missing.",
)
records_out = _shared(
    "--records",
    "records_out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write every stored game to this JSON Lines file (void attempts too).",
)
records_append = _shared(
    "--records",
    type=click.Path(dir_okay=False),
    callback=no_dash(
        "the match's summary goes there; write the records to a file, or export"
        " them from --store with `tournament export STORE --records -`"
    ),
    help="Append one JSON line per game to this file.",
)
prior = _shared(
    "--prior",
    type=FiniteFloat(0),
    default=None,
    help="Virtual games per engine, scored 50% against the pool mean, that keep"
    " all-win and all-loss engines finite; 0 is plain maximum likelihood."
    "  [default: 2]",
)
anchor = _shared(
    "--anchor",
    "anchors",
    multiple=True,
    metavar="NAME=ELO",
    help="Hold this engine at this rating and fit the others against it; repeat it to"
    " anchor several engines (default: the pool mean is 0).",
)

# The board and the clocks of a match.
tc = _shared(
    "--tc",
    "tcs",
    multiple=True,
    metavar="TC",
    help="Time control: BASE+INC seconds (10+0.1), MOVES/BASE+INC (40/60+0.5: BASE"
    " again every 40 moves), st=S (S seconds per move) or inf. Give it twice"
    " for one per engine, in ENGINE1, ENGINE2 order.  [default: 10+0.1]",
)
size = _shared(
    "--size",
    type=int,
    default=None,
    help="Board size (Atoll: 7, 11, 15, 19, 23; Hex: 2-26).  [default: 11]",
)
islands = _shared(
    "--islands",
    type=click.Choice(["8", "4"]),
    default="8",
    show_default=True,
    help="8 for Atoll, 4 for Hex.",
)
pie = _shared("--pie/--no-pie", default=True, show_default=True, help="Allow the swap on move 2.")


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


def example_option(func: F) -> F:
    """FILE, or --example NAME: a tournament file installed with arbiter, run from any
    folder, its store in the current folder."""
    from .scaffold import examples as installed

    func = click.argument("file", required=False, type=click.Path(dir_okay=False))(func)
    return click.option(
        "--example",
        type=click.Choice(installed()),
        default=None,
        help="Instead of FILE, a tournament installed with arbiter; its store goes in the"
        " current folder (NAME.sqlite).",
    )(func)


def known_engines(engines_file: str | None) -> KnownEngines:
    """The names an ENGINE argument may use: --engines FILE (or `engines/engines.toml`
    here), then the bundled bots."""
    found = engines_file or default_engines_file()
    return KnownEngines(EnginesFile(found) if found else None)


def transcript_folder(folder: str | None) -> Any:
    """--transcripts DIR as the folder the games write to (None: not asked for)."""
    if folder is None:
        return None
    from arbiter.results.transcripts import TranscriptFolder

    return TranscriptFolder(folder)


def parse_anchors(texts: Sequence[str]) -> dict[str, float]:
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
