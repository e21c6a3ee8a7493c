"""Positions and variants `arbiter check` plays, chosen deterministically from a seed."""

from __future__ import annotations

import random
from collections.abc import Callable

from arbiter.engines.process import EngineSpec
from arbiter.rules import VALID_ATOLL_SIZES, Game, Variant


def near_full_position(variant: Variant, seed: int) -> Game:
    """A position with few empty cells and no winner yet, for the edge-case genmove."""
    rng = random.Random(seed)
    game = Game(Variant(variant.islands, variant.size, pie=False))
    cells = list(range(game.geometry.n_cells))
    rng.shuffle(cells)
    progress = True
    while progress:
        progress = False
        for cell in cells:
            if game.colors[cell]:
                continue
            trial = game.copy()
            if trial.play(cell) is None:
                game = trial
                progress = True
    return game


HEX_SIZES = (2, 5, 11, 19, 26)  # the smallest and largest, and sizes people play
MAIN_SIZE = 11


def variants_to_check(spec: EngineSpec, supports: Callable[[str], bool]) -> list[Variant]:
    """Every variant the engine lists or declares: its declared sizes, else every Atoll
    size and the smallest, largest and usual Hex sizes; Hex when it plays 4 islands; the
    pie rule on and off. The standard board comes first."""
    d = spec.dialect
    islands = [8, 4] if supports("atoll-islands") else list(d.islands or (8,))
    pies = [True, False] if supports("atoll-pie") else [True]
    out = []
    for k in islands:
        sizes = d.sizes or (VALID_ATOLL_SIZES if k == 8 else HEX_SIZES)
        for size in sorted(sizes, key=lambda n: (n != MAIN_SIZE, n)):
            for pie in pies:
                try:
                    out.append(Variant(k, size, pie))
                except ValueError:
                    continue  # a declared size this variant does not have
    return out


def tried(variants: list[Variant]) -> str:
    """The variants and sizes a check played, in words, for its summary."""
    parts = []
    for islands, label in ((8, "Atoll"), (4, "Hex")):
        mine = [v for v in variants if v.islands == islands]
        if not mine:
            continue
        sizes = sorted({v.size for v in mine})
        pies = {v.pie for v in mine}
        pie = (
            "pie rule on and off"
            if len(pies) == 2
            else f"pie rule {'on' if True in pies else 'off'}"
        )
        parts.append(f"{label} {', '.join(map(str, sizes))} ({pie})")
    return "; ".join(parts)


def probe_variant(variants: list[Variant], islands: int) -> Variant | None:
    """The board the coordinate probes use: the standard size, or the engine's size
    nearest to it (big enough for a position with one winning cell)."""
    mine = [v for v in variants if v.islands == islands and v.size >= 5]
    return min(mine, key=lambda v: (abs(v.size - MAIN_SIZE), not v.pie), default=None)


def open_positions(variant: Variant, seed: int, count: int) -> list[Game]:
    """Deterministic open positions of several lengths, spread over the whole board."""
    rng = random.Random(f"{seed}-{variant}")
    positions = []
    for n in range(count):
        plies = (2 + 5 * n) % max(3, variant.geometry.n_cells // 3)
        game = Game(Variant(variant.islands, variant.size, pie=False))
        for _ in range(plies):
            trial = game.copy()
            if trial.play(rng.choice(trial.legal_cells())) is not None:
                break  # that would end the game: keep the position open
            game = trial
        positions.append(game)
    return positions
