"""Board geometry for the Atoll family: cells, island stones, adjacency and names.

Every board is described the same way, as data: playable cells and island stones placed
on axial coordinates, a set of six neighbour directions, and islands listed in their
cyclic order around the perimeter. The win rule is derived from that order (the
generalized Atoll rule), so a new island count is new data plus geometry, not a special
case in the game logic or the referee.
"""

from __future__ import annotations

import itertools
import re
import string
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property


class Color(IntEnum):
    """A stone colour. Black places the first stone."""

    BLACK = 1
    WHITE = 2

    @property
    def other(self) -> Color:
        return Color.WHITE if self is Color.BLACK else Color.BLACK

    @property
    def letter(self) -> str:
        return "b" if self is Color.BLACK else "w"

    @classmethod
    def parse(cls, text: str) -> Color:
        """Parse a GTP colour (`b`, `black`, `w`, `white`, any case)."""
        word = text.strip().lower()
        if word in ("b", "black"):
            return cls.BLACK
        if word in ("w", "white"):
            return cls.WHITE
        raise ValueError(f"not a colour: {text!r} (use b, black, w or white)")

    def __str__(self) -> str:
        return self.name.lower()


Coord = tuple[int, int]

ATOLL_DIRECTIONS: tuple[Coord, ...] = ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, -1))
HEX_DIRECTIONS: tuple[Coord, ...] = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1))


@dataclass(frozen=True)
class Island:
    """A string of pre-placed stones owned by one colour."""

    name: str
    owner: Color
    stones: tuple[Coord, ...]
    symbol: str  # one character used when drawing the board


@dataclass(frozen=True, eq=False)
class Geometry:
    """An immutable board: playable cells, islands and the derived tables the game needs.

    Cells are numbered 0..n-1 in name order; island i (in perimeter order) has the
    stones listed in `islands[i]`. Two geometries are equal when their key is.
    """

    key: str  # e.g. "atoll-8/11" or "hex/11": identifies the board in records
    size: int
    cells: tuple[Coord, ...]
    names: tuple[str, ...]
    islands: tuple[Island, ...]
    directions: tuple[Coord, ...]
    _coord_to_name: dict[Coord, str] = field(repr=False, compare=False)
    _display: dict[Coord, tuple[int, int]] = field(repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Geometry) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    @cached_property
    def index(self) -> dict[Coord, int]:
        return {c: i for i, c in enumerate(self.cells)}

    @cached_property
    def name_index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    @cached_property
    def stone_island(self) -> dict[Coord, int]:
        return {s: k for k, isl in enumerate(self.islands) for s in isl.stones}

    @cached_property
    def neighbours(self) -> tuple[tuple[int, ...], ...]:
        """Playable neighbours of each cell."""
        idx = self.index
        return tuple(
            tuple(idx[(q + dq, r + dr)] for dq, dr in self.directions if (q + dq, r + dr) in idx)
            for q, r in self.cells
        )

    @cached_property
    def shores(self) -> tuple[tuple[int, ...], ...]:
        """Islands touching each cell (island indices)."""
        si = self.stone_island
        out = []
        for q, r in self.cells:
            near = {si.get((q + dq, r + dr)) for dq, dr in self.directions}
            out.append(tuple(sorted(k for k in near if k is not None)))
        return tuple(out)

    @cached_property
    def island_mask(self) -> dict[Color, int]:
        """Bit mask of the islands each colour owns."""
        masks = {Color.BLACK: 0, Color.WHITE: 0}
        for k, isl in enumerate(self.islands):
            masks[isl.owner] |= 1 << k
        return masks

    @cached_property
    def winning_masks(self) -> frozenset[int]:
        """Island sets (bit masks) that win for their owner under the generalized rule.

        With K islands around the perimeter, a connected group wins when the shortest
        perimeter arc touching all of its islands touches at least K/2 + 1 islands.
        The shortest covering arc leaves out the largest gap between consecutive
        members, so the rule is: largest cyclic gap <= K/2. Only single-colour sets
        are listed because a group only ever holds one colour's islands.
        """
        k = len(self.islands)
        wins: set[int] = set()
        for color in Color:
            own = [i for i, isl in enumerate(self.islands) if isl.owner is color]
            for sub in range(1, 1 << len(own)):
                members = [own[j] for j in range(len(own)) if sub >> j & 1]
                if len(members) < 2:
                    continue
                gaps = [b - a for a, b in itertools.pairwise(members)]
                gaps.append(members[0] + k - members[-1])
                if max(gaps) * 2 <= k:
                    wins.add(sum(1 << m for m in members))
        return frozenset(wins)

    def name_of(self, coord: Coord) -> str | None:
        """Name of any coordinate that has one (cells and, for Atoll, island stones)."""
        return self._coord_to_name.get(coord)

    def parse_coord(self, text: str) -> Coord | None:
        """Coordinates named by `text`, on or off the board, or None if not a name."""
        return _parse_name(self, text)

    def display_pos(self, coord: Coord) -> tuple[int, int]:
        return self._display[coord]


