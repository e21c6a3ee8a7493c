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
from .sources import is_tournament, results_file


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
    from arbiter.results.standings import split_keys
    from arbiter.views.standings_text import matrix as matrix_table
    from arbiter.views.standings_text import table

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
    board, _ = _gathered(sources, prior, anchors, strict, split=split)
    if as_json or fmt == "json":
        from arbiter.views.standings_text import to_json

        emit(json.dumps(to_json(board, matrix=matrix)))
        return
    if fmt == "csv" and matrix:
        say(matrix_table(board, fmt))
        return
    say(table(board, fmt))
    if matrix:
        say("")
        say(matrix_table(board, fmt))


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
    board, names = _gathered(sources, prior, anchors, strict, keep)
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
        pie_rule=pie_rule(sources),
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
    sources: tuple[str, ...],
    prior: float | None,
    anchors: Sequence[str],
    strict: bool,
    keep: Any = None,
    split: tuple[str, ...] | None = None,
) -> tuple[Any, list[str]]:
    """The standings of SOURCE arguments combined, and the tournament names met: each
    tournament or arena file stands for its store (and gives the report its schedule's
    order); see `results.gathered` for the rest."""
    from arbiter.results.gathered import gathered_standings

    pinned = options.parse_anchors(anchors)  # before reading: a mistyped option costs no time
    stores = []
    for index, source in enumerate(sources):
        if not source.endswith(".toml"):
            stores.append(source)
            continue
        t = results_file(source)
        stores.append(str(t.output))
        if keep is not None and is_tournament(t):
            keep.schedules[index] = {game_id: n for n, game_id in enumerate(t.ids())}
    return gathered_standings(
        stores,
        labels=sources,
        prior=prior,
        anchors=pinned,
        strict=strict,
        warn=warn,
        keep=keep,
        split=split,
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
        t = results_file(source)
        if not is_tournament(t) or not t.output.exists():
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
        t = results_file(source)
        if not is_tournament(t) or t.sprt is None or not t.output.exists():
            continue
        with Store.open_read(t.output) as store:
            tests = t.tests(store)
        assert tests is not None
        out += [(Path(source).name, t.sprt, pair, v, t.rounds) for pair, v in tests.verdicts()]
    return out
