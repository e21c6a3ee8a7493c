"""The pie rule measured: a swap map of first stones and each engine's swap regret.

Under the pie rule the first stone (`moves[0]`, always seat 1's turn) ends up owned by
whoever holds Black at the end: seat 1 if seat 2 kept it, seat 2 if it said `swap` as
move 2. A first stone is fair when its owner scores 50%; the map gives, per variant and
first-stone cell, the games and the owner's score with a 95% Wilson interval, and marks
each cell *swap* (the interval lies above 50%: the stone is worth taking), *keep* (below
50%: leave it to the first player) or *even* (the interval holds 50%).

Cells are pooled over the board's colour-preserving symmetry, the 180-degree turn, on
both boards: it maps every island (Hex: every edge) onto the opposite one of the same
colour, and keeps adjacency. A mirror would swap the colours, and with them who moves
first, so it maps no game onto a game and pools nothing.

Which games count, for the map: rated games under the pie rule with a second move,
whoever chose the first stone (a random opening's stone is the referee's, which is what
makes the map cover the board) and whoever took the decision; a game whose opening went
past move 2 is left out, as its position is no longer that of the first stone. For the
regret: only decisions an engine took, those whose opening stopped at the first stone.

Pure and deterministic: records in, numbers out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from arbiter.errors import ConfigError
from arbiter.results.records import BadLine, GameRecord, StoneColor, read_records
from arbiter.rules import Variant
from arbiter.rules.geometry import Coord, Geometry

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


class Mark(StrEnum):
    """What the second player should do with a first stone on this cell."""

    SWAP = "swap"
    KEEP = "keep"
    EVEN = "even"


@dataclass(frozen=True, slots=True)
class Decision:
    """One game as the map reads it: where the first stone was, who decided at move 2
    (None where the opening decided), whether it swapped, and whether the stone's owner
    won."""

    variant: str  # the board, as Variant prints it ("atoll-8/11", "hex/11")
    cell: str  # the first stone's cell name
    decider: str | None
    swapped: bool
    owner_won: bool
    games: int = 1  # games that decided alike (a store's groups, `decisions_seen`)


@dataclass
class Reading:
    """What reading records gave: the decisions, and the games left out and why."""

    decisions: list[Decision]
    left_out: dict[str, int]


def decisions(records: Iterable[GameRecord]) -> Reading:
    """The decisions of `records` (see the module's note for which games count)."""
    out: list[Decision] = []
    left: dict[str, int] = defaultdict(int)
    for record in records:
        if record.void:
            continue
        if not record.variant.get("pie"):
            left["played without the pie rule"] += 1
        elif len(record.moves) < 2:
            left["ended before move 2"] += 1
        elif record.opening > 2:
            left["opening went past move 2"] += 1
        elif record.winner_color is None:
            left["no winner recorded"] += 1
        else:
            out.append(
                Decision(
                    variant=str(record.rules),
                    cell=record.moves[0].strip().lower(),
                    decider=record.seat2 if record.opening <= 1 else None,
                    swapped=record.moves[1].strip().lower() == "swap",
                    owner_won=record.winner_color is StoneColor.BLACK,
                )
            )
    return Reading(out, dict(left))


def decisions_seen(groups: Iterable[tuple[str, list[object], int, int]]) -> Reading:
    """The decisions of a store's groups of games alike (`Store.seen_pies`: seat 2, then
    the board, first stone, second move as "swap" or "other", opening and winner's
    colour), one `Decision` a group, as `decisions` reads their records one by one."""
    out: list[Decision] = []
    left: dict[str, int] = defaultdict(int)
    for seat2, facts, _, games in groups:
        variant, first, second, opening, color = (list(facts) + [None] * 5)[:5]
        opening = opening or 0
        if not isinstance(variant, dict) or not variant.get("pie"):
            left["played without the pie rule"] += games
        elif second is None or not isinstance(first, str):
            left["ended before move 2"] += games
        elif isinstance(opening, int) and opening > 2:
            left["opening went past move 2"] += games
        elif color not in ("black", "white"):
            left["no winner recorded"] += games
        else:
            rules = Variant(variant["islands"], variant["size"], variant["pie"])
            out.append(
                Decision(
                    variant=str(rules),
                    cell=first.strip().lower(),
                    decider=seat2 if isinstance(opening, int) and opening <= 1 else None,
                    swapped=second == "swap",
                    owner_won=color == "black",
                    games=games,
                )
            )
    return Reading(out, dict(left))


def read_sources(
    paths: Sequence[str],
    *,
    labels: Sequence[str],
    strict: bool,
    warn: Callable[[str], None],
) -> Reading:
    """The decisions of stores and records files combined, each play of a game once (as
    `ratings` counts them): a damaged store row or a bad records line is skipped with a
    line to `warn`, or refused with `strict`. ConfigError when nothing counts."""
    from arbiter.results.gathered import DUPLICATES, skip_or_refuse, watch_damage
    from arbiter.results.standings import play_key, source_kind
    from arbiter.results.store import Store

    seen: set[int] = set()
    duplicates = 0

    def fresh(records: Iterable[GameRecord]) -> Iterator[GameRecord]:
        nonlocal duplicates
        for record in records:
            key = play_key(record.game_id, record.started)
            if not record.void and key in seen:
                duplicates += 1
                continue
            seen.add(key)
            yield record

    found = Reading([], {})
    for path in paths:
        if source_kind(path) == "store":
            with Store.open_read(path) as store:
                watch_damage(store, strict, warn)
                groups = store.seen_pies()
                if groups is not None and not seen:  # each play once: the first source
                    if len(paths) > 1:  # what the next sources are told apart from
                        seen.update(play_key(i, s) for i, s in store.game_keys())
                    _add(found, decisions_seen(groups))
                    continue
                stored = (GameRecord.from_json(data) for data, void in store.records() if not void)
                _add(found, decisions(fresh(stored)))
            continue
        bad: list[BadLine] = []
        _add(found, decisions(fresh(read_records(path, bad))))
        for line in bad:
            skip_or_refuse(line, strict, warn)
    if duplicates:
        warn(DUPLICATES.format(duplicates))
    if not found.decisions:
        left = ", ".join(f"{n} {why}" for why, n in sorted(found.left_out.items()))
        raise ConfigError(
            "no game under the pie rule with a decision at move 2 in "
            + ", ".join(labels)
            + (f" ({left})" if left else ""),
            hint="give stores, records files or tournament files of games played with pie = true",
        )
    return found


def _add(into: Reading, more: Reading) -> None:
    into.decisions += more.decisions
    for why, n in more.left_out.items():
        into.left_out[why] = into.left_out.get(why, 0) + n


def wilson(wins: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion: unlike the normal one it stays
    inside [0, 1] and keeps near its coverage at a few games or a lopsided score."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def turned(geom: Geometry, coord: Coord) -> Coord:
    """A cell or island stone turned 180 degrees about the board's centre (the centre of
    the drawing, in which the turn is a point reflection)."""
    return _turns(geom)[coord]


@cache
def _turns(geom: Geometry) -> dict[Coord, Coord]:
    coords = list(geom.cells) + [s for isl in geom.islands for s in isl.stones]
    shown = {geom.display_pos(c): c for c in coords}
    rows = [p[0] for p in shown]
    cols = [p[1] for p in shown]
    sum_row, sum_col = min(rows) + max(rows), min(cols) + max(cols)
    return {c: shown[sum_row - p[0], sum_col - p[1]] for p, c in shown.items()}


def orbit(geom: Geometry, name: str) -> tuple[str, ...]:
    """The cells a first stone on `name` is pooled with, itself first: the cell and its
    180-degree turn (the centre cell is its own)."""
    coord = geom.cells[geom.name_index[name]]
    other = geom.name_of(turned(geom, coord))
    assert other is not None
    return (name,) if other == name else (name, other)


@cache
def canonical(geom: Geometry, name: str) -> str:
    """The cell that stands for `name`'s orbit: the one first in the board's order."""
    return min(orbit(geom, name), key=lambda n: geom.name_index[n])


@dataclass(frozen=True)
class Cell:
    """One entry of the map: an orbit of first-stone cells and its owner's score."""

    cells: tuple[str, ...]
    games: int
    owner_wins: int
    low: float
    high: float

    @property
    def score(self) -> float:
        return self.owner_wins / self.games if self.games else math.nan

    @property
    def mark(self) -> Mark:
        if self.low > 0.5:
            return Mark.SWAP
        if self.high < 0.5:
            return Mark.KEEP
        return Mark.EVEN


@dataclass(frozen=True)
class SwapMap:
    """The map of one variant: its cells by canonical name, in the board's order."""

    variant: str
    cells: dict[str, Cell]

    @property
    def games(self) -> int:
        return sum(c.games for c in self.cells.values())

    def of(self, name: str) -> Cell | None:
        """The entry of a first stone on `name` (pooled with its turn), if any game had one."""
        return self.cells.get(canonical(geometry_of(self.variant), name))


@cache
def geometry_of(variant: str) -> Geometry:
    """The board of a variant as `Variant` prints it ("hex/11", "atoll-8/11")."""
    kind, size = variant.split()[0].split("/")
    return Variant(4 if kind == "hex" else 8, int(size)).geometry


def swap_maps(found: Iterable[Decision]) -> dict[str, SwapMap]:
    """The map of each variant met, by its name."""
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for d in found:
        geom = geometry_of(d.variant)
        tally = counts[d.variant][canonical(geom, d.cell)]
        tally[0] += d.games
        tally[1] += d.owner_won * d.games
    maps = {}
    for variant, cells in sorted(counts.items()):
        geom = geometry_of(variant)
        entries = {}
        for name in sorted(cells, key=lambda n: geom.name_index[n]):
            games, wins = cells[name]
            low, high = wilson(wins, games)
            entries[name] = Cell(orbit(geom, name), games, wins, low, high)
        maps[variant] = SwapMap(variant, entries)
    return maps


@dataclass(frozen=True)
class Regret:
    """An engine's swap regret: per decision it took at move 2, the score the map says it
    gave up against the better choice (|2p - 1| for the wrong side of a cell scoring p
    for its owner, 0 for the right one), averaged, with a 95% interval of the mean."""

    engine: str
    decisions: int
    wrong: int  # decisions on the side the map says is worse
    regret: float
    low: float
    high: float


def regrets(found: Iterable[Decision], maps: dict[str, SwapMap], draws: int = 200) -> list[Regret]:
    """Each deciding engine's regret under `maps`, lowest first (then by name).

    The 95% interval adds two spreads: that of the engine's decisions (the normal one of
    their mean, never below that of a few wrong decisions, so that an engine never wrong
    in a few decisions is not shown as certainly perfect), and that of the map itself:
    the regret recomputed under `draws` maps drawn from each cell's Beta posterior (a
    uniform prior and its games), with a fixed seed so that a command prints the same
    interval each time."""
    losses: dict[str, dict[float, int]] = defaultdict(dict)  # each regret: its decisions
    stakes: dict[str, float] = defaultdict(float)
    # per engine, per (board, cell of the map): decisions that swapped, and that kept
    choices: dict[str, dict[tuple[str, str], list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0])
    )
    for d in found:
        if d.decider is None:
            continue
        cell = maps[d.variant].of(d.cell)
        assert cell is not None  # every decision is in the map made from it
        took = cell.score if d.swapped else 1 - cell.score
        lost = losses[d.decider]
        value = max(cell.score, 1 - cell.score) - took
        lost[value] = lost.get(value, 0) + d.games
        stakes[d.decider] += abs(2 * cell.score - 1) * d.games
        choices[d.decider][d.variant, cell.cells[0]][0 if d.swapped else 1] += d.games
    from arbiter._numpy import np

    keys = [(variant, c.cells[0]) for variant, m in maps.items() for c in m.cells.values()]
    wins = np.array([c.owner_wins for m in maps.values() for c in m.cells.values()], float)
    games = np.array([c.games for m in maps.values() for c in m.cells.values()], float)
    p = np.random.default_rng(41).beta(wins + 1, games - wins + 1, size=(draws, len(keys)))
    best = np.maximum(p, 1 - p)
    cost_swap, cost_keep = best - p, best - (1 - p)  # per draw and cell
    out = []
    for engine, values in losses.items():
        n = sum(values.values())
        mean = sum(v * k for v, k in values.items()) / n
        wrong = sum(k for v, k in values.items() if v > 0)
        var = sum(k * (v - mean) ** 2 for v, k in values.items()) / (n - 1) if n > 1 else 0.0
        stake = stakes[engine] / n
        shrunk = (wrong + 2) / (n + 4)  # Agresti-Coull: two pseudo-wrong, two pseudo-right
        var = max(var, stake * stake * shrunk * (1 - shrunk)) / n
        swaps = np.array([choices[engine][k][0] if k in choices[engine] else 0 for k in keys])
        keeps = np.array([choices[engine][k][1] if k in choices[engine] else 0 for k in keys])
        again = (cost_swap @ swaps + cost_keep @ keeps) / n  # the regret under each draw
        var += float(np.var(again, ddof=1)) if draws > 1 else 0.0
        half = Z95 * math.sqrt(var)
        out.append(Regret(engine, n, wrong, mean, max(0.0, mean - half), mean + half))
    return sorted(out, key=lambda r: (r.regret, r.engine))


def parse_band(text: str) -> tuple[float, float]:
    """A band of scores written LOW..HIGH (`0.45..0.55`); ValueError says what is wrong."""
    low_text, dots, high_text = text.partition("..")
    try:
        if not dots:
            raise ValueError
        low, high = float(low_text), float(high_text)
    except ValueError:
        raise ValueError(f"{text!r} is not a band LOW..HIGH") from None
    if not 0 <= low < high <= 1:
        raise ValueError(f"{text!r}: the band must have 0 <= LOW < HIGH <= 1")
    return low, high


def games_for(width: float, z: float = Z95) -> int:
    """About how many games of a cell scoring 50% it takes for its interval to be `width`
    wide (the Wilson interval is then close to the normal one, 2z·0.5/√n)."""
    return math.ceil((z / width) ** 2)


def balanced(m: SwapMap, low: float, high: float) -> list[Cell]:
    """The map's cells whose whole interval lies in the band, in the board's order; a
    ValueError saying why the data cannot support the band when none does."""
    chosen = [c for c in m.cells.values() if low <= c.low and c.high <= high]
    if chosen:
        return chosen
    band = f"{100 * low:g}% to {100 * high:g}%"
    if not low < 0.5 < high:
        inside = [c for c in m.cells.values() if low <= c.score <= high]
        if not inside:
            raise ValueError(f"no first stone on {m.variant} scores within {band}")
    most = max(m.cells.values(), key=lambda c: c.games)
    narrowest = min(m.cells.values(), key=lambda c: c.high - c.low)
    raise ValueError(
        f"no first stone's 95% interval on {m.variant} lies within {band}: the narrowest"
        f" is {100 * (narrowest.high - narrowest.low):.0f} points wide"
        f" ({' '.join(narrowest.cells)}, {narrowest.games} games; the most a cell has is"
        f" {most.games}), and an interval fits in a band {100 * (high - low):g} points wide"
        f" only from about {games_for(high - low)} games of a cell near 50%"
    )
