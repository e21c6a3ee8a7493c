"""Schedules, the void policy and the store, below the CLI (pure code and a real SQLite file)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arbiter.engines.process import EngineSpec
from arbiter.games.referee import GameSpec
from arbiter.results.records import Evidence, GameRecord, Termination
from arbiter.results.standings import Tally
from arbiter.results.store import EngineEntry, Store
from arbiter.rules import Game, Variant
from arbiter.rules.clock import TimeControl
from arbiter.runs.driver import Action, VoidPolicy, void_decision
from arbiter.runs.schedule import (
    Format,
    Openings,
    match_game_number,
    match_games,
    pairings,
    parse_openings,
    random_opening,
    tournament_games,
    tournament_size,
)

ATOLL = Variant()
NO_PIE = Variant(8, 11, False)


def test_round_robin_pairs_everyone_once_per_round_with_seats_swapped() -> None:
    games = list(tournament_games("t", ["a", "b", "c", "d"], Format.ROUND_ROBIN, 2, ATOLL))
    assert len(games) == tournament_size(4, Format.ROUND_ROBIN, 2) == 24
    assert [g.number for g in games] == list(range(1, 25))
    assert len({g.game_id for g in games}) == 24
    for first, second in zip(games[::2], games[1::2], strict=True):
        assert first.engines == second.engines[::-1] and first.pair_key == second.pair_key
    seats = [g.engines for g in games if g.round == 1]
    assert sorted(seats) == sorted((x, y) for x in "abcd" for y in "abcd" if x != y)


def test_gauntlet_and_its_challenger() -> None:
    assert pairings(["a", "b", "c"], Format.GAUNTLET) == [("a", "b"), ("a", "c")]
    assert pairings(["a", "b", "c"], Format.GAUNTLET, "c") == [("c", "a"), ("c", "b")]
    assert tournament_size(3, Format.GAUNTLET, 3) == 12


def test_skipped_games_are_not_generated() -> None:
    all_games = list(tournament_games("t", ["a", "b", "c"], Format.ROUND_ROBIN, 2, ATOLL))
    done = {g.game_id for g in all_games[:5]}
    rest = list(tournament_games("t", ["a", "b", "c"], Format.ROUND_ROBIN, 2, ATOLL, skip=done))
    assert rest == [g for g in all_games if g.game_id not in done]


def test_ids_and_openings_do_not_change_when_engines_or_rounds_are_added() -> None:
    openings = Openings(random_plies=2, seed=9)
    small = {
        g.game_id: g
        for g in tournament_games("t", ["a", "b", "c"], Format.ROUND_ROBIN, 2, ATOLL, openings)
    }
    big = {
        g.game_id: g
        for g in tournament_games("t", ["a", "b", "c", "d"], Format.ROUND_ROBIN, 3, ATOLL, openings)
    }
    assert set(small) <= set(big)
    for gid, game in small.items():
        assert big[gid].engines == game.engines and big[gid].opening == game.opening
    # Reordering the engines keeps each game's identity (seats included).
    shuffled = {
        g.game_id: g.engines
        for g in tournament_games("t", ["c", "a", "b"], Format.ROUND_ROBIN, 2, ATOLL, openings)
    }
    assert shuffled == {gid: g.engines for gid, g in small.items()}
    # Another tournament name gives other ids.
    other = {
        g.game_id for g in tournament_games("u", ["a", "b", "c"], Format.ROUND_ROBIN, 2, ATOLL)
    }
    assert not other & set(small)


def test_the_schedule_is_lazy() -> None:
    games = tournament_games("t", [f"e{i}" for i in range(1000)], Format.ROUND_ROBIN, 100, ATOLL)
    first = next(games)
    assert first.number == 1  # 99,900,000 games are never built


def test_opening_lists_cycle_per_pairing_and_are_checked() -> None:
    lines = parse_openings("# comment\nc3\n\nE5 swap  # a swap\n", ATOLL)
    assert lines == [("c3",), ("e5", "swap")]
    openings = Openings(lines=tuple(lines))
    by_round = [
        g.opening for g in tournament_games("t", ["a", "b"], Format.ROUND_ROBIN, 3, ATOLL, openings)
    ][::2]
    start = lines.index(by_round[0])
    assert by_round == [lines[(start + r) % 2] for r in range(3)]  # in order, cycling
    # The starting line depends on the engines' names, not on their order in the file.
    swapped = [
        g.opening for g in tournament_games("t", ["b", "a"], Format.ROUND_ROBIN, 3, ATOLL, openings)
    ][::2]
    assert swapped == by_round
    for bad, line in (("c3\nc3 c3\n", 2), ("zz9\n", 1), ("c3 d4 swap\n", 1)):
        with pytest.raises(ValueError, match=f"line {line}"):
            parse_openings(bad, NO_PIE)


def test_under_the_pie_rule_an_opening_leaves_the_swap_decision_to_the_engine() -> None:
    # A line may stop after its first stone or take the decision itself, never skip it.
    assert parse_openings("c3\nc3 swap d4\n", ATOLL) == [("c3",), ("c3", "swap", "d4")]
    with pytest.raises(ValueError, match="line 2: under the pie rule move 2 is the swap"):
        parse_openings("c3\nc3 d4\n", ATOLL)
    # Random openings stop after one stone, whatever their length without the pie rule.
    for plies in (1, 2, 5):
        games = list(
            tournament_games(
                "t",
                ["a", "b", "c"],
                Format.ROUND_ROBIN,
                2,
                ATOLL,
                Openings(random_plies=plies, seed=3),
            )
        )
        assert {len(g.opening) for g in games} == {1}
        assert len({g.opening for g in games}) > 1  # pairs still differ
    free = list(
        tournament_games(
            "t", ["a", "b"], Format.ROUND_ROBIN, 1, NO_PIE, Openings(random_plies=3, seed=3)
        )
    )
    assert {len(g.opening) for g in free} == {3}
    assert Openings(random_plies=2).conditions(ATOLL)["swap_decision"] == "engine"
    assert Openings(random_plies=2).conditions(NO_PIE)["swap_decision"] is None


def test_random_openings_are_legal_and_reproducible() -> None:
    for variant in (ATOLL, Variant(4, 5, True), Variant(8, 7, False)):
        moves = random_opening(variant, 3, 42)
        assert moves == random_opening(variant, 3, 42)
        game = Game(variant)
        for move in moves:
            game.play(move)
        assert not game.over and len(moves) == 3


def test_match_schedule_keeps_its_record_ids() -> None:
    games = list(match_games("m1", 5, ATOLL, seed=3))
    assert [g.game_id for g in games] == [f"m1-{n}" for n in range(1, 6)]
    assert [g.engines for g in games][:2] == [("0", "1"), ("1", "0")]
    assert games[0].pair_key == games[1].pair_key != games[2].pair_key


def _void(stage: str = "game") -> GameRecord:
    tc = TimeControl(10, 0.1)
    return GameSpec("g", ATOLL, (tc, tc)).record(
        "a",
        "b",
        Termination.SETUP,
        void=True,
        reason="boardsize refused",
        evidence=Evidence(engine="a", detail="exit status 3", stage=stage),
    )


def test_void_policy_is_a_pure_decision() -> None:
    policy = VoidPolicy(max_attempts=3, max_consecutive_voids=5)
    assert void_decision(_void(), 1, 1, False, policy)[0] is Action.RETRY
    assert void_decision(_void(), 3, 3, True, policy)[0] is Action.GIVE_UP
    action, why = void_decision(_void(), 1, 5, True, policy)
    assert action is Action.ABORT and "5 games in a row" in why
    action, why = void_decision(_void("start"), 1, 1, False, policy)
    assert action is Action.ABORT and "could not be started" in why
    # An engine that has come up before: a start failure is retried like any void game.
    assert void_decision(_void("start"), 1, 1, True, policy)[0] is Action.RETRY


def _record(game_id: str, seat1: str, seat2: str, winner: str, term: str = "resign") -> GameRecord:
    return GameRecord(
        game_id=game_id,
        variant={"size": 11, "islands": 8, "pie": True},
        seat1=seat1,
        seat2=seat2,
        tc={"seat1": "1+0", "seat2": "1+0"},
        started="s",
        finished="f",
        winner=winner,
        termination=Termination(term),
    )


def test_the_store_keeps_a_game_once_and_aggregates_in_sql(tmp_path: Path) -> None:
    games = list(tournament_games("t", ["a", "b"], Format.ROUND_ROBIN, 2, ATOLL))
    path = tmp_path / "s.sqlite"
    spec = EngineSpec(argv=("python3", "bot.py"), name="a")
    with Store.open(path) as store:
        entries = {k: EngineEntry({"command": k}, spec.argv) for k in ("a", "b")}
        store.begin("t", {"tc": "1+0"}, {}, entries)
        store.engine_seen("a", "x" * 10_000, "1")
        g1, g2, g3, _ = games
        store.write(g1, _record(g1.game_id, "a", "b", "a"))
        store.write(g1, _record(g1.game_id, "a", "b", "b"))  # the same game again: ignored
        store.write(g2, _record(g2.game_id, "b", "a", "a", "time"))
        void = dataclasses.replace(
            _record(g3.game_id, "a", "b", "a"),
            void=True,
            winner=None,
            termination=Termination.SETUP,
        )
        store.write(g3, void)
    with Store.open(path, create=False) as store:
        assert store.done_ids() == {g1.game_id, g2.game_id}
        assert store.games_stored() == 2 and store.void_count() == 1
        counts = {(r.seat1, r.seat2): (r.seat1_wins, r.seat2_wins) for r in store.counts()}
        assert counts == {("a", "b"): (1, 0), ("b", "a"): (0, 1)}
        assert store.faults() == [("b", "time", 1)]
        assert store.stored_pairs() == [(("a", "b"), ("a", "b"), 1)]
        [engine] = [e for e in store.engines() if e["name"] == "a"]
        assert len(engine["reply_name"]) == 4096  # capped
        tally = Tally.from_store(store)
        assert tally.games == 2 and tally.pairs.classes("b", "a") == (1, 0, 0)
        assert tally.faults == {"b": {"time": 1}}


def test_a_file_that_is_not_a_store_is_a_clear_error(tmp_path: Path) -> None:
    from arbiter.errors import ConfigError

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    # The operator's file to fix, as for every command: a ConfigError (exit 2).
    with pytest.raises(ConfigError, match="not a usable results store"):
        Store.open(junk)
    with pytest.raises(ConfigError, match="not a results store"):
        Store.open_read(junk)
    with pytest.raises(ConfigError, match="no results store here yet"):
        Store.open(tmp_path / "missing.sqlite", create=False)


def test_a_match_game_id_gives_back_its_number_and_nothing_else_does() -> None:
    ids = [game.game_id for game in match_games("m-1", 12, Variant())]
    assert [match_game_number("m-1", gid) for gid in ids] == list(range(1, 13))
    for other in ("m-2-1", "m-1-01", "m-1-", "m-1-x", "m-1-\u0663", "r1-abc", "m-1"):
        assert match_game_number("m-1", other) is None
