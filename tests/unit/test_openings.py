"""The pie rule measured: swap maps and swap regret, on records and on simulated pools
with known per-cell scores."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from arbiter._numpy import np
from arbiter.results.openings import (
    Decision,
    Mark,
    canonical,
    decisions,
    orbit,
    regrets,
    swap_maps,
    turned,
    wilson,
)
from arbiter.results.records import GameRecord, StoneColor, Termination
from arbiter.rules import Variant
from arbiter.rules.geometry import Geometry


def record(**changes: object) -> GameRecord:
    base = GameRecord(
        game_id="t-1",
        variant={"size": 11, "islands": 8, "pie": True},
        seat1="first",
        seat2="second",
        tc={"seat1": "10", "seat2": "10"},
        started="2026-01-01T00:00:00.000Z",
        termination=Termination.CONNECTION,
        swapped=True,
        black="second",
        white="first",
        moves=["f6", "swap", "e5"],
        winner="second",
        winner_color=StoneColor.BLACK,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_which_games_count_and_who_decided() -> None:
    swapped = record()
    kept = record(
        game_id="t-2",
        swapped=False,
        black="first",
        white="second",
        moves=["b3", "c4", "d4"],
        winner_color=StoneColor.WHITE,
    )
    random_stone = record(game_id="t-3", opening=1)
    line_with_swap = record(game_id="t-4", opening=2)
    past_move_2 = record(game_id="t-5", opening=3)
    no_pie = record(game_id="t-6", variant={"size": 11, "islands": 8, "pie": False})
    short = record(game_id="t-7", moves=["f6"], winner="first", winner_color=StoneColor.WHITE)
    void = record(game_id="t-8", void=True, termination=Termination.SETUP)
    read = decisions(
        [swapped, kept, random_stone, line_with_swap, past_move_2, no_pie, short, void]
    )
    assert read.decisions == [
        Decision("atoll-8/11", "f6", "second", True, True),
        Decision("atoll-8/11", "b3", "second", False, False),
        Decision("atoll-8/11", "f6", "second", True, True),  # the stone was the referee's
        Decision("atoll-8/11", "f6", None, True, True),  # the opening took the decision
    ]
    assert read.left_out == {
        "opening went past move 2": 1,
        "played without the pie rule": 1,
        "ended before move 2": 1,
    }


@pytest.mark.parametrize("board", [Variant(8, 11), Variant(8, 7), Variant(4, 11), Variant(4, 6)])
def test_the_turn_is_a_colour_keeping_symmetry_cell_by_cell(board: Variant) -> None:
    geom = board.geometry
    owner = {s: isl.owner for isl in geom.islands for s in isl.stones}
    for index, cell in enumerate(geom.cells):
        image = turned(geom, cell)
        assert turned(geom, image) == cell
        assert image in geom.index, f"{geom.names[index]} turns off the board"
        # adjacency is kept: neighbours turn into the neighbours of the image
        near = {geom.cells[n] for n in geom.neighbours[index]}
        assert {turned(geom, c) for c in near} == {
            geom.cells[n] for n in geom.neighbours[geom.index[image]]
        }
        # shores are kept, island by island, with their colours
        for dq, dr in geom.directions:
            stone = (cell[0] + dq, cell[1] + dr)
            if stone in owner:
                assert owner[turned(geom, stone)] is owner[stone]


def test_named_turns() -> None:
    atoll = Variant(8, 11).geometry
    hexb = Variant(4, 11).geometry
    assert orbit(atoll, "a1") == ("a1", "k9")  # two notched seams
    assert orbit(atoll, "a5") == ("a5", "k5")  # the two seams that are not notched
    assert orbit(atoll, "f5") == ("f5", "f6")  # the centre lies between them
    assert orbit(hexb, "a1") == ("a1", "k11")
    assert orbit(hexb, "c2") == ("c2", "i10")
    assert orbit(hexb, "f6") == ("f6",)


@pytest.mark.parametrize("board", [Variant(8, 11), Variant(4, 7), Variant(4, 6)])
def test_pooling_cell_by_cell(board: Variant) -> None:
    """One game on every cell, the owner winning on cells of even index: each entry holds
    exactly its orbit's games, and a cell and its turn read the same entry."""
    geom = board.geometry
    games = [
        Decision(str(board), name, "e", False, index % 2 == 0)
        for index, name in enumerate(geom.names)
    ]
    (only,) = swap_maps(games).values()
    assert sum(c.games for c in only.cells.values()) == geom.n_cells
    for index, name in enumerate(geom.names):
        entry = only.of(name)
        assert entry is not None
        other = geom.name_of(turned(geom, geom.cells[index]))
        assert other is not None
        assert only.of(other) is entry
        assert set(entry.cells) == {name, other}
        assert entry.games == len(entry.cells)
        assert entry.owner_wins == sum(geom.name_index[c] % 2 == 0 for c in entry.cells)
    fixed = sum(len(orbit(geom, n)) == 1 for n in geom.names)
    assert len(only.cells) == (geom.n_cells + fixed) // 2


