"""The swap map and the swap regret as text, JSON and an SVG heat map of the board."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from arbiter.results.openings import Cell, Reading, Regret, SwapMap, geometry_of
from arbiter.text import name as shown_name
from arbiter.views.svg import picture

POOLED = "first stones pooled with their 180-degree turn"
REGRET_NOTE = (
    "score given up per move-2 decision against the map's better side (0: always the better side)"
)


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def map_lines(m: SwapMap) -> list[str]:
    """One variant's map: per cell (with its turn), the games, the score of the side that
    owns the first stone after the decision, its 95% Wilson interval and the mark."""
    lines = [f"{m.variant}: {m.games} games, {POOLED}", ""]
    rows: list[tuple[str, ...]] = [("cells", "games", "owner", "95% interval", "mark")]
    for c in m.cells.values():
        interval = f"{_percent(c.low)} to {_percent(c.high)}"
        rows.append((" ".join(c.cells), str(c.games), _percent(c.score), interval, c.mark.value))
    lines += _table(rows, right=(1, 2))
    return lines


def regret_lines(table: list[Regret]) -> list[str]:
    """Each deciding engine's swap regret, lowest first."""
    rows: list[tuple[str, ...]] = [("engine", "decisions", "wrong side", "regret", "95% interval")]
    for r in table:
        rows.append(
            (
                shown_name(r.engine),
                str(r.decisions),
                str(r.wrong),
                f"{r.regret:.3f}",
                f"{r.low:.3f} to {r.high:.3f}",
            )
        )
    return [f"Swap regret: {REGRET_NOTE}", "", *_table(rows, right=(1, 2, 3))]


def left_out_line(reading: Reading) -> str | None:
    """The games read but not in the map, and why (None when there are none)."""
    if not reading.left_out:
        return None
    parts = [f"{n} {why}" for why, n in sorted(reading.left_out.items())]
    return "Left out: " + ", ".join(parts) + "."


def _table(rows: list[tuple[str, ...]], right: tuple[int, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append("  ".join(cells).rstrip())
    return out


def to_json(maps: dict[str, SwapMap], table: list[Regret], reading: Reading) -> dict[str, Any]:
    """The maps, the regret table and what was left out, as `--json` prints them."""
    return {
        "maps": [
            {
                "variant": m.variant,
                "games": m.games,
                "pooled": "180-degree turn",
                "interval": "wilson 95%",
                "cells": [
                    {
                        "cells": list(c.cells),
                        "games": c.games,
                        "owner_wins": c.owner_wins,
                        "score": c.score,
                        "low": c.low,
                        "high": c.high,
                        "mark": c.mark.value,
                    }
                    for c in m.cells.values()
                ],
            }
            for m in maps.values()
        ],
        "regret": [
            {
                "engine": r.engine,
                "decisions": r.decisions,
                "wrong": r.wrong,
                "regret": r.regret,
                "low": r.low,
                "high": r.high,
            }
            for r in table
        ],
        "left_out": reading.left_out,
    }


def _fill(score: float | None) -> str:
    """White at 50%, red as the stone's owner scores more (swap), blue as it scores less
    (keep); grey where no game had the stone."""
    if score is None:
        return "#d9d9d9"
    t = min(1.0, abs(score - 0.5) * 2)
    far = (214, 39, 40) if score > 0.5 else (31, 119, 180)
    r, g, b = (round(255 + (c - 255) * t) for c in far)
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(m: SwapMap, *, standalone: bool = True) -> str:
    """The map drawn on the board, by the report's board picture: each cell filled by its
    owner's score, with the score and the mark written in it. Not `standalone`, it is the
    `<svg>` element alone, for a page."""
    from arbiter.views.html import _environment

    p = picture(geometry_of(m.variant))
    cells = []
    for c in p.cells:
        entry = m.of(c.name)
        score = entry.score if entry else None
        text = f"{100 * score:.0f}" if score is not None else ""
        mark = entry.mark.value if entry else "none"
        games = entry.games if entry else 0
        cells.append((c, _fill(score), text, mark, games))
    svg = (
        _environment()
        .get_template("swapmap.svg")
        .render(
            p=p,
            cells=cells,
            title=f"Swap map, {m.variant}",
            desc=f"{m.games} games; each cell: the first stone's owner's score (%),"
            f" {POOLED}; red: swap, blue: keep, outlined: the interval excludes 50%.",
        )
    )
    return svg if standalone else svg[svg.index("<svg") :]


@dataclass(frozen=True)
class PieSection:
    """The report's "Pie rule" section: each board's map (its rows and heat map) and the
    regret table."""

    maps: Sequence[tuple[str, int, Sequence[tuple[str, ...]], Markup]]  # board, games, rows, svg
    regret: Sequence[tuple[str, ...]]
    left_out: str | None


def pie_section(reading: Reading) -> PieSection:
    """The section of what `read_sources` read; every engine name escaped by the page."""
    from arbiter.results.openings import regrets, swap_maps

    maps = swap_maps(reading.decisions)
    shown = []
    for m in maps.values():
        rows = [
            (
                " ".join(c.cells),
                str(c.games),
                _percent(c.score),
                f"{_percent(c.low)} to {_percent(c.high)}",
                c.mark.value,
            )
            for c in m.cells.values()
        ]
        # Our own template's output, every value in it escaped there.
        shown.append((m.variant, m.games, rows, Markup(heatmap_svg(m, standalone=False))))
    table = [
        (
            shown_name(r.engine),
            str(r.decisions),
            str(r.wrong),
            f"{r.regret:.3f}",
            f"{r.low:.3f} to {r.high:.3f}",
        )
        for r in regrets(reading.decisions, maps)
    ]
    return PieSection(shown, table, left_out_line(reading))


BALANCED_HEAD = "# Balanced openings"  # the first line of every file `openings balanced` writes


def balanced_lines(m: SwapMap, chosen: list[Cell], low: float, high: float) -> list[str]:
    """An openings file (as a tournament's `openings` key reads it) of the chosen first
    stones, both cells of each pooled pair, with what they were chosen from."""
    out = [
        f"{BALANCED_HEAD} for {m.variant}: first stones whose owner's 95% interval lies"
        f" within {100 * low:g}% to {100 * high:g}%",
        f"# from {m.games} games (arbiter openings balanced); each line: a first stone, then"
        " its games and its owner's score",
    ]
    for c in chosen:
        for name in c.cells:
            out.append(f"{name}  # {c.games} games, {100 * c.score:.1f}%")
    return out
