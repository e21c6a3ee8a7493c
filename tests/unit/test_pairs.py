"""The one counter of seat-swapped pairs: its rule (what makes a pair) and its order
(every count asked for from one engine's side, in the SPRT's order)."""

from __future__ import annotations

from arbiter.results.pairs import PairCounts, PairTally
from arbiter.results.score import MatchResult
from arbiter.results.sprt import judge, parse_test
from arbiter.results.standings import Tally


def _played(tally: PairTally, games: list[tuple[str, str, str]]) -> PairTally:
    for pair_key, winner, loser in games:
        tally.add(pair_key, winner, loser)
    return tally


GAMES = [
    ("p1", "b", "a"),
    ("p1", "b", "a"),  # b won twice
    ("p2", "a", "b"),
    ("p3", "b", "a"),
    ("p2", "b", "a"),  # split (its games apart)
    ("p3", "b", "a"),  # b won twice
    ("p4", "a", "b"),  # no partner yet
]


def test_counts_are_asked_from_one_side_whichever_way_the_pairing_is_kept() -> None:
    by_name = _played(PairTally(), GAMES)
    b_first = _played(PairTally(lambda x, y: ("b", "a")), GAMES)
    for tally in (by_name, b_first):
        assert tally.counts("a", "b") == PairCounts([2, 1, 0], 2, 5)  # lost twice first
        assert tally.counts("b", "a") == PairCounts([0, 1, 2], 5, 2)
        assert tally.classes("b", "a") == (0, 1, 2)
    assert list(by_name.pairings()) == [("a", "b")]
    assert list(b_first.pairings()) == [("b", "a")]
    assert by_name.classes("a", "c") is None and by_name.counts("a", "c") == ([0, 0, 0], 0, 0)


def test_a_pair_is_two_games_of_one_key_between_the_same_two_engines() -> None:
    tally = _played(
        PairTally(),
        [
            ("k", "a", "b"),
            ("k", "c", "a"),  # the key's second game is between other engines: no pair
            ("", "a", "b"),
            ("", "a", "b"),  # no pair key: in no pair
            ("m", "a", "b"),
            ("m", "a", "b"),  # a pair
            ("m", "b", "a"),  # a third game waits for a fourth
        ],
    )
    assert tally.pairs == {("a", "b"): [0, 0, 1]}
    assert tally.counts("a", "b").wins == 5 and tally.counts("a", "b").losses == 1
    assert tally.counts("a", "c") == ([0, 0, 0], 0, 1)


def test_merged_and_renamed_tallies_keep_each_side_its_counts() -> None:
    b_first = _played(PairTally(lambda x, y: ("b", "a")), GAMES)
    merged = _played(PairTally(), GAMES)
    merged.merge(b_first)
    assert merged.counts("a", "b") == PairCounts([4, 2, 0], 4, 10)
    renamed = merged.renamed({"a": "z"})  # z now sorts after b
    assert list(renamed.pairings()) == [("b", "z")]
    assert renamed.counts("z", "b") == PairCounts([4, 2, 0], 4, 10)


def test_the_tables_the_match_score_and_the_sprt_read_the_same_counts() -> None:
    tally = Tally()
    score = MatchResult(("a", "b"))
    for pair_key, winner, loser in GAMES:
        tally.add_game(winner, loser, True, "connection", pair_key)
        engines = ("0", "1") if winner == "a" else ("1", "0")
        score.tally.add(pair_key, *engines)
    assert tally.pairs.counts("a", "b") == score.tally.counts("0", "1")
    assert score.pairs() == [2, 1, 0]
    test = parse_test("elo0=0,elo1=50")
    verdict = judge(test, *tally.pairs.counts("a", "b"))
    assert verdict.pairs == (2, 1, 0) and verdict.games == 6
