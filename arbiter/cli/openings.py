"""`arbiter openings`: what the stored games say of the first stones under the pie rule."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from arbiter.errors import ConfigError
from arbiter.results.store import resolved

from . import options
from .options import examples
from .output import emit, handle_errors, say, warn, write_whole
from .sources import Source, sources_read


@click.group(
    "openings",
    epilog=examples(
        "arbiter openings swapmap tournaments/demo.toml",
        "arbiter openings balanced games.sqlite --band 0.45..0.55 -o even.txt",
    ),
)
def openings() -> None:
    """The pie rule measured: which first stones are fair, and who swaps right."""


@openings.command(
    "swapmap",
    epilog=examples(
        "arbiter openings swapmap a.sqlite b.jsonl --json",
        "arbiter openings swapmap games.sqlite --variant hex/7 --svg hex7.svg",
    ),
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@options.board_filter()
@click.option(
    "--svg",
    "svg",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also draw the map on the board as an SVG heat map (one board: see --variant).",
)
@options.as_json()
@options.strict_records()
@options.room()
@handle_errors
def swapmap(
    sources: tuple[str, ...],
    variant: str | None,
    svg: str | None,
    as_json: bool,
    strict: bool,
    room: str | None,
) -> None:
    """The swap map of tournament or arena files, stores or records files (combined;
    an arena file of several rooms with the --room to read).

    For every first stone: the games, and the score of the side that owns it after the
    move-2 decision, with a 95% Wilson interval, pooled with the cell's 180-degree turn;
    a cell is marked swap (the interval lies above 50%), keep (below) or even. Then each
    engine's swap regret: per decision it took at move 2, the score it gave up against
    the side the map says is better. Void games are skipped; games without the pie rule,
    or whose opening went past move 2, are counted as left out.
    """
    from arbiter.results.openings import regrets
    from arbiter.views.openings import (
        heatmap_svg,
        left_out_line,
        map_lines,
        regret_lines,
        to_json,
    )

    reading, maps = _maps(sources, variant, strict, room)
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


def _maps(
    sources: tuple[str, ...], variant: str | None, strict: bool, room: str | None
) -> tuple[Any, Any]:
    """The decisions read from SOURCES (an arena file's room `room`) and the map of each
    board (of `variant` only, if given)."""
    from arbiter.results.openings import read_sources, swap_maps

    read = sources_read(sources, room, "a swap map is of one store (or of several, combined)")
    reading = read_sources(
        [s.path for s in read], labels=[s.label for s in read], strict=strict, warn=warn
    )
    maps = swap_maps(reading.decisions)
    if variant is None:
        return reading, maps
    if variant not in maps:
        raise ConfigError(
            f"no games on {variant} in these sources",
            where="--variant",
            hint="boards here: " + ", ".join(maps),
        )
    reading.decisions = [d for d in reading.decisions if d.variant == variant]
    return reading, {variant: maps[variant]}


@openings.command(
    "balanced",
    epilog=examples(
        "arbiter openings balanced games.sqlite --band 0.45..0.55 -o even.txt",
        "arbiter openings balanced league.toml --variant hex/11 --band 0.4..0.6 -o fair.txt",
    ),
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--band",
    default="0.45..0.55",
    show_default=True,
    metavar="LOW..HIGH",
    help="The scores a first stone's owner may have: its whole 95% interval must lie in the band.",
)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False),
    help="The openings file to write (a tournament's `openings` key reads it).",
)
@options.board_filter()
@options.strict_records()
@options.room()
@handle_errors
def balanced(
    sources: tuple[str, ...],
    band: str,
    output: str,
    variant: str | None,
    strict: bool,
    room: str | None,
) -> None:
    """Write an openings file of the first stones that the games show to be even.

    SOURCES as for `swapmap`. A first stone is chosen when its owner's 95% interval (pooled
    with the cell's 180-degree turn, both cells written) lies within --band: for events
    played without the pie rule, or that want only even openings under it. Refused, saying
    why, when no stone's interval fits in the band (too few games, or none that even).
    """
    from arbiter.results.openings import balanced as choose
    from arbiter.results.openings import parse_band
    from arbiter.views.openings import BALANCED_HEAD, balanced_lines

    try:
        low, high = parse_band(band)
    except ValueError as exc:
        raise ConfigError(str(exc), where="--band", hint="e.g. --band 0.45..0.55") from exc
    if resolved(output, "--output") in {resolved(s) for s in sources}:
        raise ConfigError(
            "the openings file would overwrite one of its sources",
            where=output,
            hint="choose a new .txt path",
        )
    _, maps = _maps(sources, variant, strict, room)
    if len(maps) > 1:
        raise ConfigError(
            f"the sources hold {len(maps)} boards and an openings file is for one",
            where="--variant",
            hint="add --variant, one of " + ", ".join(maps),
        )
    (only,) = maps.values()
    try:
        chosen = choose(only, low, high)
    except ValueError as exc:
        raise ConfigError(
            str(exc), where="--band", hint="play more games, or widen the band"
        ) from exc
    lines = balanced_lines(only, chosen, low, high)
    write_whole(output, [line + "\n" for line in lines], (BALANCED_HEAD.encode(),))
    stones = sum(len(c.cells) for c in chosen)
    say(f"Wrote {output}: {stones} first stones of {only.variant}.", err=True)


def pie_rule(read: Sequence[Source]) -> Any:
    """The report's "Pie rule" section of its sources (`views.openings.PieSection`), or
    None where no game had a decision at move 2. Read quietly: the standings have already
    said what they skipped."""
    from arbiter.results.openings import read_sources
    from arbiter.views.openings import pie_section

    try:
        reading = read_sources(
            [s.path for s in read],
            labels=[s.label for s in read],
            strict=False,
            warn=lambda line: None,
        )
    except ConfigError:
        return None
    return pie_section(reading)
