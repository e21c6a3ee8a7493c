"""Positions that make `arbiter check` see mistakes which keep every move legal.

An engine that reads cell names through a consistent mistake (Hex rows counted from the
bottom, letters counted from the right, letter and number swapped) writes its own moves through
the same mistake, so each of its moves lands on a cell that is really empty: legality
never shows it. Its board is a mirror image whose connections are not the referee's,
and it loses game after game. What shows it is what it *wants*: in a position where the
side to move has exactly one winning cell, an engine that takes a win plays that cell,
and a confused one plays the cell that wins on its mirrored board, which these probes
arrange to be another one. The prediction is exact, so a confused engine is named with
its mistake, and an engine that does not take wins is never blamed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from arbiter.rules import Color, Game, Variant

Names = Callable[[int, int, dict[int, int]], tuple[int, int]]


@dataclass(frozen=True)
class Misreading:
    """One consistent way of getting cell names wrong, as a map of (file, number)."""

    key: str
    words: str  # "rows counted from the bottom", for a message
    flip: Names  # (file index, number, heights of files) -> (file index, number)

    def cells(self, variant: Variant) -> dict[int, int] | None:
        """The cell an engine with this mistake means by each cell's name, when the
        mistake maps the board's names onto themselves (else None: such an engine names
        cells off the board, which the legality checks already catch)."""
        geom = variant.geometry
        parsed = [(ord(name[0]) - ord("a"), int(name[1:])) for name in geom.names]
        heights: dict[int, int] = {}
        for x, k in parsed:
            heights[x] = max(heights.get(x, 0), k)
        index = {xk: i for i, xk in enumerate(parsed)}
        out: dict[int, int] = {}
        for cell, (x, k) in enumerate(parsed):
            other = index.get(self.flip(x, k, heights))
            if other is None:
                return None
            out[cell] = other
        if sorted(out.values()) != list(range(len(parsed))) or out == {c: c for c in out}:
            return None
        return out

    def hint(self, variant: Variant) -> str:
        if self.key == "rows" and variant.islands == 4:
            return (
                "read Hex cell names with the letter counted from the left and the row"
                " from the top: a1 is the top-left corner (PROTOCOL.md section 4.2);"
                " Atoll counts ranks from the bottom, Hex rows from the top"
            )
        if self.key == "rows":
            return (
                "read Atoll cell names with the letter counted from the left and the rank"
                " from the bottom: rank 1 is the bottom cell of each file (PROTOCOL.md"
                " section 4.1)"
            )
        section = "4.2" if variant.islands == 4 else "4.1"
        return (
            "the letter is the column (file) and the number the row (rank), not the"
            f" other way round (PROTOCOL.md section {section})"
        )


def _rows(x: int, k: int, heights: dict[int, int]) -> tuple[int, int]:
    return x, heights[x] + 1 - k


def _transposed(x: int, k: int, heights: dict[int, int]) -> tuple[int, int]:
    return k - 1, x + 1


# Rows counted from the other end and letters counted from the right are one mistake
# here: both boards look the same turned half round (which keeps every island's owner),
# so no position can tell them apart, and one probe serves both.
MISREADINGS = (
    Misreading("rows", "rows counted from the other end (or letters from the right)", _rows),
    Misreading("transposed", "letter and number swapped", _transposed),
)


@dataclass(frozen=True)
class Probe:
    """A position, Black to move, where Black has exactly one winning cell and White
    none. In a test, no mistake's board has Black winning there (`confused`: where a
    mistake's board has Black winning, if at one cell); in a control, the position is
    its own mirror image under one mistake, so an engine with that mistake plays the
    winning cell too: it tells an engine that takes wins from one that does not."""

    moves: tuple[int, ...]
    win: int
    confused: dict[str, int | None]


def centre_cell(variant: Variant) -> int:
    """The most central cell: the one nearest the mean of all cells, in the hex metric
    of axial coordinates (exactly the centre on boards symmetric about one cell)."""
    cells = variant.geometry.cells
    mq = sum(q for q, _ in cells) / len(cells)
    mr = sum(r for _, r in cells) / len(cells)

    def distance(cell: int) -> float:
        dq, dr = cells[cell][0] - mq, cells[cell][1] - mr
        return dq * dq + dr * dr + dq * dr

    return min(range(len(cells)), key=distance)


def mappings(variant: Variant) -> dict[str, dict[int, int]]:
    """The mistakes that map this board's names onto themselves, by key."""
    return {m.key: cells for m in MISREADINGS if (cells := m.cells(variant)) is not None}


