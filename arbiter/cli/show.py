"""`arbiter show`: a records file's games listed, one shown on the board, as SVG or SGF."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from arbiter.cli.outfile import shown as output_name
from arbiter.errors import ConfigError
from arbiter.results.games import choose_game, find_game, no_games
from arbiter.results.records import BadLine, read_records
from arbiter.rules import IllegalMove

from . import options
from .options import examples
from .output import handle_errors, say, write_whole


@click.command(
    "show",
    epilog=examples(
        "arbiter show games.jsonl --game 3 --ply 20 --svg position.svg",
        "arbiter show hex.jsonl --game 3 --sgf game3.sgf",
    ),
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
@options.strict_records()
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
        _skipped(bad)
        no_games(shown, records)
        return
    chosen = find_game(records, game_id, strict, bad)
    _skipped(bad)
    if ply is not None and ply > len(chosen.moves):
        raise ConfigError(
            f"--ply {ply} is out of range", hint=f"the game has {len(chosen.moves)} plies"
        )
    try:
        if svg is not None:
            from arbiter.views.html import position_svg

            write_whole(svg, [position_svg(chosen, ply)], (b"<?xml", b"<svg"))
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


def _skipped(bad: list[BadLine]) -> None:
    """The lines read so far that were not records, each said once on stderr."""
    for problem in bad:
        say(f"skipped {problem}", err=True)
    bad.clear()


def _records_only(path: str) -> None:
    """`show` reads a records file: a tournament or arena file, or a store, is named as
    what it is (read as records, each of its lines would be reported as a bad one)."""
    from arbiter.arena.config import is_arena_file, load_arena
    from arbiter.results.standings import source_kind

    if not os.path.isfile(path):
        return  # read_records says what is wrong with it
    room = ""
    if path.endswith(".toml"):
        what = "an arena file" if is_arena_file(path) else "a tournament file"
        if what == "an arena file":
            rooms = load_arena(path, engines_here=False).rooms
            room = f" --room {rooms[0].room}" if len(rooms) > 1 else ""
    elif source_kind(path) == "store":
        what = "a store"
    else:
        return
    raise ConfigError(
        f"{what}, not a records file",
        where=path,
        hint=f"write its games as records first: arbiter tournament export"
        f" {shlex.quote(path)}{room} --records games.jsonl",
    )


def _show_sgf(
    games: Iterator[Any], bad: list[BadLine], game_id: str | None, where: str, out: str
) -> None:
    """`show --sgf`: one game (a void attempt too, its result `Void`), or every rated Hex
    game of the file as one SGF collection, saying what was left out. The file is read
    once, as the collection is written: memory does not follow the number of games."""
    from arbiter.views import sgf as sgf_format

    notes: list[str] = []
    trees: Iterable[str]
    if game_id is not None:
        try:
            chosen = choose_game(games, game_id, where)
        finally:
            _skipped(bad)
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
        selection = sgf_format.SgfSelection()
        trees = _sgf_collection(games, selection, lambda: _skipped(bad), where)
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
        write_whole(out, trees, (b"(",))
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
    no_games(count, where)
    if not selection.written:
        raise ConfigError(
            "no rated Hex game to write as SGF"
            + (f"; {sgf_format.NO_STANDARD_FORMAT}" if selection.atoll else ""),
            where=where,
            hint="this file is the record to share"
            if selection.atoll
            else "a void attempt is written only when named with --game",
        )
