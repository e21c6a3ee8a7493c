"""`arbiter ratings` and `arbiter report`: the leaderboard of any sources combined, as a
table or as one HTML page."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from arbiter.cli.outfile import shown as output_name
from arbiter.errors import ConfigError
from arbiter.results.store import resolved

from . import options
from .openings import pie_rule
from .options import examples
from .output import emit, handle_errors, say, warn, write_whole
from .sources import Source, arena_of_rooms, sources_read


@click.command(
    "ratings",
    epilog=examples(
        "arbiter ratings tournaments/demo.toml --matrix",
        "arbiter ratings a.sqlite b.jsonl --anchor random=0 --anchor mcts=1500 --format markdown",
    ),
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@options.prior()
@options.anchor()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@options.as_json(help="Same as --format json.")
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
@options.strict_records()
@options.room(
    help="The room of an arena file with rooms to rate (default, for the arena file alone:"
    " every room in turn)."
)
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
    room: str | None,
) -> None:
    """The leaderboard of tournament or arena files, stores or records files (combined).

    Bradley-Terry maximum likelihood over all games jointly, with a seat-1 advantage
    term; errors are 95% intervals. Void games are skipped. An engine name whose games
    were played under different conditions (time control, board, version, command) is
    named on stderr with what differs and where; --split-by rates them apart.

    An arena file with rooms given alone is each room's leaderboard in turn, headed by
    its name (JSON: one object keyed by room name; CSV: a first column `room`); --room
    rates one room, which may then be combined with other sources.
    """
    from arbiter.results.standings import split_keys

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
    fmt = "json" if as_json else fmt
    arena = arena_of_rooms(sources, room)
    if arena is not None:
        _rooms_ratings(arena, sources[0], prior, anchors, strict, split, fmt, matrix)
        return
    read = sources_read(
        sources,
        room,
        "ratings combines its sources into one leaderboard (the arena file alone is"
        " rated room by room)",
    )
    board, _ = _gathered(read, prior, anchors, strict, split=split)
    for text in _leaderboard(board, fmt, matrix):
        if fmt == "json":
            emit(text)
        else:
            say(text)


def _leaderboard(board: Any, fmt: str, matrix: bool) -> list[str]:
    """What `ratings` prints of one leaderboard in `fmt`, piece by piece."""
    from arbiter.views.standings_text import matrix as matrix_table
    from arbiter.views.standings_text import table, to_json

    if fmt == "json":
        return [json.dumps(to_json(board, matrix=matrix))]
    if fmt == "csv" and matrix:
        return [matrix_table(board, fmt)]
    return [table(board, fmt), "", matrix_table(board, fmt)] if matrix else [table(board, fmt)]


def _rooms_ratings(
    arena: Any,
    source: str,
    prior: float | None,
    anchors: Sequence[str],
    strict: bool,
    split: tuple[str, ...],
    fmt: str,
    matrix: bool,
) -> None:
    """`ratings` of an arena file with rooms: each room's leaderboard, rated alone (a
    room is a game and a clock of its own), in the file's order. A room with no rated
    game yet says so in one line, in its place (on stderr for CSV, which holds tables
    only)."""
    from arbiter.views.standings_text import with_column

    options.parse_anchors(anchors)  # before reading: a mistyped option costs no time
    boards = []  # every room's, before a line is printed: an error leaves no half output
    for room in arena.rooms:
        label = f"{source}: room {room.room}"
        note = _unplayed(room) or ""
        board = None
        if not note:
            try:
                board, _ = _gathered(
                    [Source(label, str(room.output))], prior, anchors, strict, split=split
                )
            except ConfigError as exc:
                raise exc.located(label) from exc
        boards.append((room.room, board, note))
    if fmt == "json":
        emit(
            json.dumps(
                {
                    name: {"games": 0, "engines": [], "note": note}
                    if board is None
                    else json.loads(_leaderboard(board, fmt, matrix)[0])
                    for name, board, note in boards
                }
            )
        )
        return
    printed = False
    for name, board, note in boards:
        if board is None and fmt == "csv":
            warn(f"Room {name}: {note}.")
            continue
        if board is None:
            pieces = (
                [_heading(name, fmt), f"{note[0].upper()}{note[1:]}."]
                if fmt == "markdown"
                else [f"Room {name}: {note}."]
            )
        elif fmt == "csv":
            pieces = [with_column(p, "room", name) for p in _leaderboard(board, fmt, matrix)]
        else:
            pieces = [_heading(name, fmt), *_leaderboard(board, fmt, matrix)]
        if printed:
            say("")
        printed = True
        for text in pieces:
            say(text)


def _unplayed(room: Any) -> str | None:
    """Why a room's store has no leaderboard (no store yet, no rated game), or None."""
    from arbiter.arena.status import unplayed_note
    from arbiter.results.store import Store

    if not room.output.exists():
        return unplayed_note(room)
    with Store.open_read(room.output) as opened:
        return None if opened.games_stored() else "no rated games yet"


