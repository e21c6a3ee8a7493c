"""`arbiter openings`: what the stored games say of the first stones under the pie rule."""

from __future__ import annotations

import json

import click

from arbiter.errors import ConfigError

from . import options
from .options import examples
from .output import emit, handle_errors, say, warn, write_whole
from .sources import results_file


@click.group("openings")
def openings() -> None:
    """The pie rule measured: which first stones are fair, and who swaps right."""


@openings.command(
    "swapmap",
    epilog=examples(
        "arbiter openings swapmap tournaments/demo.toml",
        "arbiter openings swapmap a.sqlite b.jsonl --json",
        "arbiter openings swapmap games.sqlite --variant hex/7 --svg hex7.svg",
    ),
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--variant",
    default=None,
    metavar="BOARD",
    help="Only this board, as the map names it (atoll-8/11, hex/11).",
)
@click.option(
    "--svg",
    "svg",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also draw the map on the board as an SVG heat map (one board: see --variant).",
)
@options.as_json()
@options.strict_records()
@handle_errors
def swapmap(
    sources: tuple[str, ...], variant: str | None, svg: str | None, as_json: bool, strict: bool
) -> None:
    """The swap map of tournament or arena files, stores or records files (combined).

    For every first stone: the games, and the score of the side that owns it after the
    move-2 decision, with a 95% Wilson interval, pooled with the cell's 180-degree turn;
    a cell is marked swap (the interval lies above 50%), keep (below) or even. Then each
    engine's swap regret: per decision it took at move 2, the score it gave up against
    the side the map says is better. Void games are skipped; games without the pie rule,
    or whose opening went past move 2, are counted as left out.
    """
    from arbiter.results.openings import read_sources, regrets, swap_maps
    from arbiter.views.openings import (
        heatmap_svg,
        left_out_line,
        map_lines,
        regret_lines,
        to_json,
    )

    paths = [str(results_file(s).output) if s.endswith(".toml") else s for s in sources]
    reading = read_sources(paths, labels=sources, strict=strict, warn=warn)
    maps = swap_maps(reading.decisions)
    if variant is not None:
        if variant not in maps:
            raise ConfigError(
                f"no games on {variant} in these sources",
                where="--variant",
                hint="boards here: " + ", ".join(maps),
            )
        maps = {variant: maps[variant]}
        reading.decisions = [d for d in reading.decisions if d.variant == variant]
    table = regrets(reading.decisions, maps)
    if svg is not None:
        if len(maps) > 1:
            raise ConfigError(
                f"the sources hold {len(maps)} boards and --svg draws one",
                where="--svg",
                hint="add --variant, one of " + ", ".join(maps),
            )
        (only,) = maps.values()
        write_whole(svg, [heatmap_svg(only)], (b"<?xml", b"<svg"))
    if as_json:
        emit(json.dumps(to_json(maps, table, reading)))
        return
    for m in maps.values():
        for line in map_lines(m):
            say(line)
        say("")
    for line in regret_lines(table):
        say(line)
    note = left_out_line(reading)
    if note:
        say("")
        say(note)
