"""Text drawing of a position, laid out like the printed board (offset files, islands)."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arbiter.rules.geometry import Geometry

STONE = {0: ".", 1: "X", 2: "O"}


def render(
    geom: Geometry,
    colors: list[int],
    *,
    last: int | None = None,
    chain: frozenset[int] = frozenset(),
    mark_last: bool = False,
) -> str:
    """Draw the board: `X` black stones, `O` white stones, `.` empty, letters islands.

    Atoll islands use the board reference's letters (upper case Black, lower case
    White: N E S W); Hex edges are drawn as rows and columns of `B` and `W`. With
    `mark_last` the last stone is drawn in lower case (`x`, `o`); stones of `chain` (the
    winning chain) are drawn as `*`.
    """
    marks: dict[tuple[int, int], str] = {}
    for i, coord in enumerate(geom.cells):
        mark = STONE[colors[i]]
        if i in chain:
            mark = "*"
        elif mark_last and i == last:
            mark = mark.lower()
        marks[geom.display_pos(coord)] = mark
    for isl in geom.islands:
        for st in isl.stones:
            marks[geom.display_pos(st)] = isl.symbol
    top = min(r for r, _ in marks)
    bottom = max(r for r, _ in marks)
    width = max(c for _, c in marks) + 1
    rows = [[" "] * width for _ in range(bottom - top + 1)]
    for (r, c), ch in marks.items():
        rows[r - top][c] = ch
    lines = ["".join(row).rstrip() for row in rows]
    if geom.key.startswith("hex"):
        header = " " * 5 + " ".join(string.ascii_lowercase[: geom.size])
        for r in range(1, geom.size + 1):
            lines[r - top] = f"{r:>2}" + lines[r - top][2:]
        footer = " " * (geom.size + 4) + " ".join(string.ascii_lowercase[: geom.size])
        out = [header, *lines, footer]
    else:
        cols = [" "] * width
        for x in range(geom.size):
            cols[3 * (x + 1)] = string.ascii_lowercase[x]
        header = "".join(cols).rstrip()
        out = [header, *lines, header]
    if last is not None:
        out.append(f"last move: {geom.names[last]}")
    return "\n".join(out)
