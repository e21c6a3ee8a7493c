"""Proven connections: every proof `find_proof` claims is a real win, checked three ways.

Exhaustive minimax on tiny boards says the owner wins even with the opponent to move;
playing the proof's own strategy (`Proof.respond`) against opponents that Hypothesis
draws, intrusions into the carrier favoured, always ends in the owner's win; and the
structure of every proof is what its evidence claims (carriers empty and disjoint, the
end groups' islands winning). Hand-made positions pin each level to its link kind.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.rules import Color, Game, Variant
from arbiter.rules.geometry import Geometry
from arbiter.rules.proof import (
    Group,
    Level,
    LinkKind,
    Proof,
    find_proof,
    find_winning_move,
    has_won,
)

HEX = 4
ATOLL = 8


class _TooBig(Exception):
    """The minimax search passed its node cap; the position is skipped."""


def _won_by(geom: Geometry, colors: list[int], cell: int, me: Color) -> bool:
    """Whether the `me` stone on `cell` belongs to a group that wins (own islands join
    the stones on their shores into one group)."""
    seen = {cell}
    stack = [cell]
    mask = 0
    own = int(me)
    while stack:
        c = stack.pop()
        near = list(geom.neighbours[c])
        for i in geom.shores[c]:
            if geom.islands[i].owner is me and not mask >> i & 1:
                mask |= 1 << i
                near += _shore(geom, i)
        for nb in near:
            if colors[nb] == own and nb not in seen:
                seen.add(nb)
                stack.append(nb)
    return any(w & mask == w for w in geom.winning_masks)


_SHORES: dict[tuple[str, int], list[int]] = {}


def _shore(geom: Geometry, island: int) -> list[int]:
    key = (geom.key, island)
    if key not in _SHORES:
        _SHORES[key] = [c for c in range(geom.n_cells) if island in geom.shores[c]]
    return _SHORES[key]


def owner_wins(
    geom: Geometry,
    colors: list[int],
    to_move: Color,
    owner: Color,
    memo: dict[tuple[tuple[int, ...], Color], bool],
    nodes: list[int],
) -> bool:
    """Exhaustive minimax: does `owner` win from here with `to_move` to play?"""
    key = (tuple(colors), to_move)
    known = memo.get(key)
    if known is not None:
        return known
    nodes[0] -= 1
    if nodes[0] < 0:
        raise _TooBig
    empties = [c for c, v in enumerate(colors) if v == 0]
    assert empties, "a full board always has a winner"
    result = to_move is not owner
    for c in empties:
        colors[c] = int(to_move)
        if _won_by(geom, colors, c, to_move):
            wins = to_move is owner
        else:
            wins = owner_wins(geom, colors, to_move.other, owner, memo, nodes)
        colors[c] = 0
        if wins == (to_move is owner):
            result = wins
            break
    memo[key] = result
    return result


def random_position(variant: Variant, rng: random.Random, stones: int) -> Game | None:
    """`stones` random moves from the empty board, or None if someone won on the way."""
    game = Game(variant)
    cells = list(range(game.geometry.n_cells))
    rng.shuffle(cells)
    for cell in cells[:stones]:
        if game.play(cell) is not None:
            return None
    return game


def check_structure(geom: Geometry, colors: list[int], proof: Proof) -> None:
    """The evidence a proof carries is what it claims to be."""
    assert len(proof.chain) == len(proof.links) + 1
    empty = {c for c, v in enumerate(colors) if v == 0}
    seen: set[int] = set()
    for link in proof.links:
        assert link.carrier <= empty, "a carrier holds an occupied cell"
        assert not link.carrier & seen, "two links share a carrier cell"
        seen |= link.carrier
    for i, link in enumerate(proof.links):
        for group in proof.chain[i : i + 2]:
            assert link.carrier & _touching(geom, colors, group), "a link misses its group"
    own = int(proof.owner)
    for group in proof.chain:
        assert all(colors[s] == own for s in group.stones)
        assert all(geom.islands[i].owner is proof.owner for i in group.islands)
    ends = 0
    for i in proof.chain[0].islands | proof.chain[-1].islands:
        ends |= 1 << i
    assert any(w & ends == w for w in geom.winning_masks), "the chain's ends do not win"


def _touching(geom: Geometry, colors: list[int], group: Group) -> set[int]:
    """The empty cells next to a group's stones or on its islands' shores."""
    near = {nb for s in group.stones for nb in geom.neighbours[s]}
    near |= {c for i in group.islands for c in _shore(geom, i)}
    return {c for c in near if colors[c] == 0}


def proofs(geom: Geometry, colors: list[int], level: Level) -> dict[Color, Proof]:
    """Both sides' proofs; never both at once, each structurally sound."""
    found = {}
    for color in Color:
        proof = find_proof(geom, colors, color, level=level)
        if proof is not None:
            check_structure(geom, colors, proof)
            found[color] = proof
    assert len(found) < 2, "both sides hold a proof"
    return found


