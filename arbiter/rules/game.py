"""Game state: alternate placement, the pie rule and incremental win detection."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from arbiter.rules.geometry import Color, Geometry, atoll, hex_board
from arbiter.rules.render import render

SWAP: Final = "swap"
SWAP_ALIASES: Final = frozenset({"swap", "swap-pieces", "swap-sides"})

Move = int | str  # a cell index, or SWAP


class IllegalReason(Enum):
    UNPARSEABLE = "unparseable"
    OFF_BOARD = "off-board"
    ISLAND = "island"
    OCCUPIED = "occupied"
    SWAP_NOT_ALLOWED = "swap not allowed"
    GAME_OVER = "game over"
    WRONG_TURN = "not this colour's turn"


class IllegalMove(ValueError):
    """A move the rules do not allow; `reason` says which rule it broke."""

    def __init__(self, reason: IllegalReason, move: str, detail: str = "") -> None:
        self.reason = reason
        self.move = move
        extra = f" ({detail})" if detail else ""
        super().__init__(f"illegal move {move!r}: {reason.value}{extra}")


@dataclass(frozen=True)
class Variant:
    """What is being played: the board and whether the pie rule is on.

    `islands` 8 is Atoll, 4 is Hex. New island counts become new geometries.
    """

    islands: int = 8
    size: int = 11
    pie: bool = True

    def __post_init__(self) -> None:
        self.geometry  # noqa: B018 - validates size and island count early

    @property
    def geometry(self) -> Geometry:
        return _geometry(self.islands, self.size)

    def __str__(self) -> str:
        kind = "hex" if self.islands == 4 else f"atoll-{self.islands}"
        return f"{kind}/{self.size}" + ("" if self.pie else " no-pie")


_GEOMS: dict[tuple[int, int], Geometry] = {}


def _geometry(islands: int, size: int) -> Geometry:
    key = (islands, size)
    geom = _GEOMS.get(key)
    if geom is None:
        if islands == 8:
            geom = atoll(size)
        elif islands == 4:
            geom = hex_board(size)
        else:
            raise ValueError(
                f"{islands} islands is not a supported variant: use 8 (Atoll) or 4 (Hex)"
            )
        _GEOMS[key] = geom
    return geom


class Game:
    """One game in stone colours: Black first, `swap` as move 2 when the pie rule is on.

    After a swap the first stone stays black and White moves again, so the colour to
    move after ``b f5, w swap`` is White. Which *player* owns which colour is the
    referee's business, not the rules'.

    Win detection is a union-find over the cells plus one node per island; each root
    carries the bit mask of islands its group touches. `copy()` duplicates a handful
    of flat lists, which is what search bots need instead of undo.
    """

    __slots__ = (
        "_mask",
        "_parent",
        "colors",
        "geometry",
        "moves",
        "n_stones",
        "swapped",
        "to_move",
        "variant",
        "winner",
    )

    def __init__(self, variant: Variant | None = None) -> None:
        self.variant = variant or Variant()
        geom = self.variant.geometry
        self.geometry = geom
        n = geom.n_cells
        k = len(geom.islands)
        self.colors: list[int] = [0] * n
        self._parent: list[int] = list(range(n + k))
        self._mask: list[int] = [0] * n + [1 << i for i in range(k)]
        self.moves: list[Move] = []
        self.to_move = Color.BLACK
        self.winner: Color | None = None
        self.swapped = False
        self.n_stones = 0

    def copy(self) -> Game:
        g = Game.__new__(Game)
        g.variant = self.variant
        g.geometry = self.geometry
        g.colors = self.colors[:]
        g._parent = self._parent[:]
        g._mask = self._mask[:]
        g.moves = self.moves[:]
        g.to_move = self.to_move
        g.winner = self.winner
        g.swapped = self.swapped
        g.n_stones = self.n_stones
        return g

    @property
    def over(self) -> bool:
        return self.winner is not None

    @property
    def swap_allowed(self) -> bool:
        return self.variant.pie and len(self.moves) == 1 and self.winner is None

    def parse_move(self, text: str) -> Move:
        """Turn a move name into a cell index or SWAP, or raise IllegalMove with the reason."""
        word = text.strip().lower()
        if word in SWAP_ALIASES:
            return SWAP
        geom = self.geometry
        idx = geom.name_index.get(word)
        if idx is not None:
            return idx
        coord = geom.parse_coord(word)
        if coord is None:
            raise IllegalMove(IllegalReason.UNPARSEABLE, text, "not a cell name like f5 or swap")
        if coord in geom.stone_island:
            raise IllegalMove(IllegalReason.ISLAND, text, "that cell holds an island stone")
        raise IllegalMove(IllegalReason.OFF_BOARD, text, f"not on the {geom.key} board")

    def move_name(self, move: Move) -> str:
        return SWAP if move == SWAP else self.geometry.names[int(move)]

    def check(self, move: Move, color: Color | None = None) -> None:
        """Raise IllegalMove if `move` may not be played now (by `color`, if given)."""
        on_board = move == SWAP or 0 <= int(move) < len(self.colors)
        name = self.move_name(move) if on_board else str(move)
        if self.winner is not None:
            raise IllegalMove(IllegalReason.GAME_OVER, name)
        if color is not None and color is not self.to_move:
            raise IllegalMove(IllegalReason.WRONG_TURN, name, f"{self.to_move} to move")
        if move == SWAP:
            if not self.swap_allowed:
                why = "the pie rule is off" if not self.variant.pie else "only as move 2"
                raise IllegalMove(IllegalReason.SWAP_NOT_ALLOWED, name, why)
            return
        cell = int(move)
        if not 0 <= cell < len(self.colors):
            raise IllegalMove(IllegalReason.OFF_BOARD, name)
        if self.colors[cell]:
            raise IllegalMove(IllegalReason.OCCUPIED, name)

    def play(self, move: Move | str, color: Color | None = None) -> Color | None:
        """Play for the side to move; returns the winner once there is one."""
        if isinstance(move, str) and move != SWAP:
            move = self.parse_move(move)
        self.check(move, color)
        if move == SWAP:
            self.swapped = True
            self.moves.append(SWAP)
            # The stone stays black; the swapping player takes Black over and the
            # original first player now moves, as White.
            self.to_move = Color.WHITE
            return None
        return self._place(int(move))

    def _place(self, cell: int) -> Color | None:
        color = self.to_move
        c = int(color)
        geom = self.geometry
        self.colors[cell] = c
        self.n_stones += 1
        self.moves.append(cell)
        mask = self._mask
        root = cell
        colors = self.colors
        for nb in geom.neighbours[cell]:
            if colors[nb] == c:
                root = self._union(root, nb)
        n = len(colors)
        for k in geom.shores[cell]:
            if geom.islands[k].owner is color:
                root = self._union(root, n + k)
        self.to_move = color.other
        if mask[root] in geom.winning_masks:
            self.winner = color
        return self.winner

    def _find(self, x: int) -> int:
        parent = self._parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def _union(self, a: int, b: int) -> int:
        ra = self._find(a)
        rb = self._find(b)
        if ra == rb:
            return ra
        self._parent[rb] = ra
        self._mask[ra] |= self._mask[rb]
        return ra

    def legal_cells(self) -> list[int]:
        return [i for i, c in enumerate(self.colors) if c == 0] if self.winner is None else []

    def winning_cells(self, color: Color) -> list[int]:
        """Empty cells where a `color` stone would win at once, read off the union-find.

        Search bots call this on every move (take a win, block a single threat, see a
        double threat), so it merges island masks instead of copying the game per cell.
        """
        if self.winner is not None:
            return []
        c = int(color)
        geom = self.geometry
        colors = self.colors
        mask = self._mask
        wins = geom.winning_masks
        own = geom.island_mask[color]
        n = len(colors)
        out = []
        for cell, value in enumerate(colors):
            if value:
                continue
            m = 0
            # An island joins whatever group already reached it through another shore.
            for k in geom.shores[cell]:
                if own >> k & 1:
                    m |= mask[self._find(n + k)]
            for nb in geom.neighbours[cell]:
                if colors[nb] == c:
                    m |= mask[self._find(nb)]
            if m in wins:
                out.append(cell)
        return out

    def last_cell(self) -> int | None:
        last = next((m for m in reversed(self.moves) if m != SWAP), None)
        return None if last is None else int(last)

    def winning_chain(self) -> frozenset[int]:
        """The winner's stones connected to the winning island pair (empty while open)."""
        last = self.last_cell()
        if self.winner is None or last is None:
            return frozenset()
        root = self._find(last)
        c = int(self.winner)
        return frozenset(
            i for i, color in enumerate(self.colors) if color == c and self._find(i) == root
        )

    def render(self, *, marked: bool = False) -> str:
        """The board as text; `marked` draws the last move and the winning chain apart."""
        last = self.last_cell()
        if not marked:
            return render(self.geometry, list(self.colors), last=last)
        return render(
            self.geometry, list(self.colors), last=last, chain=self.winning_chain(), mark_last=True
        )