def _file_letter(x: int) -> str:
    return string.ascii_lowercase[x]


_NAME = re.compile(r"[a-z][0-9]{1,3}")


def _parse_name(geom: Geometry, text: str) -> Coord | None:
    match = _NAME.fullmatch(text.strip().lower())
    if match is None:
        return None
    word = match.group(0)
    x = ord(word[0]) - ord("a")
    rank = int(word[1:])
    if geom.key.startswith("hex"):
        return (x + 1, rank)
    return (x, rank + x // 2)


VALID_ATOLL_SIZES = (7, 11, 15, 19, 23)


def atoll(size: int = 11) -> Geometry:
    """The Atoll-8 board of side N (N = 3 mod 4; 11 is the standard board).

    Coordinates follow the board reference: q is the file index, r = rank + q // 2.
    """
    if size not in VALID_ATOLL_SIZES:
        raise ValueError(
            f"Atoll size {size} is not supported: use one of "
            f"{', '.join(map(str, VALID_ATOLL_SIZES))} (N = 3 mod 4)"
        )
    n = size
    m = (n + 1) // 2
    s = (n - 3) // 2
    cells: list[Coord] = []
    names: list[str] = []
    for x in range(n):
        top = n - 2 if x % 2 == 0 else n - 1
        for rank in range(1, top + 1):
            cells.append((x, rank + x // 2))
            names.append(f"{_file_letter(x)}{rank}")
    north_w = tuple((q, n - 1 + (q + 1) // 2) for q in range(0, m - 1))
    north_b = tuple((q, n - 1 + (q + 1) // 2) for q in range(m, n))
    south_b = tuple((q, q // 2) for q in range(0, m - 1))
    south_w = tuple((q, q // 2) for q in range(m, n))
    west_w = tuple((-1, r) for r in range(1, s + 1))
    west_b = tuple((-1, r) for r in range(s + 1, 2 * s + 1))
    e0 = (n + 3) // 2
    east_b = tuple((n, r) for r in range(e0, e0 + s))
    east_w = tuple((n, r) for r in range(e0 + s, e0 + 2 * s))
    islands = (
        Island("n", Color.WHITE, north_w, "n"),
        Island("N", Color.BLACK, north_b, "N"),
        Island("e", Color.WHITE, east_w, "e"),
        Island("E", Color.BLACK, east_b, "E"),
        Island("s", Color.WHITE, south_w, "s"),
        Island("S", Color.BLACK, south_b, "S"),
        Island("w", Color.WHITE, west_w, "w"),
        Island("W", Color.BLACK, west_b, "W"),
    )
    coord_to_name = dict(zip(cells, names, strict=True))
    display: dict[Coord, tuple[int, int]] = {}
    for q, r in list(cells) + [st for isl in islands for st in isl.stones]:
        c = q + 1
        display[(q, r)] = (2 * n + c - 2 * r - 2, 3 * c)
    return Geometry(
        key=f"atoll-8/{n}",
        size=n,
        cells=tuple(cells),
        names=tuple(names),
        islands=islands,
        directions=ATOLL_DIRECTIONS,
        _coord_to_name=coord_to_name,
        _display=display,
    )


def hex_board(size: int = 11) -> Geometry:
    """Hex on an n x n rhombus as Atoll-4: the four edges are the islands.

    HexGui names: column letter a.. left to right, row 1..n top to bottom. Black owns
    the top and bottom edges, White the left and right ones. The edges are modelled
    as rows and columns of island stones just outside the rhombus, so the same game
    logic and playout code serve both boards.
    """
    if not 2 <= size <= 26:
        raise ValueError(f"Hex size {size} is not supported: use 2 to 26")
    n = size
    cells: list[Coord] = []
    names: list[str] = []
    for c in range(1, n + 1):
        for r in range(1, n + 1):
            cells.append((c, r))
            names.append(f"{_file_letter(c - 1)}{r}")
    top = tuple((c, 0) for c in range(1, n + 1))
    right = tuple((n + 1, r) for r in range(1, n + 1))
    bottom = tuple((c, n + 1) for c in range(1, n + 1))
    left = tuple((0, r) for r in range(1, n + 1))
    islands = (
        Island("top", Color.BLACK, top, "B"),
        Island("right", Color.WHITE, right, "W"),
        Island("bottom", Color.BLACK, bottom, "B"),
        Island("left", Color.WHITE, left, "W"),
    )
    coord_to_name = dict(zip(cells, names, strict=True))
    display = {
        (q, r): (r, 2 * q + r + 2)
        for q, r in list(cells) + [st for isl in islands for st in isl.stones]
    }
    return Geometry(
        key=f"hex/{n}",
        size=n,
        cells=tuple(cells),
        names=tuple(names),
        islands=islands,
        directions=HEX_DIRECTIONS,
        _coord_to_name=coord_to_name,
        _display=display,
    )
