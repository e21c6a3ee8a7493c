"""The `arbiter` command line: option parsing, one trio.run per command, exit codes.

Exit status: 0 success, 1 a check or run that failed, 2 bad usage or configuration,
130 interrupted.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from arbiter.clock import TimeControl
from arbiter.config import load_engines, resolve_engine
from arbiter.errors import ArbiterError, ConfigError
from arbiter.process import EngineSpec
from arbiter.records import RecordWriter, read_records
from arbiter.referee import RefereeConfig
from arbiter.rules import IllegalMove, Variant
from arbiter.running import run_trio

F = TypeVar("F", bound=Callable[..., Any])


class ConfigExit(click.ClickException):
    exit_code = 2


def _first_leaf(group: BaseExceptionGroup[ArbiterError]) -> ArbiterError:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    assert isinstance(exc, ArbiterError)
    return exc


def handle_errors(func: F) -> F:
    """Turn the harness's errors into one clear line and the documented exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ConfigError as exc:
            raise ConfigExit(str(exc)) from exc
        except ArbiterError as exc:
            raise click.ClickException(str(exc)) from exc
        except KeyboardInterrupt:
            click.echo("Interrupted; engines were stopped.", err=True)
            sys.exit(130)
        except BaseExceptionGroup as group:
            if group.subgroup(KeyboardInterrupt) is not None:
                click.echo("Interrupted; engines were stopped.", err=True)
                sys.exit(130)
            ours = group.subgroup(ArbiterError)
            if ours is None:
                raise
            first = _first_leaf(ours)
            if isinstance(first, ConfigError):
                raise ConfigExit(str(first)) from group
            raise click.ClickException(str(first)) from group

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="atoll-arbiter")
def main() -> None:
    """Atoll Arbiter: referee and tournament harness for Atoll and Hex engines."""


def _variant(islands: int, size: int | None, pie: bool) -> Variant:
    try:
        return Variant(islands, size if size is not None else 11, pie)
    except ValueError as exc:
        raise ConfigError(str(exc), where="--size/--islands") from exc


def _engines(engines_file: str | None) -> dict[str, EngineSpec]:
    return load_engines(engines_file) if engines_file else {}


@main.command()
@click.argument("engine1")
@click.argument("engine2")
@click.option("--engines", "engines_file", type=click.Path(dir_okay=False),
              help="TOML file defining engines by name.")
@click.option("--games", "-n", default=2, show_default=True, type=click.IntRange(1),
              help="Games to play; consecutive games swap seats (an even number balances"
                   " them).")
@click.option("--tc", "tcs", multiple=True, metavar="TC",
              help="Time control: BASE+INC seconds (10+0.1), MOVES/BASE+INC (40/60+0.5: BASE"
                   " again every 40 moves), st=S (S seconds per move) or inf. Give it twice"
                   " for one per engine, in ENGINE1, ENGINE2 order.  [default: 10+0.1]")
@click.option("--size", type=int, default=None, help="Board size (Atoll: 7, 11, 15, 19, 23;"
              " Hex: 2-26).  [default: 11]")
@click.option("--islands", type=click.Choice(["8", "4"]), default="8", show_default=True,
              help="8 for Atoll, 4 for Hex.")
@click.option("--pie/--no-pie", default=True, show_default=True, help="Allow the swap on move 2.")
@click.option("--concurrency", "-c", default=1, show_default=True, type=click.IntRange(1),
              help="Games played at once.")
@click.option("--records", type=click.Path(dir_okay=False),
              help="Append one JSON line per game to this file.")
@click.option("--seed", type=int, default=None,
              help="Recorded with each game (per-game seeds derive from it); engines do not"
                   " receive it.")