def _heading(room: str, fmt: str) -> str:
    """A room's heading above its leaderboard."""
    return f"## Room {room}\n" if fmt == "markdown" else f"Room {room}:"


@click.command(
    "report",
    epilog=examples(
        "arbiter report tournaments/demo.toml -o demo.html",
        "arbiter report a.sqlite b.sqlite -o both.html --title 'Spring league'",
    ),
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
@options.prior(help="As for `ratings`.  [default: 2]")
@options.anchor()
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
@options.strict_records()
@options.room()
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
    room: str | None,
) -> None:
    """Write a tournament report: one HTML page that works offline.

    SOURCES as for `ratings` (tournament files, stores, records files, combined; an
    arena file of several rooms with the --room to read). The
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
    read = sources_read(sources, room, "a report is of one store (or of several, combined)")
    selection = Selection(recent=None if all_games else recent)
    keep = Games(selection=selection)
    board, names = _gathered(read, prior, anchors, strict, keep)
    heading = title or (", ".join(names) if names else "Atoll games")
    records = keep.records
    page = render_gathered(
        board,
        keep,
        title=heading,
        sources=[source.name for source in read],
        download=Path(output).stem + "-games.jsonl",
        tests=_pairing_tests(read),
        formats=_format_results(read),
        selection=None if all_games else selection,
        pie_rule=pie_rule(read),
    )
    write_whole(output, [page], (b"<!doctype html",))
    left = keep.read - len(records)
    say(
        f"Wrote {output_name(output)}: {board.games} rated games, {len(records)} in the viewer"
        + (f" ({left} more not embedded: --games N or --all-games embeds them)" if left else "")
        + f" ({len(page.encode()) / 1e6:.2f} MB).",
        err=True,
    )


def _gathered(
    read: Sequence[Source],
    prior: float | None,
    anchors: Sequence[str],
    strict: bool,
    keep: Any = None,
    split: tuple[str, ...] | None = None,
) -> tuple[Any, list[str]]:
    """The standings of SOURCE arguments combined, and the tournament names met: each
    tournament or arena file stands for its store (a tournament's gives the report its
    schedule's order); see `results.gathered` for the rest."""
    from arbiter.results.gathered import gathered_standings

    pinned = options.parse_anchors(anchors)  # before reading: a mistyped option costs no time
    if keep is not None:
        for index, source in enumerate(read):
            if source.tournament is not None:
                keep.schedules[index] = {
                    game_id: n for n, game_id in enumerate(source.tournament.ids())
                }
    return gathered_standings(
        [source.path for source in read],
        labels=[source.label for source in read],
        prior=prior,
        anchors=pinned,
        strict=strict,
        warn=warn,
        keep=keep,
        split=split,
    )


def _format_results(read: Sequence[Source]) -> list[Any]:
    """Each tournament file's own result under its format (a Swiss's standings with its
    tie-breaks, an adaptive run's budget and stop rule), as `tournament status` gives it."""
    from arbiter.results.store import Store
    from arbiter.views.html import FormatResult

    out = []
    for source in read:
        t = source.tournament
        if t is None or not t.output.exists():
            continue
        with Store.open_read(t.output) as store:
            schedule = t.schedule(store)
            data = t.summary_json(schedule)
            if data:
                out.append(FormatResult(source.name, data, t.summary(schedule)))
    return out


def _pairing_tests(read: Sequence[Source]) -> list[Any]:
    """Each tournament file's tested pairings, as its store leaves them."""
    from arbiter.results.store import Store

    out = []
    for source in read:
        t = source.tournament
        if t is None or t.sprt is None or not t.output.exists():
            continue
        with Store.open_read(t.output) as store:
            tests = t.tests(store)
        assert tests is not None
        out += [(source.name, t.sprt, pair, v, t.rounds) for pair, v in tests.verdicts()]
    return out
