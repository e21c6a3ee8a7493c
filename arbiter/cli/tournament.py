"""`arbiter tournament`: run a tournament file, its status, its games exported."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import click

from arbiter.cli.outfile import shown as output_name
from arbiter.engines.config import shared_folder_warnings
from arbiter.errors import ConfigError
from arbiter.results.store import resolved
from arbiter.running import run_trio

from . import options
from .options import example_option, examples
from .output import emit, handle_errors, say
from .sources import (
    damaged,
    no_rooms_here,
    results_file,
    show_arena_status,
    tournament_file,
)


@click.group(
    "tournament",
    epilog=examples(
        "arbiter tournament run tournaments/demo.toml",
        "arbiter tournament status tournaments/demo.toml --json",
    ),
)
def tournament() -> None:
    """Round-robin, gauntlet, Swiss and adaptive tournaments in TOML files, stored in SQLite."""


@tournament.command(
    "run",
    epilog=examples(
        "arbiter tournament run --example demo",
        "arbiter tournament run league.toml --dask tcp://scheduler:8786",
    ),
)
@example_option
@options.fresh()
@options.concurrency(
    help="Games played at once (default: the file's concurrency; with --dask,"
    " games in flight, default twice the workers' threads).",
)
@options.dask(
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
@options.quiet()
@options.rebuilt()
@options.transcripts()
@options.log_options
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
    from arbiter.executors.local import LocalExecutor
    from arbiter.results.store import Store
    from arbiter.runs.match_plan import oversubscribed
    from arbiter.runs.run import open_executor, run
    from arbiter.runs.tournament import (
        PairingTests,
        check_conditions,
        load_tournament,
        stored_openings,
    )
    from arbiter.views.report import TournamentProgress
    from arbiter.views.status import run_end, run_tables, unneeded

    if dask is not None:
        from arbiter.executors.dask import check_address

        check_address(dask, "--dask")
    file, store_folder = tournament_file(file, example)
    t = load_tournament(file, engines_here=dask is None, store_folder=store_folder)
    if t.min_speed is not None and (dask or t.dask):
        raise ConfigError(
            "min_speed refuses the host that runs a tournament; on a Dask cluster the"
            " games are played on the workers",
            where=f"{t.path}: tournament.min_speed",
            hint="leave min_speed out for a cluster: each worker's speed factor is"
            " recorded, and `arbiter tournament status --by-host` shows a slow host",
        )
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
        if t.calibrated() and not (dask or t.dask):
            t = on_this_host(t, store)
        check_conditions(t, store, rebuilt)
        plan = t.plan(store, options.transcript_folder(transcripts_dir))
        executor = open_executor(
            plan,
            concurrency=concurrency,
            dask=dask or t.dask,
            where="--dask" if dask else f"{t.path}: tournament.dask",
        )
        if isinstance(executor, LocalExecutor) and executor.cores is not None:
            lines = executor.cores.lines()
            for line in lines:
                say(line, err=True)
            store.remember("affinity", "\n".join(lines))
        if not (dask or t.dask):
            option = "--concurrency" if concurrency else f"{t.path}: tournament.concurrency ="
            if warning := oversubscribed(concurrency or t.concurrency, plan.left, option):
                say(warning, err=True)

        # The run's own tests, kept up to date as games are stored: the tables every
        # few games need not read the store's games again.
        tests = next((sink for sink in plan.sinks if isinstance(sink, PairingTests)), None)

        tables = functools.partial(run_tables, t, plan.games, store, tests)
        stored = t.stored(store, plan.games)
        progress = TournamentProgress(
            sys.stderr, t.total, tables, done=stored, every=every, quiet=quiet
        )
        if not quiet:
            say(
                f"Tournament {t.name}: {t.total} games, {stored} stored, {plan.left} to play"
                f"{unneeded(t, t.total - stored - plan.left)} ({t.output})",
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
        for line in run_end(t, plan.games, store, tests, outcome):
            say(line)
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
@options.as_json()
@click.option(
    "--by-host",
    is_flag=True,
    help="Also the standings of each host's games alone (a slow node shows up).",
)
@options.strict_store()
@options.room(help="Only this room of an arena file with rooms (default: every room).")
@handle_errors
def tournament_status(
    file: str | None,
    example: str | None,
    as_json: bool,
    by_host: bool,
    strict: bool,
    room: str | None,
) -> None:
    """Games done and left, current standings, void games and why.

    FILE is a tournament file, an arena file (its store; with rooms, each room's in
    turn, as `arena status` shows them), or the store of a match (`arbiter match --store`).

    One snapshot of the store: every number shown is from the same moment, also while
    a run is writing. `done` counts the schedule's games stored; the table rates every
    stored game, and `outside_schedule` says how many of those the schedule no longer
    holds (rounds lowered, engines removed): done + outside_schedule = games.
    """
    from arbiter.arena.config import is_arena_file, load_arena
    from arbiter.results.standings import source_kind
    from arbiter.results.store import Store
    from arbiter.runs.match import StoredMatch
    from arbiter.runs.tournament import load_tournament
    from arbiter.views.status import read_status

    t: Any
    file, store_folder = tournament_file(file, example)
    store = None  # a match's store, read once (opening checks every row written since)
    if file.endswith(".toml") and is_arena_file(file):  # its own status, from its store
        arena = load_arena(file, engines_here=False)
        if by_host:
            raise ConfigError(
                "--by-host is for tournaments and matches",
                where=file,
                hint=f"leave it out: arbiter tournament status {file}",
            )
        show_arena_status(arena, room, as_json, strict)
        return
    if room is not None:
        raise no_rooms_here(file)
    if file.endswith(".toml"):
        t = results_file(file, store_folder)
    elif source_kind(file) == "store":
        store = Store.open_read(file)
        try:
            t = StoredMatch.read(store)  # a match's store: it holds its own schedule
        except BaseException:
            store.close()
            raise
    else:  # its engines are not started here
        t = load_tournament(file, engines_here=False, store_folder=store_folder)
    kind = "Match" if isinstance(t, StoredMatch) else "Tournament"
    if store is None and t.output.exists():
        store = Store.open_read(t.output)
    status = read_status(t, kind, store, hosts=by_host, damaged=damaged(strict))
    if as_json:
        emit(json.dumps(status.as_json()))
        return
    for line in status.lines():
        say(line)


@tournament.command(
    "export",
    epilog=examples(
        "arbiter tournament export league.toml --records /dev/stdout | head",
        "arbiter tournament export hex.toml --format sgf --out hex.sgf",
    ),
)
@example_option
@options.records_out(
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
@options.force()
@options.strict_store()
@options.room()
@handle_errors
def tournament_export(
    file: str | None,
    example: str | None,
    records_out: str | None,
    fmt: str | None,
    out: str | None,
    force: bool,
    strict: bool,
    room: str | None,
) -> None:
    """Write every stored game as a records line, void attempts flagged, or the rated
    Hex games as SGF.

    FILE is a tournament file, an arena file (its store; with several rooms, the one
    --room names), or the store of a match (`arbiter match --store`)."""
    from arbiter.cli.outfile import write_lines
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
    file, store_folder = tournament_file(file, example)
    if not file.endswith(".toml") and source_kind(file) == "store":
        if room is not None:
            raise no_rooms_here(file)
        store_path, own = Path(file), [Path(file)]  # a match's store holds its own schedule
    else:  # a tournament or arena file; its engines are not started here
        t = results_file(file, store_folder, room, "export writes one")
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
        damaged(strict)(store)
        if sgf:
            _export_sgf(store, out, force)
            return
        n = write_lines(out, store.record_lines(), force=force, hint="choose a new .jsonl path")
    say(f"Wrote {n} records to {output_name(out)}.", err=True)


def _export_sgf(store: Any, out: str, force: bool) -> None:
    """The store's rated Hex games as one SGF collection, in the order they were played;
    refused (before anything is written) when there is none, saying why."""
    from arbiter.cli.outfile import write_lines
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
    selection = sgf_format.SgfSelection()
    records = (GameRecord.from_json(data) for data, _ in store.records())
    write_lines(
        out, sgf_format.collection(records, selection), force=force, hint="choose a new .sgf path"
    )
    say(f"Wrote {sgf_format.games(selection.written)} as SGF to {output_name(out)}.", err=True)
    for note in selection.notes():
        say(note, err=True)


def on_this_host(t: Any, store: Any) -> Any:
    """The tournament as this host plays it (`scale_tc`, `min_speed`): its speed factor
    measured, said, and kept in the store by host."""
    import trio

    from arbiter.engines.calibration import calibrate, remember
    from arbiter.executors.jobs import machine
    from arbiter.rules.clock import ClockMode

    measured = trio.run(calibrate)
    remember(measured, machine())  # the factor this run's games record
    factor = measured.cpu_factor if t.clock is ClockMode.CPU else measured.factor
    host = machine()[0]
    speeds = json.loads(store.meta("speed") or "{}")
    speeds[host] = round(factor, 3)
    store.remember("speed", json.dumps(speeds, sort_keys=True))
    t = t.on_host(factor)  # ConfigError below min_speed
    scaled = f"; time control {t.tc} (scaled)" if t.scale_tc else ""
    say(f"This host ({host}): {measured.line()}{scaled}", err=True)
    return t