# (a) Minimax on tiny boards.

TINY = [(HEX, 2), (HEX, 3), (HEX, 4), (ATOLL, 7)]


def minimax_cases(count: int, seed: int) -> Iterator[tuple[Variant, list[int], Level]]:
    rng = random.Random(seed)
    for i in range(count):
        islands, size = TINY[i % len(TINY)]
        variant = Variant(islands, size, pie=False)
        n = variant.geometry.n_cells
        # Atoll 7 has 38 cells: only nearly full boards are small enough for minimax.
        low = max(0, n - 12) if islands == ATOLL else 0
        game = random_position(variant, rng, rng.randint(low, n - 1))
        if game is not None:
            yield variant, game.colors, Level(1 + i % 3)


def check_against_minimax(count: int, seed: int, cap: int) -> tuple[int, int]:
    """Every claimed proof agrees with minimax; returns (proofs checked, skipped)."""
    checked = skipped = 0
    for variant, colors, level in minimax_cases(count, seed):
        geom = variant.geometry
        for owner, proof in proofs(geom, colors, level).items():
            if not proof.links:
                assert has_won(geom, colors, owner)
                continue
            try:
                wins = owner_wins(geom, list(colors), owner.other, owner, {}, [cap])
            except _TooBig:
                if len(proof.carrier) <= 10:
                    verify(variant, colors, proof)  # the strategy, exhaustively, instead
                skipped += 1
                continue
            assert wins, f"{variant}: {owner} proof at {level.name} but minimax says lost"
            checked += 1
    return checked, skipped


def test_proofs_agree_with_minimax() -> None:
    checked, _ = check_against_minimax(300, seed=40, cap=20_000)
    assert checked >= 50  # the check is not vacuous


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_proofs_agree_with_minimax_many() -> None:
    checked, _ = check_against_minimax(800, seed=4040, cap=50_000)
    assert checked >= 130


# (b) The proof's own strategy against opponents Hypothesis draws.

SIZES = [(HEX, 2), (HEX, 3), (HEX, 5), (HEX, 7), (HEX, 9), (ATOLL, 7)]
LARGE = [(HEX, 11), (HEX, 13), (HEX, 19), (ATOLL, 11), (ATOLL, 15), (ATOLL, 19), (ATOLL, 23)]


