"""Positions with one winning cell, for the mistakes that keep every move legal.

A bot that takes a win in one somewhere must take it everywhere. Each position here has
exactly one cell that wins at once for the side to move, and the opponent has none: a
threat of the opponent's elsewhere cannot exist (two winning chains, one of each colour,
would cross), so a bot that plays for the wrong colour and blocks takes the same cell.
What shows such a bot is its own stone recorded in the wrong colour (`block_then_win`).
The positions cover what
real bots get wrong: White as well as Black, both variants, the smallest and largest
size, play after a swap by either side, a win that runs through a third island of the
mover's colour, and positions where joining two neighbouring islands (not a win) is on
offer. Where a mistake can be modelled, the position is chosen so that a bot with it
does not find the winning cell on the board it believes in; the position's `mistake`
says which mistake a miss most likely means.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from arbiter.rules import Color, Game, Variant
from arbiter.rules.game import SWAP

# How many tries each kind of position gets before it is given up on this board.
TRIES = 60


@dataclass(frozen=True)
class WinPosition:
    """Moves from the empty board (names, `swap` included), then `mover` has one win."""

    variant: Variant
    moves: tuple[str, ...]
    mover: Color
    win: str
    situation: str  # "White to move", for the message
    mistake: str  # the likely mistake when a bot that takes wins misses this one
    evidence: bool = False  # a plain position: taking all of these shows it takes wins
    first_genmove: bool = False  # the bot chooses the first stone itself (then a swap)
    decoys: tuple[str, ...] = ()  # non-winning joins of two islands: answering one shows it
    genmoves: tuple[int, ...] = ()  # the moves (by index) the bot chose itself

    def describe(self) -> str:
        moves = " ".join(self.moves) if self.moves else "(none)"
        return f"{self.variant}, {self.situation}, {self.mover} to move after {moves}"


Accept = Callable[[Game, int], bool]


def _any(game: Game, win: int) -> bool:
    return True


def _islands_of(game: Game, color: Color, cells: set[int]) -> int:
    geom = game.geometry
    mask = 0
    for cell in cells:
        for k in geom.shores[cell]:
            if geom.islands[k].owner is color:
                mask |= 1 << k
    return mask


def _stone_groups(game: Game, color: Color) -> list[set[int]]:
    """`color`'s groups of stones joined by stones only, islands not counted as links."""
    geom = game.geometry
    seen: set[int] = set()
    groups = []
    for start, value in enumerate(game.colors):
        if value != color or start in seen:
            continue
        group = {start}
        todo = [start]
        while todo:
            cell = todo.pop()
            for nb in geom.neighbours[cell]:
                if game.colors[nb] == color and nb not in group:
                    group.add(nb)
                    todo.append(nb)
        seen |= group
        groups.append(group)
    return groups


def _wins_through_an_island(game: Game, win: int) -> bool:
    """After `win`, no group of stones alone touches a winning set of islands: the win
    needs an island of the mover's colour as a link between two groups."""
    after = game.copy()
    mover = after.to_move
    after.play(win)
    masks = after.geometry.winning_masks
    return not any(_islands_of(after, mover, g) in masks for g in _stone_groups(after, mover))


def joins(game: Game, color: Color) -> list[int]:
    """Empty cells where a `color` stone makes a group (through islands) touch two or
    more of its islands: what a bot that counts any two islands as a win takes."""
    out = []
    for cell in game.legal_cells():
        trial = game.copy()
        trial.to_move = color
        trial.play(cell)
        root = trial._find(cell)  # the group through its islands, as the referee sees it
        if bin(trial._mask[root] & trial.geometry.island_mask[color]).count("1") >= 2:
            out.append(cell)
    return out


def _decoy(before: bool) -> Accept:
    """A join of two neighbouring islands is on offer, in cell order before (or after)
    the winning cell, since a bot with this mistake takes the first it finds."""

    def accept(game: Game, win: int) -> bool:
        offered = [c for c in joins(game, game.to_move) if c != win]
        return any((c < win) if before else (c > win) for c in offered)

    return accept