def test_wilson_interval() -> None:
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0


# Simulated pools on Hex 7: first stones uniform over the board (as random openings draw
# them), a known owner's score per cell, engines that decide by planted rules.

BOARD = Variant(4, 7)
GEOM = BOARD.geometry


def _truth(geom: Geometry) -> dict[str, float]:
    """Edge stones lose for their owner, the middle wins, the centre most: the same on a
    cell and its turn (distance from the centre is kept by the turn)."""
    centre = geom.cells[geom.name_index[canonical(geom, "d4")]]
    out = {}
    for index, name in enumerate(geom.names):
        q, r = geom.cells[index]
        dq, dr = q - centre[0], r - centre[1]
        far = max(abs(dq), abs(dr), abs(dq + dr))
        out[name] = 0.25 if geom.shores[index] else 0.8 if far <= 1 else 0.6
    return out


TRUTH = _truth(GEOM)
EDGE = {name for index, name in enumerate(GEOM.names) if GEOM.shores[index]}

Rule = Callable[[str], bool]  # first-stone cell -> swaps?
RULES: dict[str, Rule] = {
    "follows the map": lambda cell: TRUTH[cell] > 0.5,
    "never swaps": lambda cell: False,
    "always swaps": lambda cell: True,
    "swaps edge stones only": lambda cell: cell in EDGE,
}


def _true_regret(rule: Rule) -> float:
    lost = [abs(2 * p - 1) if rule(c) != (p > 0.5) else 0.0 for c, p in TRUTH.items()]
    return sum(lost) / len(lost)


def _pool(rng: np.random.Generator, games: int) -> list[Decision]:
    names = list(GEOM.names)
    cells = rng.integers(0, len(names), games)
    deciders = rng.integers(0, len(RULES), games)
    draws = rng.random(games)
    rules = list(RULES.items())
    out = []
    for cell, who, u in zip(cells.tolist(), deciders.tolist(), draws.tolist(), strict=True):
        name = names[cell]
        engine, rule = rules[who]
        out.append(Decision(str(BOARD), name, engine, rule(name), u < TRUTH[name]))
    return out


def test_simulated_pools_cover_the_truth_and_rank_the_mistakes() -> None:
    true_order = sorted(RULES, key=lambda e: _true_regret(RULES[e]))
    gaps = np.diff([_true_regret(RULES[e]) for e in true_order])
    assert true_order[0] == "follows the map" and min(gaps) > 0.03  # a plain order to find
    rng = np.random.default_rng(41)
    pools, inside, intervals, ranked, regret_inside = 100, 0, 0, 0, 0
    for _ in range(pools):
        found = _pool(rng, 1200)
        maps = swap_maps(found)
        for entry in maps[str(BOARD)].cells.values():
            truth = TRUTH[entry.cells[0]]
            inside += entry.low <= truth <= entry.high
            intervals += 1
        table = regrets(found, maps)
        ranked += [r.engine for r in table] == true_order
        regret_inside += sum(r.low <= _true_regret(RULES[r.engine]) <= r.high for r in table)
    assert inside / intervals >= 0.93, f"{inside}/{intervals} intervals hold the truth"
    assert ranked / pools >= 0.95, f"{ranked}/{pools} pools ranked the engines right"
    # The regret's intervals (the decisions' spread and the map's) hold the true regret
    # about as often as they say (95% of 400 here): at least 90% of them.
    assert regret_inside / (len(RULES) * pools) >= 0.90, f"{regret_inside} regret intervals"


def test_marks_and_regret_of_one_pool() -> None:
    found = _pool(np.random.default_rng(7), 4000)
    maps = swap_maps(found)
    table = {r.engine: r for r in regrets(found, maps)}
    centre = maps[str(BOARD)].of("d4")
    corner = maps[str(BOARD)].of("a1")
    assert centre is not None and centre.mark is Mark.SWAP
    assert corner is not None and corner.mark is Mark.KEEP
    best = table["follows the map"]
    assert best.wrong == 0 and best.regret == 0.0
    for engine, rule in RULES.items():
        row = table[engine]
        assert row.low <= row.regret <= row.high
        assert abs(row.regret - _true_regret(rule)) < 0.05