def find_proven(
    variant: Variant, rng: random.Random, level: Level
) -> tuple[list[int], Proof] | None:
    """A random-play position where one side has a proof that is not yet a won game."""
    n = variant.geometry.n_cells
    for _ in range(30):
        game = random_position(variant, rng, rng.randint(n // 4, n - 1))
        if game is None:
            continue
        found = proofs(variant.geometry, game.colors, level)
        for proof in found.values():
            if proof.links:
                return game.colors, proof
    return None


def play_out(geom: Geometry, colors: list[int], proof: Proof, data: st.DataObject) -> None:
    """The opponent moves first, anywhere; the owner answers intrusions by `respond` and
    otherwise plays outside the carrier (or passes, which only makes the test harder).
    The board is filled to the end; the owner must hold a winning group."""
    colors = list(colors)
    owner = proof.owner
    opp = owner.other
    while True:
        empty = [c for c, v in enumerate(colors) if v == 0]
        if not empty:
            break
        inside = sorted(proof.carrier)
        if inside and data.draw(st.booleans(), label="intrude"):
            cell = data.draw(st.sampled_from(inside), label="intrusion")
        else:
            cell = data.draw(st.sampled_from(empty), label="opponent")
        colors[cell] = int(opp)
        assert not _won_by(geom, colors, cell, opp), "the opponent connected through a proof"
        reply, proof = proof.respond(cell)
        if reply is None:
            outside = [c for c, v in enumerate(colors) if v == 0 and c not in proof.carrier]
            if outside and data.draw(st.booleans(), label="owner plays"):
                reply = data.draw(st.sampled_from(outside), label="owner")
        if reply is not None:
            assert colors[reply] == 0, "the proof answered on an occupied cell"
            colors[reply] = int(owner)
        empties = {c for c, v in enumerate(colors) if v == 0}
        assert proof.carrier <= empties, "the kept proof's carrier is not empty"
    assert has_won(geom, colors, owner)
    assert not has_won(geom, colors, opp)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from(SIZES),
    level=st.sampled_from(list(Level)),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_respond_wins_against_any_reply(
    size: tuple[int, int], level: Level, seed: int, data: st.DataObject
) -> None:
    variant = Variant(*size, pie=False)
    found = find_proven(variant, random.Random(seed), level)
    if found is not None:
        play_out(variant.geometry, *found, data)


@pytest.mark.slow
@pytest.mark.timeout(400)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from(SIZES + LARGE),
    level=st.sampled_from(list(Level)),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_respond_wins_against_any_reply_many(
    size: tuple[int, int], level: Level, seed: int, data: st.DataObject
) -> None:
    variant = Variant(*size, pie=False)
    found = find_proven(variant, random.Random(seed), level)
    if found is not None:
        play_out(variant.geometry, *found, data)


def test_random_play_yields_proofs_on_both_variants() -> None:
    """The property above is not vacuous: random positions do carry proofs."""
    rng = random.Random(7)
    for size in [(HEX, 7), (ATOLL, 7)]:
        found = [find_proven(Variant(*size, pie=False), rng, Level.HSEARCH) for _ in range(5)]
        assert sum(f is not None for f in found) >= 3, size


# The side to move's key move (`find_winning_move`): the same two checks, from the
# position before the key, with the side to move to play.


def keyed_cases(count: int, seed: int) -> Iterator[tuple[Variant, list[int], Color, Level]]:
    """Tiny positions (as `minimax_cases`) with the side to move: Black when the stones
    are even, as random play from the empty board leaves them."""
    for variant, colors, level in minimax_cases(count, seed):
        black = sum(1 for v in colors if v == int(Color.BLACK))
        white = sum(1 for v in colors if v == int(Color.WHITE))
        yield variant, colors, Color.BLACK if black == white else Color.WHITE, level


def test_key_moves_agree_with_minimax() -> None:
    checked = 0
    for variant, colors, mover, level in keyed_cases(80, seed=41):
        geom = variant.geometry
        if has_won(geom, colors, mover.other):
            continue
        proof = find_winning_move(geom, colors, mover, level=level)
        if proof is None:
            continue
        assert proof.owner is mover and proof.key is not None and colors[proof.key] == 0
        try:
            wins = owner_wins(geom, list(colors), mover, mover, {}, [3_000])
        except _TooBig:
            continue
        assert wins, f"{variant}: {mover} key move at {level.name} but minimax says lost"
        checked += 1
    assert checked >= 25  # the check is not vacuous


def find_keyed(
    variant: Variant, rng: random.Random, level: Level
) -> tuple[list[int], Proof] | None:
    """A random-play position where the side to move has a key move and neither side a
    proof yet: the position after the key, and the proof that then holds."""
    n = variant.geometry.n_cells
    geom = variant.geometry
    for _ in range(30):
        game = random_position(variant, rng, rng.randint(n // 4, n - 1))
        if game is None or proofs(geom, game.colors, level):
            continue
        proof = find_winning_move(geom, game.colors, game.to_move, level=level)
        if proof is not None and proof.key is not None:
            colors = list(game.colors)
            colors[proof.key] = int(game.to_move)
            return colors, proof
    return None


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from(SIZES),
    level=st.sampled_from(list(Level)),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_a_key_move_then_respond_wins_against_any_reply(
    size: tuple[int, int], level: Level, seed: int, data: st.DataObject
) -> None:
    variant = Variant(*size, pie=False)
    found = find_keyed(variant, random.Random(seed), level)
    if found is not None:
        play_out(variant.geometry, *found, data)


@pytest.mark.slow
@pytest.mark.timeout(120)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from([*SIZES, (HEX, 11), (ATOLL, 11)]),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_a_key_move_then_respond_wins_against_any_reply_many(
    size: tuple[int, int], seed: int, data: st.DataObject
) -> None:
    """At the level the referee searches key moves with, on its usual boards too."""
    variant = Variant(*size, pie=False)
    found = find_keyed(variant, random.Random(seed), Level.BRIDGES)
    if found is not None:
        play_out(variant.geometry, *found, data)


def test_random_play_yields_key_moves() -> None:
    """The property above is not vacuous: positions without a proof have key moves."""
    rng = random.Random(8)
    for size in [(HEX, 7), (ATOLL, 7)]:
        found = [find_keyed(Variant(*size, pie=False), rng, Level.BRIDGES) for _ in range(5)]
        assert sum(f is not None for f in found) >= 3, size


# (c) and (d) over many positions, all levels.


def test_never_both_sides_and_carriers_disjoint() -> None:
    rng = random.Random(12)
    claimed = 0
    for i in range(30):
        islands, size = SIZES[i % len(SIZES)]
        variant = Variant(islands, size, pie=False)
        n = variant.geometry.n_cells
        game = random_position(variant, rng, rng.randint(0, n - 1))
        if game is None:
            continue
        for level in Level:
            claimed += len(proofs(variant.geometry, game.colors, level))
    assert claimed >= 10


# (e) Hand-made positions, one per level.


def board(variant: Variant, black: Sequence[str], white: Sequence[str] = ()) -> list[int]:
    geom = variant.geometry
    colors = [0] * geom.n_cells
    for names, color in ((black, Color.BLACK), (white, Color.WHITE)):
        for name in names:
            colors[geom.name_index[name]] = int(color)
    return colors


def kinds(proof: Proof | None) -> list[LinkKind]:
    assert proof is not None
    return [link.kind for link in proof.links]


def verify(variant: Variant, colors: list[int], proof: Proof) -> None:
    """Exhaustive check of the proof's strategy: the opponent owns every empty cell
    outside the carrier and tries every order of moves inside it; the owner answers
    each one with `respond` and must end up connected."""
    geom = variant.geometry
    owner = proof.owner
    outside = [c for c, v in enumerate(colors) if v == 0 and c not in proof.carrier]
    start = list(colors)
    for c in outside:
        start[c] = int(owner.other)

    def search(colors: list[int], proof: Proof) -> None:
        inside = [c for c in sorted(proof.carrier) if colors[c] == 0]
        if not inside:
            assert has_won(geom, colors, owner)
            return
        for cell in inside:
            after = list(colors)
            after[cell] = int(owner.other)
            reply, kept = proof.respond(cell)
            if reply is not None:
                assert after[reply] == 0
                after[reply] = int(owner)
            search(after, kept)

    search(start, proof)


def test_bridge_and_edge_templates_at_the_bridges_level() -> None:
    # Hex 5, Black b2 c3 d4: edge template II to the top, two bridges, template II to
    # the bottom. Columns are letters, rows numbers from the top (Black's edge).
    variant = Variant(HEX, 5, pie=False)
    colors = board(variant, ["b2", "c3", "d4"])
    geom = variant.geometry
    proof = find_proof(geom, colors, Color.BLACK, level=Level.BRIDGES)
    assert sorted(k.value for k in kinds(proof)) == sorted(
        k.value for k in [LinkKind.EDGE, LinkKind.BRIDGE, LinkKind.BRIDGE, LinkKind.EDGE]
    )
    assert proof is not None
    check_structure(geom, colors, proof)
    verify(variant, colors, proof)
    assert proof.carrier == {
        geom.name_index[c] for c in ["b1", "c1", "c2", "b3", "d3", "c4", "d5", "c5"]
    }
    assert find_proof(geom, colors, Color.WHITE) is None
    # Take one bridge cell away: no bridge-level proof is left.
    colors[geom.name_index["c2"]] = int(Color.WHITE)
    assert find_proof(geom, colors, Color.BLACK, level=Level.BRIDGES) is None


def test_ziggurat_needs_the_ziggurat_level() -> None:
    # Hex 5, Black c3 c4 c5 touch the bottom; c3 on the third row reaches the top only
    # through the ziggurat (a fourth cell on the first row, two on the second).
    variant = Variant(HEX, 5, pie=False)
    colors = board(variant, ["c3", "c4", "c5"])
    geom = variant.geometry
    assert find_proof(geom, colors, Color.BLACK, level=Level.BRIDGES) is None
    proof = find_proof(geom, colors, Color.BLACK, level=Level.ZIGGURAT)
    assert kinds(proof) == [LinkKind.ZIGGURAT]
    assert proof is not None
    check_structure(geom, colors, proof)
    assert len(proof.carrier) == 8
    verify(variant, colors, proof)


def test_hsearch_finds_what_templates_miss() -> None:
    # Hex 3, Black a2 alone: no bridge or template joins it to both edges, but the
    # AND/OR rules over the empty cells prove the connection whoever moves first.
    variant = Variant(HEX, 3, pie=False)
    colors = board(variant, ["a2"])
    geom = variant.geometry
    assert find_proof(geom, colors, Color.BLACK, level=Level.ZIGGURAT) is None
    proof = find_proof(geom, colors, Color.BLACK, level=Level.HSEARCH)
    assert kinds(proof) == [LinkKind.HSEARCH]
    assert proof is not None
    check_structure(geom, colors, proof)
    verify(variant, colors, proof)


def test_minimax_oracle_knows_the_first_player_wins() -> None:
    """The oracle itself: on an empty Hex board the side to move wins, the other loses."""
    for size in (2, 3):
        geom = Variant(HEX, size, pie=False).geometry
        empty = [0] * geom.n_cells
        assert owner_wins(geom, list(empty), Color.BLACK, Color.BLACK, {}, [10**6])
        assert not owner_wins(geom, list(empty), Color.WHITE, Color.BLACK, {}, [10**6])