_TABLES: dict[str, tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...], int]] = {}


def _tables(geom: Geometry) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...], int]:
    """Per board: each cell's shores owned by Black, by White, and the island count."""
    found = _TABLES.get(geom.key)
    if found is None:
        owned = [
            tuple(
                tuple(k for k in geom.shores[cell] if geom.islands[k].owner is color)
                for cell in range(geom.n_cells)
            )
            for color in (Color.BLACK, Color.WHITE)
        ]
        found = _TABLES[geom.key] = (owned[0], owned[1], len(geom.islands))
    return found


def replay_winner(variant: Variant, moves: list[str]) -> Color | None:
    """Who has connected once `moves` (move names) are played from the empty board, as
    `Game.play` move by move would find it, and IllegalMove where it would refuse one:
    the check every record gets when it is read, so it is one tight loop for moves as
    the referee writes them (canonical cell names, a swap as move 2), and a replay with
    `Game` for anything else (which then says what is wrong)."""
    geom = variant.geometry
    index = geom.name_index
    n = geom.n_cells
    black_shores, white_shores, k = _tables(geom)
    neighbours = geom.neighbours
    winning = geom.winning_masks
    colors = [0] * n
    parent = list(range(n + k))
    mask = [0] * n + [1 << i for i in range(k)]
    placed = 0
    last = len(moves) - 1
    for ply, move in enumerate(moves):
        cell = index.get(move)
        if cell is None or colors[cell]:
            if move == SWAP and ply == 1 and variant.pie:
                continue
            return _replayed(variant, moves)
        c = 1 if placed % 2 == 0 else 2
        placed += 1
        colors[cell] = c
        m = 0
        for other in neighbours[cell]:
            if colors[other] != c:
                continue
            while parent[other] != other:  # find, halving the path
                parent[other] = parent[parent[other]]
                other = parent[other]
            if other != cell:
                parent[other] = cell
                m |= mask[other]
        for i in (black_shores if c == 1 else white_shores)[cell]:
            other = n + i
            while parent[other] != other:
                parent[other] = parent[parent[other]]
                other = parent[other]
            if other != cell:
                parent[other] = cell
                m |= mask[other]
        mask[cell] = m
        root = cell
        if mask[root] in winning:
            if ply != last:
                return _replayed(variant, moves)
            return Color.BLACK if c == 1 else Color.WHITE
    return None


def _replayed(variant: Variant, moves: list[str]) -> Color | None:
    game = Game(variant)
    for move in moves:
        game.play(move)
    return game.winner