def _confused_wins(
    black: list[int], white: list[int], mapping: dict[int, int], variant: Variant
) -> list[int]:
    """The cells an engine with `mapping` names when it takes Black's win on the board it
    believes in (empty when it believes there is none)."""
    game = Game(Variant(variant.islands, variant.size, pie=False))
    for b, w in zip(black, white, strict=True):
        if game.play(mapping[b]) is not None or game.play(mapping[w]) is not None:
            return []  # it believes the game over
    return [mapping[y] for y in game.winning_cells(Color.BLACK)]


def _grow(
    variant: Variant,
    orbits: list[tuple[int, ...]],
    rng: random.Random,
    accept: Callable[[int], bool] = lambda cell: True,
) -> tuple[list[int], list[int], int] | None:
    """Stones placed orbit by orbit, in random order and balanced colours, until Black
    (to move) has exactly one winning cell, one `accept`s, and White none; None if that
    never comes before the board is full. An orbit that would end the game is skipped."""
    game = Game(Variant(variant.islands, variant.size, pie=False))
    black: list[int] = []
    white: list[int] = []
    n = variant.geometry.n_cells
    # At least a quarter of the board stays empty: an engine that plays at random hits
    # the winning cell by chance rarely, and a test of several positions almost never.
    limit = n - max(4, n // 4)
    rng.shuffle(orbits)
    for orbit in orbits:
        if len(black) + len(white) > limit:
            return None
        color = Color.BLACK if len(black) <= len(white) else Color.WHITE
        trial = game.copy()
        for cell in orbit:
            trial.to_move = color
            if trial.play(cell) is not None:
                break
        else:
            game = trial
            (black if color is Color.BLACK else white).extend(orbit)
            if len(black) == len(white):
                wins = game.winning_cells(Color.BLACK)
                if len(wins) == 1 and not game.winning_cells(Color.WHITE) and accept(wins[0]):
                    return black, white, wins[0]
    return None


def _moves(black: list[int], white: list[int]) -> tuple[int, ...]:
    return tuple(c for pair in zip(black, white, strict=True) for c in pair)


def plain_probes(variant: Variant, seed: int, count: int, *, tries: int = 300) -> list[Probe]:
    """Positions where an engine that reads names right and takes a win plays the
    winning cell, and one with any of the mistakes (that map the board onto itself)
    does not."""
    maps = mappings(variant)
    rng = random.Random(f"{seed}-tests-{variant.islands}-{variant.size}")
    singles: list[tuple[int, ...]] = [(c,) for c in range(variant.geometry.n_cells)]
    probes: list[Probe] = []
    for _ in range(tries):
        if len(probes) == count:
            break
        grown = _grow(variant, singles, rng)
        if grown is None:
            continue
        black, white, win = grown
        confused: dict[str, int | None] = {}
        for key, mapping in maps.items():
            cells = _confused_wins(black, white, mapping, variant)
            if win in cells:
                break
            confused[key] = cells[0] if len(cells) == 1 else None
        else:
            probes.append(Probe(_moves(black, white), win, confused))
    return probes


def mirror_probes(
    variant: Variant, key: str, seed: int, count: int, *, tries: int = 600
) -> list[Probe]:
    """Positions that are their own mirror image under mistake `key`: an engine with
    that mistake sees the true board, so if it takes wins it plays the winning cell."""
    mapping = mappings(variant).get(key)
    if mapping is None:
        return []
    orbits = sorted({tuple(sorted({c, mapping[c]})) for c in mapping})
    rng = random.Random(f"{seed}-controls-{key}-{variant.islands}-{variant.size}")
    probes: list[Probe] = []
    for _ in range(tries):
        if len(probes) == count:
            break
        # An engine with the mistake sees this very board and names its winning cell
        # through the mistake: the same cell only where the mistake leaves it in place.
        grown = _grow(variant, list(orbits), rng, lambda cell: mapping[cell] == cell)
        if grown is not None:
            black, white, win = grown
            probes.append(Probe(_moves(black, white), win, {key: win}))
    return probes


def misreading(key: str) -> Misreading:
    return next(m for m in MISREADINGS if m.key == key)