@click.option("--margin", type=float, default=0.1, show_default=True,
              help="Seconds an engine may overrun its clock before losing on time.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@handle_errors
def match(
    engine1: str, engine2: str, engines_file: str | None, games: int, tcs: tuple[str, ...],
    size: int | None, islands: str, pie: bool, concurrency: int, records: str | None,
    seed: int | None, margin: float, as_json: bool, quiet: bool,
) -> None:  # fmt: skip
    """Play a match between two engines.

    ENGINE is a name from --engines or a command line run without a shell,
    e.g. "python3 my_bot.py --level 3".
    """
    from arbiter.match import Match, MatchConfig
    from arbiter.report import Progress, summary_json, summary_lines

    known = _engines(engines_file)
    specs = (resolve_engine(engine1, known, engines_file),
             resolve_engine(engine2, known, engines_file))  # fmt: skip
    if len(tcs) > 2:
        raise ConfigError("--tc given more than twice", hint="one for both, or one per engine")
    parsed = [TimeControl.parse(t) for t in tcs] or [TimeControl.parse("10+0.1")]
    tc = (parsed[0], parsed[-1])
    if margin < 0:
        raise ConfigError("--margin must not be negative")
    config = MatchConfig(
        games=games, variant=_variant(int(islands), size, pie), tc=tc,
        concurrency=concurrency, seed=seed, referee=RefereeConfig(margin=margin),
    )  # fmt: skip
    writer = RecordWriter(records) if records else None
    progress = Progress(sys.stderr, games, quiet=quiet)
    runner = Match(specs, config, writer=writer, on_start=progress.started,
                   on_finish=progress.game_finished)  # fmt: skip
    try:
        result = run_trio(runner.run)
    finally:
        progress.close()
        if writer is not None:
            writer.close()
    if result.config_error:
        raise ConfigError(result.aborted, hint="choose another engine or variant")
    if as_json:
        click.echo(json.dumps(summary_json(result)))
    else:
        for line in summary_lines(result):
            click.echo(line)
    if result.aborted:
        sys.exit(1)


@main.command()
@click.argument("records", type=click.Path(dir_okay=False))
@click.option("--game", "game_id", default=None,
              help="Game id or game number (default: the last game in the file).")
@click.option("--ply", type=int, default=None, help="Show the position after this many plies.")
@handle_errors
def show(records: str, game_id: str | None, ply: int | None) -> None:
    """Print a recorded game as a board."""
    from arbiter.report import describe_game

    chosen = None
    ids = []
    for record in read_records(records):
        ids.append(record.game_id)
        if game_id is None or game_id in (record.game_id, record.game_id.rsplit("-", 1)[-1]):
            chosen = record  # by id, or by game number (the latest game with that number)
    if chosen is None:
        if game_id is None:
            raise ConfigError("the file holds no games", where=records)
        sample = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
        raise ConfigError(f"no game {game_id!r}", where=records,
                          hint=f"give an id or a game number; ids here: {sample}")  # fmt: skip
    if ply is not None and not 0 <= ply <= len(chosen.moves):
        raise ConfigError(f"--ply {ply} is out of range",
                          hint=f"the game has {len(chosen.moves)} plies")  # fmt: skip
    try:
        lines = describe_game(chosen, ply)
    except IllegalMove as exc:
        raise ConfigError(str(exc), where=f"{records}: game {chosen.game_id}") from exc
    for line in lines:
        click.echo(line)


@main.command()
@click.argument("engine")
@click.option("--engines", "engines_file", type=click.Path(dir_okay=False),
              help="TOML file defining engines by name.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--timeout", type=float, default=10.0, show_default=True,
              help="Seconds allowed for each answer.")
@handle_errors
def check(engine: str, engines_file: str | None, as_json: bool, timeout: float) -> None:
    """Check that an engine follows the protocol (for bot authors)."""
    from arbiter.check import run_checks, summary_table

    spec = resolve_engine(engine, _engines(engines_file), engines_file)
    results = run_trio(functools.partial(run_checks, spec, timeout=timeout))
    if as_json:
        click.echo(json.dumps([r.to_json() for r in results], indent=2))
    else:
        click.echo(summary_table(results))
    if not all(r.passed for r in results if r.required):
        sys.exit(1)


if __name__ == "__main__":
    main()
