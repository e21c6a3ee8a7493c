"""The rules core against the board reference's vectors, and its invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import ROOT

from arbiter.rules import (
    SWAP,
    Color,
    Game,
    IllegalMove,
    IllegalReason,
    Variant,
    atoll,
    hex_board,
    replay_winner,
)
from arbiter.rules.playout import PlayoutEngine

# Section 6.1 of the board reference: neighbours, island contacts in brackets.
NEIGHBOUR_VECTORS = {
    "a1": "a2 b1 b2 [S] [w]",
    "a5": "a4 a6 b5 b6 [W] [w]",
    "a9": "a8 b9 b10 [W] [n]",
    "b1": "a1 b2 c1 [S]",
    "f10": "e9 f9 g9 [n] [N]",
    "f1": "e1 f2 g1 [S] [s]",
    "f5": "e4 e5 f4 f6 g4 g5",
    "k1": "j1 j2 k2 [E] [s]",
    "k5": "j5 j6 k4 k6 [E] [e]",
    "k9": "j9 j10 k8 [N] [e]",
}

SHORES = {
    "N": "f10 g9 h10 i9 j10 k9",
    "E": "k1 k2 k3 k4 k5",
    "S": "a1 b1 c1 d1 e1 f1",
    "W": "a5 a6 a7 a8 a9",
    "n": "a9 b10 c9 d10 e9 f10",
    "e": "k5 k6 k7 k8 k9",
    "s": "f1 g1 h1 i1 j1 k1",
    "w": "a1 a2 a3 a4 a5",
}

STONES = {
    "N": [(6, 13), (7, 14), (8, 14), (9, 15), (10, 15)],
    "E": [(11, 7), (11, 8), (11, 9), (11, 10)],
    "S": [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)],
    "W": [(-1, 5), (-1, 6), (-1, 7), (-1, 8)],
    "n": [(0, 10), (1, 11), (2, 11), (3, 12), (4, 12)],
    "e": [(11, 11), (11, 12), (11, 13), (11, 14)],
    "s": [(6, 3), (7, 3), (8, 4), (9, 4), (10, 5)],
    "w": [(-1, 1), (-1, 2), (-1, 3), (-1, 4)],
}

SEAMS = {
    11: "a1 a5 a9 f1 f10 k1 k5 k9",
    15: "a1 a7 a13 h1 h14 o1 o7 o13",
    19: "a1 a9 a17 j1 j18 s1 s9 s17",
}


def test_standard_board_counts() -> None:
    g = atoll(11)
    assert g.n_cells == 104
    assert sum(len(i.stones) for i in g.islands) == 36
    per_file = {}
    for name in g.names:
        per_file[name[0]] = per_file.get(name[0], 0) + 1
    assert per_file == {f: (9 if i % 2 == 0 else 10) for i, f in enumerate("abcdefghijk")}
    assert [i.name for i in g.islands] == ["n", "N", "e", "E", "s", "S", "w", "W"]
    assert [len(i.stones) for i in g.islands] == [5, 5, 4, 4, 5, 5, 4, 4]


@pytest.mark.parametrize("cell", sorted(NEIGHBOUR_VECTORS))
def test_neighbour_vectors(cell: str) -> None:
    g = atoll(11)
    i = g.name_index[cell]
    got = sorted(g.names[n] for n in g.neighbours[i])
    got += sorted(f"[{g.islands[k].name}]" for k in g.shores[i])
    want = NEIGHBOUR_VECTORS[cell].split()
    assert sorted(got) == sorted(want)


def test_island_stones_and_shores() -> None:
    g = atoll(11)
    for k, isl in enumerate(g.islands):
        assert sorted(isl.stones) == sorted(STONES[isl.name])
        shore = sorted(g.names[i] for i in range(g.n_cells) if k in g.shores[i])
        assert shore == sorted(SHORES[isl.name].split())


def test_only_notched_seams_have_five_neighbours() -> None:
    g = atoll(11)
    occupied = set(g.cells) | set(g.stone_island)

    def degree(coord: tuple[int, int]) -> int:
        return sum((coord[0] + dq, coord[1] + dr) in occupied for dq, dr in g.directions)

    five = {g.names[i] for i, c in enumerate(g.cells) if degree(c) == 5}
    assert five == {"a1", "a9", "f1", "f10", "k1", "k9"}
    assert all(degree(c) in (5, 6) for c in g.cells)


@pytest.mark.parametrize("size", [11, 15, 19])
def test_size_family(size: int) -> None:
    g = atoll(size)
    assert g.n_cells == size * (size - 1) - (size + 1) // 2
    assert sum(len(i.stones) for i in g.islands) == 4 * size - 8
    seams = sorted(g.names[i] for i in range(g.n_cells) if len(g.shores[i]) == 2)
    assert seams == sorted(SEAMS[size].split())


@pytest.mark.parametrize("size", [7, 11, 15, 19, 23])
def test_same_coloured_islands_never_touch(size: int) -> None:
    g = atoll(size)
    si = g.stone_island
    for k, isl in enumerate(g.islands):
        for q, r in isl.stones:
            for dq, dr in g.directions:
                other = si.get((q + dq, r + dr))
                if other is not None and other != k:
                    assert g.islands[other].owner is not isl.owner


def test_bad_sizes_are_rejected_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="7, 11, 15, 19, 23"):
        atoll(13)
    with pytest.raises(ValueError, match="2 to 26"):
        hex_board(27)
    with pytest.raises(ValueError, match="use 8"):
        Variant(islands=6)


def test_winning_sets_are_opposite_pairs_on_atoll() -> None:
    g = atoll(11)
    names = [i.name for i in g.islands]

    def mask(*isl: str) -> int:
        return sum(1 << names.index(x) for x in isl)

    assert mask("N", "S") in g.winning_masks
    assert mask("W", "E") in g.winning_masks
    assert mask("n", "s") in g.winning_masks
    assert mask("N", "E") not in g.winning_masks
    assert mask("N", "E", "S") in g.winning_masks
    assert mask("W", "N") not in g.winning_masks


def play_all(game: Game, moves: str) -> Color | None:
    winner = None
    for m in moves.split():
        winner = game.play(m)
    return winner


def test_black_wins_by_connecting_west_to_east() -> None:
    g = Game()
    # Black fills rank 6-ish straight across from W (a5..a9 shore) to E (k1..k5 shore),
    # White answers far away on the top rows.
    black = ["a6", "b6", "c5", "d5", "e4", "f4", "g3", "h3", "i2", "j2", "k2"]
    white = ["b10", "d10", "h10", "j10", "c9", "e9", "g9", "i9", "k9", "a9"]
    for i, cell in enumerate(black):
        assert g.winner is None
        g.play(cell, Color.BLACK)
        if g.winner:
            break
        g.play(white[i], Color.WHITE)
    assert g.winner is Color.BLACK
    assert g.moves[-1] == g.geometry.name_index["k2"]
    with pytest.raises(IllegalMove) as err:
        g.play("f5")
    assert err.value.reason is IllegalReason.GAME_OVER


def test_win_needs_an_opposite_pair_not_adjacent_islands() -> None:
    g = Game(Variant(pie=False))
    # Black joins N and E through k9 (a seam touching both): not a win.
    g.play("k9")
    assert g.winner is None
    g.play("a1")
    g.play("k8")
    assert g.winner is None


def test_illegal_moves_name_the_rule() -> None:
    g = Game()
    cases = {
        "zz": IllegalReason.UNPARSEABLE,
        "@@": IllegalReason.UNPARSEABLE,
        "z99": IllegalReason.OFF_BOARD,
        "a11": IllegalReason.OFF_BOARD,  # short files stop at rank 9
        "a10": IllegalReason.ISLAND,  # White North's stone at (0, 10)
        "b11": IllegalReason.ISLAND,  # White North's stone at (1, 11)
        "a0": IllegalReason.ISLAND,  # Black South's stone at (0, 0)
        "swap": IllegalReason.SWAP_NOT_ALLOWED,
    }
    for move, reason in cases.items():
        with pytest.raises(IllegalMove) as err:
            g.play(move)
        assert err.value.reason is reason, move
    g.play("F5")  # case-insensitive
    assert g.move_name(g.moves[0]) == "f5"
    with pytest.raises(IllegalMove) as err:
        g.play("f5")
    assert err.value.reason is IllegalReason.OCCUPIED
    with pytest.raises(IllegalMove) as err:
        g.play("e5", Color.BLACK)
    assert err.value.reason is IllegalReason.WRONG_TURN
    assert "occupied" in str(IllegalMove(IllegalReason.OCCUPIED, "f5"))


def test_pie_rule() -> None:
    g = Game()
    g.play("f5")
    assert g.swap_allowed
    g.play("swap-pieces")
    assert g.swapped and g.moves == [g.geometry.name_index["f5"], SWAP]
    # The first stone stays black; White moves again (the original first player).
    assert g.colors[g.geometry.name_index["f5"]] == Color.BLACK
    assert g.to_move is Color.WHITE
    g.play("e5", Color.WHITE)
    assert g.colors[g.geometry.name_index["e5"]] == Color.WHITE
    assert g.to_move is Color.BLACK
    with pytest.raises(IllegalMove) as err:
        g.play("swap")
    assert err.value.reason is IllegalReason.SWAP_NOT_ALLOWED


def test_pie_off_and_swap_as_third_move() -> None:
    g = Game(Variant(pie=False))
    g.play("f5")
    with pytest.raises(IllegalMove, match="pie rule is off"):
        g.play("swap")
    g = Game()
    g.play("f5")
    g.play("e5")
    with pytest.raises(IllegalMove, match="only as move 2"):
        g.play("swap")


def test_hex_is_atoll_four() -> None:
    g = Game(Variant(islands=4, size=3, pie=False))
    assert g.geometry.names[:3] == ("a1", "a2", "a3")
    a1 = g.geometry.name_index["a1"]
    assert sorted(g.geometry.names[n] for n in g.geometry.neighbours[a1]) == ["a2", "b1"]
    # Black (first player) connects top (row 1) and bottom (row 3) down column b.
    for b, w in zip(["b1", "b2"], ["a1", "a2"], strict=True):
        g.play(b)
        g.play(w)
    assert g.winner is None
    assert g.play("b3") is Color.BLACK


def full_board_winners(game: Game, order: list[int]) -> tuple[bool, bool]:
    """Fill every cell in `order` alternately; report whether each colour has a winning group."""
    for cell in order:
        game.winner = None  # keep placing past the first win to fill the board
        game._place(cell)
    geom = game.geometry
    wins = {Color.BLACK: False, Color.WHITE: False}
    for i, c in enumerate(game.colors):
        if game._mask[game._find(i)] in geom.winning_masks:
            wins[Color(c)] = True
    return wins[Color.BLACK], wins[Color.WHITE]


@pytest.mark.parametrize("variant", [Variant(8, 11), Variant(8, 15), Variant(4, 11), Variant(4, 5)])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_full_board_has_exactly_one_winner(variant: Variant, data: st.DataObject) -> None:
    game = Game(variant)
    order = data.draw(st.permutations(range(game.geometry.n_cells)))
    black, white = full_board_winners(game, order)
    assert black != white


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_first_win_is_final_and_reported_once(data: st.DataObject) -> None:
    game = Game(Variant(pie=False))
    order = data.draw(st.permutations(range(game.geometry.n_cells)))
    winner = None
    for cell in order:
        winner = game.play(cell)
        if winner:
            break
    assert winner is not None and game.winner is winner
    # The mover is the winner, and the game refuses further moves.
    assert game.moves and game.colors[int(game.moves[-1])] == winner
    with pytest.raises(IllegalMove) as err:
        game.check(0)
    assert err.value.reason is IllegalReason.GAME_OVER


@pytest.mark.parametrize("variant", [Variant(8, 11), Variant(8, 7), Variant(4, 5)])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_winning_cells_are_the_moves_that_win_at_once(
    variant: Variant, data: st.DataObject
) -> None:
    game = Game(Variant(variant.islands, variant.size, pie=False))
    order = data.draw(st.permutations(range(game.geometry.n_cells)))
    for cell in order:
        for color in Color:
            expected = []
            for empty in game.legal_cells():
                trial = game.copy()
                trial.to_move = color
                if trial.play(empty) is color:
                    expected.append(empty)
            assert game.winning_cells(color) == expected
        if game.play(cell) is not None:
            assert game.winning_cells(Color.BLACK) == game.winning_cells(Color.WHITE) == []
            break


def test_copy_is_independent() -> None:
    g = Game()
    g.play("f5")
    h = g.copy()
    h.play("swap")
    h.play("e5")
    assert g.moves == [g.geometry.name_index["f5"]] and not g.swapped
    assert g.colors.count(0) == 103 and h.colors.count(0) == 102


@pytest.mark.parametrize("variant", [Variant(8, 11), Variant(8, 15), Variant(4, 9)])
def test_batched_playouts_agree_with_union_find(variant: Variant) -> None:
    game = Game(variant)
    engine = PlayoutEngine(game.geometry)
    rng = np.random.default_rng(7)
    boards = engine.random_fills(game, 120, rng)
    assert (boards.sum(axis=1) == (game.geometry.n_cells + 1) // 2).all()
    wins = engine.black_wins(boards)
    for board, black_won in zip(boards, wins, strict=True):
        g = Game(Variant(variant.islands, variant.size, pie=False))
        order = [i for i in range(len(board)) if board[i]] + [
            i for i in range(len(board)) if not board[i]
        ]
        for i in order:
            g.to_move = Color.BLACK if board[i] else Color.WHITE
            g.winner = None
            g._place(i)
        black, white = full_board_winners(g, [])
        assert black == bool(black_won) and white != black


def test_playouts_from_a_position_respect_turn_and_stones() -> None:
    game = Game(Variant(pie=False))
    game.play("f5")
    engine = PlayoutEngine(game.geometry)
    boards = engine.random_fills(game, 50, np.random.default_rng(1))
    f5 = game.geometry.name_index["f5"]
    assert boards[:, f5].all()
    # White to move with 103 empty cells: White gets 52 of them, Black 51 more + f5.
    assert (boards.sum(axis=1) == 52).all()
    rate = engine.win_rate(game, 400, np.random.default_rng(2))
    # The same fills judged independently, stone by stone with the Game's union-find.
    black_wins = 0
    for board in engine.random_fills(game, 400, np.random.default_rng(2)):
        judge = Game(Variant(pie=False))
        black = [i for i in np.flatnonzero(board)]
        white = [i for i in range(judge.geometry.n_cells) if not board[i]]
        order = [c for pair in zip(black, white, strict=False) for c in pair]
        order += black[len(white) :] + white[len(black) :]
        black_won, white_won = full_board_winners(judge, order)
        assert black_won != white_won
        black_wins += black_won
    assert rate == 1.0 - black_wins / 400  # White is to move: its share of the fills


def test_render_looks_like_the_board() -> None:
    g = Game()
    g.play("f5")
    text = g.render()
    lines = text.splitlines()
    assert lines[0].split() == list("abcdefghijk")
    assert lines[1].split() == ["n", "n", "N", "N"]
    assert "X" in text and text.count(".") == 103
    assert lines[-1] == "last move: f5"
    hexg = Game(Variant(4, 4))
    hexg.play("b2")
    assert " 2  W . X . . W" in hexg.render()


@pytest.mark.parametrize(
    "variant", [Variant(8, 11), Variant(8, 7), Variant(4, 5), Variant(4, 7, pie=False)]
)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_replay_winner_agrees_with_playing_move_by_move(
    variant: Variant, data: st.DataObject
) -> None:
    """The readers' one-loop replay finds the winner `Game.play` finds, and refuses what
    it refuses: moves past the win, a stone on a stone, a swap out of place, odd names."""
    names = Game(variant).geometry.names
    order = data.draw(st.permutations(range(len(names))))
    cut = data.draw(st.integers(0, len(names)))
    moves = [names[c] for c in order[:cut]]
    if len(moves) > 1 and data.draw(st.booleans()):
        moves[1] = SWAP  # legal only under the pie rule
    if moves and data.draw(st.integers(0, 4)) == 0:
        i = data.draw(st.integers(0, len(moves) - 1))
        moves[i] = data.draw(st.sampled_from([moves[0], moves[i].upper(), "zz99", SWAP]))
    game = Game(variant)
    try:
        for move in moves:
            game.play(move)
    except IllegalMove as exc:
        with pytest.raises(IllegalMove) as err:
            replay_winner(variant, moves)
        assert err.value.reason is exc.reason
        return
    assert replay_winner(variant, moves) is game.winner


def test_protocol_win_through_a_third_island() -> None:
    """PROTOCOL.md 4.1's example: neighbouring islands joined do not win; a chain that
    runs through a third island of its colour does."""
    page = (ROOT / "protocol" / "PROTOCOL.md").read_text()
    example = page[page.index("Example (N = 7, pie rule off") :]
    plies = example[example.index("`b ") + 1 : example.index("`:")].split(", ")
    game = Game(Variant(8, 7, False))
    for ply in plies:
        color, move = ply.split()
        assert game.to_move.letter == color
        assert game.play(move) is None, move
    assert len(plies) == 12
    # After b g3 the chain g5-g4-g3 touches North-right and East-lower: no win.
    north_right, east_lower = 1, 3
    geom = game.geometry
    assert {geom.islands[k].name for k in (north_right, east_lower)} == {"N", "E"}
    assert north_right in geom.shores[geom.name_index["g5"]]
    assert east_lower in geom.shores[geom.name_index["g3"]]
    assert sorted(game.move_name(c) for c in game.winning_cells(Color.BLACK)) == ["f3", "g1", "g2"]
    for cell in ("g1", "g2", "f3"):
        trial = game.copy()
        assert trial.play(cell) is Color.BLACK, cell