def invented_top_cells(variant: Variant) -> list[tuple[int, int]]:
    """The cells a bot that gives even files the height of odd ones believes in: one
    above the top of each even file, where an island stone stands (axial q, r)."""
    n = variant.size
    return [(x, n - 1 + x // 2) for x in range(0, n, 2)] if variant.islands == 8 else []


def invented_wins(game: Game, color: Color) -> list[int]:
    """The files whose invented top cell wins for `color` on such a bot's board: a flood
    fill from that cell over `color`'s stones and through its islands."""
    geom = game.geometry
    invented = invented_top_cells(game.variant)
    coords = list(geom.cells) + invented
    index = {c: i for i, c in enumerate(coords)}
    near_stone = geom.stone_island
    mine = geom.island_mask[color]
    islands = [
        sum(
            1 << k
            for k in {near_stone.get((q + dq, r + dr)) for dq, dr in geom.directions}
            if k is not None and mine >> k & 1
        )
        for q, r in coords
    ]
    stones = [i for i in range(geom.n_cells) if game.colors[i] == color]
    out = []
    for start in range(geom.n_cells, len(coords)):
        seen, todo, reached = {start}, [start], 0
        while todo:
            cell = todo.pop()
            q, r = coords[cell]
            fresh = islands[cell] & ~reached
            reached |= islands[cell]
            linked = [s for s in stones if islands[s] & fresh] if fresh else []
            for dq, dr in geom.directions:
                j = index.get((q + dq, r + dr))
                if j is not None and j < geom.n_cells and game.colors[j] == color:
                    linked.append(j)
            for j in linked:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        if reached in geom.winning_masks:
            out.append(coords[start][0])
    return out


def _invented_first(game: Game, win: int) -> bool:
    """An invented top cell wins on the bot's board, in a file before the winning cell's:
    a bot that scans its cells file by file answers the invented one."""
    files = invented_wins(game, game.to_move)
    return any(x < game.geometry.cells[win][0] for x in files)


def _recoloured(first: int) -> Accept:
    """The swapped first stone is White on a bot's board that recoloured it: there the
    winning cell is not a win for the mover."""

    def accept(game: Game, win: int) -> bool:
        board = Game(Variant(game.variant.islands, game.variant.size, pie=False))
        for cell, value in enumerate(game.colors):
            if value:
                board.to_move = Color.WHITE if cell == first else Color(value)
                if board.play(cell) is not None:
                    return True  # that board is over: it finds no win at all
        return win not in board.winning_cells(game.to_move)

    return accept


def grow(
    variant: Variant,
    rng: random.Random,
    prefix: list[str],
    mover: Color,
    accept: Accept = _any,
    need_threat: bool = False,
) -> tuple[list[str], int] | None:
    """Random stones after `prefix` until `mover` is to move with exactly one winning
    cell (that `accept`s) while the opponent threatens one elsewhere (`need_threat`) or
    nowhere; None if that
    does not come while an eighth of the board is still empty."""
    game = Game(variant)
    for move in prefix:
        game.play(move)
    n = variant.geometry.n_cells
    limit = n - max(3, n // 8)
    cells = game.legal_cells()
    rng.shuffle(cells)
    threats: set[int] = set()  # the opponent's winning cells, kept open
    for cell in cells:
        if game.n_stones >= limit:
            return None
        if cell in threats:
            continue
        trial = game.copy()
        if trial.play(cell) is not None:
            continue  # that would end the game: keep it open
        game = trial
        if need_threat:
            threats = set(game.winning_cells(mover.other))
        if game.to_move is not mover or game.n_stones < n // 2:
            continue  # (a win in one this early is rare: not worth the search)
        wins = game.winning_cells(mover)
        if len(wins) != 1:
            continue
        theirs = [c for c in game.winning_cells(mover.other) if c != wins[0]]
        if (
            bool(theirs) is need_threat
            and (need_threat or not game.winning_cells(mover.other))
            and accept(game, wins[0])
        ):
            return [game.move_name(m) for m in game.moves], wins[0]
    return None


def _find(
    variant: Variant,
    seed: str,
    prefix: list[str],
    mover: Color,
    accept: Accept = _any,
    need_threat: bool = False,
) -> tuple[list[str], int] | None:
    rng = random.Random(f"{seed}-{variant}-{prefix}-{mover}")
    for _ in range(TRIES):
        found = grow(variant, rng, prefix, mover, accept, need_threat)
        if found is not None:
            return found
    return None


_BOARD = (
    "its board or its win test disagrees with the referee's: check the neighbour rule"
    " for files of both parities, each file's height (PROTOCOL.md section 4.1), and that"
    " a chain may run through an island of its own colour"
)
_HEX_BOARD = (
    "its Hex board disagrees with the referee's: rows are numbered from the top (a1 is"
    " the top-left corner) and each cell has six neighbours (PROTOCOL.md section 4.2)"
)
COLOUR = (
    "it plays for the wrong colour: look for wins of the colour genmove names, on every genmove"
)
_SIZE = (
    "its board breaks on this size: size every array for the largest board it accepts"
    " (Atoll 23 has 495 cells, Hex 26 has 676: more than a byte can index)"
)
_SWAP = (
    "after `play w swap` the first stone stays black and White moves (PROTOCOL.md section"
    " 4.3): do not recolour it, and take the colour from each genmove, not the first one"
)
_THIRD = (
    "its win test does not chain through islands: an island's stones belong to its"
    " owner's chains, so a chain may run through a third island of the same colour"
    " (PROTOCOL.md section 4.1)"
)
TOP = (
    "its board has cells the referee's has not: on Atoll, even files (a, c, e, ...) have"
    " size-2 cells and odd files size-1, and above the top of an even file stands an"
    " island stone (PROTOCOL.md section 4.1)"
)
SWAP_HINT = _SWAP  # the mistake a miss after a swap most likely shows
JOIN = (
    "it counts a join of two islands that does not win as a win: only sets of its"
    " islands with no gap of more than half the perimeter win, e.g. two opposite ones"
    " (PROTOCOL.md section 4.1)"
)

# The mistakes in the order a miss names them: one shown by a single situation first.
SPECIFIC = (TOP, JOIN, _THIRD, _SWAP, COLOUR, _SIZE)


def variant_letters(size: int) -> str:
    """The file letters of a board of `size` files."""
    return "abcdefghijklmnopqrstuvwxyz"[:size]


def win_positions(variant_list: list[Variant], seed: int, main_size: int) -> list[WinPosition]:
    """The positions for the variants an engine plays (deterministic for `seed`)."""
    out: list[WinPosition] = []
    s = str(seed)
    for islands in (8, 4):
        mine = [v for v in variant_list if v.islands == islands]
        if not mine:
            continue
        sizes = sorted({v.size for v in mine})
        pie = any(v.pie for v in mine)
        main = min(sizes, key=lambda n: (abs(n - main_size), n))
        board = _BOARD if islands == 8 else _HEX_BOARD

        def add(
            size: int,
            situation: str,
            mistake: str,
            prefix: list[str],
            mover: Color,
            accept: Accept = _any,
            *,
            with_pie: bool = False,
            evidence: bool = False,
            first_genmove: bool = False,
            tag: str = "",
            islands: int = islands,
        ) -> None:
            variant = Variant(islands, size, pie=with_pie)
            threat = False  # none can exist: see the module docstring
            found = _find(variant, s + tag, prefix, mover, accept, threat)
            if found is not None:
                moves, win = found
                decoys: tuple[str, ...] = ()
                if mistake == JOIN:
                    game = Game(variant)
                    for move in moves:
                        game.play(move)
                    names = variant.geometry.names
                    decoys = tuple(names[c] for c in joins(game, mover) if c != win)
                out.append(
                    WinPosition(
                        variant,
                        tuple(moves),
                        mover,
                        variant.geometry.names[win],
                        situation,
                        mistake,
                        evidence,
                        first_genmove,
                        decoys,
                    )
                )

        for i in range(3):
            add(main, "plain", board, [], Color.BLACK, evidence=True, tag=f"p{i}")
        for i in range(2):
            add(main, "White to move", COLOUR, [], Color.WHITE, tag=f"w{i}")
        for size in {sizes[0], sizes[-1]} - {main}:
            words = "smallest size" if size == sizes[0] else "largest size"
            for mover in Color:
                add(size, words, _SIZE if size == sizes[-1] else board, [], mover)
        if islands == 8:
            for i in range(2):
                add(
                    main,
                    "win through a third island",
                    _THIRD,
                    [],
                    Color(i + 1),
                    _wins_through_an_island,
                    tag=f"t{i}",
                )
            # A black chain from the top of the file left of the even file beside the
            # gap between the northern islands, and a stone on the right of it: the cell
            # between them is an island stone, so only an invented cell joins them.
            gap = (main + 1) // 2 - 1
            letters = variant_letters(main)
            beside = [
                f"{letters[gap - 2]}{main - 1}",
                f"{letters[gap - 1]}{main - 2}",
                f"{letters[gap]}{main - 1}",
            ]
            for i in range(2):
                add(
                    main,
                    "a cell above the top of an even file on offer",
                    TOP,
                    beside,
                    Color.BLACK,
                    _invented_first,
                    tag=f"c{i}",
                )
            for i, before in enumerate((True, False)):
                add(
                    main,
                    "a non-winning join of two islands on offer",
                    JOIN,
                    [],
                    Color(i + 1),
                    _decoy(before),
                    tag=f"j{i}",
                )
        if pie:
            variant = Variant(islands, main, pie=True)
            rng = random.Random(f"{s}-swap-{variant}")
            for mover, words in (
                (Color.WHITE, "after the opponent's swap"),
                (Color.BLACK, "after its own swap"),
            ):
                # Not every first stone makes a position where recolouring it matters.
                for _ in range(4):
                    first = rng.choice(range(variant.geometry.n_cells))
                    found_before = len(out)
                    add(
                        main,
                        words,
                        _SWAP,
                        [variant.geometry.names[first], SWAP],
                        mover,
                        _recoloured(first),
                        with_pie=True,
                    )
                    if len(out) > found_before:
                        break
    return out


def unpositioned(
    variant_list: list[Variant], positions: list[WinPosition]
) -> list[tuple[str, str]]:
    """The smallest and largest sizes an engine plays that have no win position, and why.
    Hex 2 is one: on its four cells, wherever the mover has one winning cell the same
    cell wins for the opponent too (a bot that only blocks would take it as well)."""
    out = []
    for islands in (8, 4):
        sizes = sorted({v.size for v in variant_list if v.islands == islands})
        for size in dict.fromkeys(sizes[:1] + sizes[-1:]):
            if not any(p.variant.islands == islands and p.variant.size == size for p in positions):
                board = f"{'Atoll' if islands == 8 else 'Hex'} {size}"
                out.append(
                    (
                        board,
                        f"{board}: no position was found with one winning cell for the side"
                        " to move and none for the other, so wins in one are checked on the"
                        " other sizes only",
                    )
                )
    return out


def choose_first(variant: Variant, answer: str, seed: int) -> WinPosition | None:
    """After the bot chose the first stone itself (`answer` to `genmove b`) and the
    opponent swapped: a position where it, now White, has one win."""
    found = _find(variant, f"{seed}-first", [answer, SWAP], Color.WHITE)
    if found is None:
        return None
    moves, win = found
    return WinPosition(
        variant,
        tuple(moves),
        Color.WHITE,
        variant.geometry.names[win],
        "its first stone swapped",
        _SWAP,
        first_genmove=True,
        genmoves=(0,),
    )


@dataclass(frozen=True)
class BlockThenWin:
    """After the bot's first stone and the opponent's swap, `moves` leave White (the bot)
    one block to make, `block`, and no win; after the block and `more`, White has one
    win, `win`, that needs the blocking stone to be White's. A bot that kept the colour
    of its first genmove recorded its block as Black, and does not see the win."""

    moves: tuple[str, ...]
    block: str
    more: tuple[str, ...]
    win: str


def _without(game: Game, cell: int) -> Game | None:
    """`game`'s stones but the one on `cell` (None if that board would be over)."""
    board = Game(Variant(game.variant.islands, game.variant.size, pie=False))
    for other, value in enumerate(game.colors):
        if value and other != cell:
            board.to_move = Color(value)
            if board.play(other) is not None:
                return None
    return board


def _block_then_win(variant: Variant, rng: random.Random, prefix: list[str]) -> BlockThenWin | None:
    game = Game(variant)
    for move in prefix:
        game.play(move)
    n = variant.geometry.n_cells
    cells = game.legal_cells()
    rng.shuffle(cells)
    for i, cell in enumerate(cells):
        trial = game.copy()
        if trial.play(cell) is not None:
            return None
        game = trial
        if game.to_move is not Color.WHITE or game.n_stones < n // 3:
            continue
        threat = game.winning_cells(Color.BLACK)
        if len(threat) != 1 or game.winning_cells(Color.WHITE):
            continue
        block = threat[0]
        after = game.copy()
        after.play(block)
        for other in cells[i + 1 :]:
            if other == block:
                continue
            step = after.copy()
            if step.play(other) is not None:
                break
            after = step
            if after.to_move is not Color.WHITE:
                continue
            wins = after.winning_cells(Color.WHITE)
            if len(wins) != 1 or after.winning_cells(Color.BLACK):
                if wins or after.winning_cells(Color.BLACK):
                    break
                continue
            board = _without(after, block)
            if board is None or wins[0] in board.winning_cells(Color.WHITE):
                break
            names = [after.move_name(m) for m in after.moves]
            k = len(game.moves)
            return BlockThenWin(
                tuple(names[:k]), names[k], tuple(names[k + 1 :]), after.move_name(wins[0])
            )
    return None


def block_then_win(variant: Variant, answer: str, seed: int) -> BlockThenWin | None:
    """The line for a bot whose first stone was `answer` and was swapped (deterministic
    for `seed`)."""
    rng = random.Random(f"{seed}-block-{variant}-{answer}")
    for _ in range(TRIES):
        found = _block_then_win(variant, rng, [answer, SWAP])
        if found is not None:
            return found
    return None
