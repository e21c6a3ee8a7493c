"""The board as a picture: cell centres and hexagons from the rules core's geometry.

Every cell and island stone is drawn where its axial coordinates put it, through one
linear map per board family, so the picture cannot disagree with the rules: two cells
are drawn side by side exactly when the geometry makes them neighbours (tests check
this for every variant). Atoll is drawn as in the board reference (files of flat-topped
hexes, rank 1 at the bottom), Hex as HexGui draws it (a rhombus of pointy-topped hexes,
row 1 at the top, each row half a cell to the right of the one above).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from arbiter.rules import SWAP, Color, Game, Geometry

SQRT3 = math.sqrt(3.0)
RADIUS = 10.0  # a hexagon's circumradius in SVG units; neighbours are RADIUS * sqrt(3) apart
MARGIN = 2.2 * RADIUS  # room for the edge labels
# A cell name's font size in SVG units (board.css): it grows with the cell, and the widest
# name, three characters such as "k11", still fits inside the hexagon with room to spare.
LABEL_FONT = 0.7 * RADIUS

Point = tuple[float, float]


def _basis(geom: Geometry) -> tuple[Point, Point]:
    """Where one step in q and one step in r go on the page (in units of the radius).

    Atoll's sixth neighbour is (+1, +1): files are vertical, r grows upwards. Hex's is
    (+1, -1): q runs along a row, r down the rows.
    """
    if (1, 1) in geom.directions:
        return (1.5, SQRT3 / 2), (0.0, -SQRT3)
    return (SQRT3, 0.0), (SQRT3 / 2, 1.5)


@dataclass(frozen=True)
class DrawnCell:
    index: int
    name: str
    x: float
    y: float


@dataclass(frozen=True)
class IslandStone:
    island: int
    owner: str  # "black" or "white"
    x: float
    y: float


@dataclass(frozen=True)
class Label:
    text: str
    x: float
    y: float


@dataclass(frozen=True)
class IslandLabel:
    text: str
    owner: str
    x: float
    y: float


@dataclass(frozen=True)
class BoardPicture:
    """Everything needed to draw one board: it depends on the variant only."""

    key: str  # the geometry's key, e.g. "atoll-8/11"
    title: str
    width: float
    height: float
    hexagon: str  # polygon points of a hexagon centred on (0, 0)
    cells: tuple[DrawnCell, ...]
    stones: tuple[IslandStone, ...]
    labels: tuple[Label, ...]  # file letters (and, for Hex, row numbers) on the edges
    island_labels: tuple[IslandLabel, ...]
    stone_radius: float

    def hexagon_at(self, x: float, y: float) -> str:
        """The points of the hexagon centred on (x, y)."""
        return " ".join(
            f"{x + dx:.1f},{y + dy:.1f}"
            for dx, dy in (tuple(map(float, p.split(","))) for p in self.hexagon.split())
        )


@cache
def picture(geom: Geometry) -> BoardPicture:
    """The drawing of a board (cached per geometry: geometries are few and immutable)."""
    (qx, qy), (rx, ry) = _basis(geom)

    def raw(q: float, r: float) -> Point:
        return (q * qx + r * rx) * RADIUS, (q * qy + r * ry) * RADIUS

    coords = list(geom.cells) + [s for isl in geom.islands for s in isl.stones]
    points = [raw(q, r) for q, r in coords]
    left = min(x for x, _ in points) - MARGIN
    top = min(y for _, y in points) - MARGIN
    right = max(x for x, _ in points) + MARGIN
    bottom = max(y for _, y in points) + MARGIN

    def at(q: float, r: float) -> Point:
        x, y = raw(q, r)
        return round(x - left, 1), round(y - top, 1)

    # The vertices sit halfway between neighbour directions: flat tops for Atoll's
    # vertical files, pointed tops for Hex's horizontal rows.
    start = math.atan2(ry, rx) + math.pi / 6
    hexagon = " ".join(
        f"{RADIUS * math.cos(start + k * math.pi / 3):.2f},"
        f"{RADIUS * math.sin(start + k * math.pi / 3):.2f}"
        for k in range(6)
    )
    cells = tuple(DrawnCell(i, geom.names[i], *at(q, r)) for i, (q, r) in enumerate(geom.cells))
    stones = tuple(
        IslandStone(k, str(isl.owner), *at(q, r))
        for k, isl in enumerate(geom.islands)
        for q, r in isl.stones
    )
    island_labels = []
    for isl in geom.islands:
        middle = isl.stones[len(isl.stones) // 2]
        island_labels.append(IslandLabel(isl.symbol, str(isl.owner), *at(*middle)))
    labels = _edge_labels(geom, at, top=MARGIN / 2, bottom=bottom - top - MARGIN / 2)
    kind = "Hex" if geom.key.startswith("hex") else "Atoll"
    return BoardPicture(
        key=geom.key,
        title=f"{kind} {geom.size}",
        width=round(right - left, 1),
        height=round(bottom - top, 1),
        hexagon=hexagon,
        cells=cells,
        stones=stones,
        labels=tuple(labels),
        island_labels=tuple(island_labels),
        stone_radius=round(RADIUS * 0.72, 1),
    )


def _edge_labels(
    geom: Geometry, place: Callable[[float, float], Point], *, top: float, bottom: float
) -> list[Label]:
    """File letters above and below the board; for Hex also row numbers at both sides."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    labels: list[Label] = []
    if geom.key.startswith("hex"):
        n = geom.size
        # One step beyond the edge stones, in line with the column or row they name.
        for c in range(1, n + 1):
            labels.append(Label(letters[c - 1], *place(c, -1)))
            labels.append(Label(letters[c - 1], *place(c, n + 2)))
        for r in range(1, n + 1):
            labels.append(Label(str(r), *place(-1, r)))
            labels.append(Label(str(r), *place(n + 2, r)))
        return labels
    for x in range(geom.size):
        cx, _ = place(x, 0)
        labels.append(Label(letters[x], cx, round(top, 1)))
        labels.append(Label(letters[x], cx, round(bottom, 1)))
    return labels


@dataclass(frozen=True)
class Position:
    """A replayed position, drawn from the rules core's own state."""

    picture: BoardPicture
    colors: tuple[int, ...]  # per cell: 0 empty, 1 black, 2 white
    last: int | None  # the cell of the last stone placed
    chain: frozenset[int]  # the winning chain, once there is one
    swap_now: bool  # the position just after a swap
    ply: int
    plies: int


def position(game: Game, plies: int) -> Position:
    """A replayed position (`GameRecord.replay`) as the picture draws it; `plies` is the
    length of the whole game."""
    return Position(
        picture=picture(game.variant.geometry),
        colors=tuple(game.colors),
        last=game.last_cell(),
        chain=game.winning_chain(),
        swap_now=bool(game.moves) and game.moves[-1] == SWAP,
        ply=len(game.moves),
        plies=plies,
    )


def stone_class(color: int) -> str:
    return {int(Color.BLACK): "b", int(Color.WHITE): "w"}.get(color, "")


# How each kind of proof link is drawn: (class, legend text, colour). The kinds are those
# of arbiter.rules.proof.LinkKind, as a record keeps them; a kind this table does not know
# (a record from a later version, or a damaged one) is drawn as "other", never as its text.
LINK_STYLES = {
    "bridge": ("bridge", "bridge", "#2e7d32"),
    "edge template II": ("edge2", "edge template II", "#1565c0"),
    "ziggurat": ("ziggurat", "ziggurat", "#8e24aa"),
    "h-search": ("hsearch", "H-search", "#ef6c00"),
}
OTHER_LINK = ("other", "other link", "#757575")
LEGEND_ROW = 1.3 * RADIUS  # the height of one line of a proof's legend


@dataclass(frozen=True)
class ProofCarrier:
    """The carrier cells of one kind of link, drawn in that kind's colour."""

    css: str
    label: str
    colour: str
    cells: tuple[DrawnCell, ...]


@dataclass(frozen=True)
class ProofDrawing:
    """An adjudicated game's proof over its final board: the owner's chain of stones
    ringed, each link's carrier (the empty cells it needs) shaded by the link's kind,
    and a legend below the board."""

    owner: str  # "black" or "white"
    stones: tuple[DrawnCell, ...]
    carriers: tuple[ProofCarrier, ...]  # one per kind present, in LINK_STYLES order
    legend_top: float  # where the legend starts (the board's height)
    height: float  # the picture's height with the legend

    @property
    def rows(self) -> int:
        return 1 + len(self.carriers)


def proof_drawing(p: BoardPicture, proof: dict[str, Any]) -> ProofDrawing:
    """What to draw of `proof` (a record's evidence, as `proof_json` writes it and the
    records reader checked its shape) on the board `p`. A cell name the board does not
    have is left out: the picture only shows what the board can hold."""
    index = {c.name: c for c in p.cells}
    stones = tuple(
        index[s] for group in proof["chain"] for s in sorted(group["stones"]) if s in index
    )
    by_kind: dict[tuple[str, str, str], list[DrawnCell]] = {}
    for link in proof["links"]:
        style = LINK_STYLES.get(link["kind"], OTHER_LINK)
        cells = by_kind.setdefault(style, [])
        cells += [index[c] for c in link["carrier"] if c in index]
    order = [*LINK_STYLES.values(), OTHER_LINK]
    carriers = tuple(
        ProofCarrier(*style, tuple(by_kind[style])) for style in order if style in by_kind
    )
    rows = 1 + len(carriers)
    return ProofDrawing(
        owner="black" if proof["owner"] == "black" else "white",
        stones=stones,
        carriers=carriers,
        legend_top=p.height,
        height=round(p.height + rows * LEGEND_ROW + RADIUS / 2, 1),
    )
