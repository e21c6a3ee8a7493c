"""Adaptive pairing, pure: the schedule on results drawn from known strengths, rebuilt
from any point, and the stop rule's statistics. The real CLI runs an adaptive
tournament in test_tournament.py; bench/pairing_bench.py measures it against
round-robin and Swiss."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from schedules import play as played
from schedules import record

from arbiter._numpy import np
from arbiter.results.store import ResultRow
from arbiter.rules import Variant
from arbiter.runs.adaptive import (
    AdaptiveSchedule,
    StopRule,
    bound,
    normal_cdf,
    pair_alpha,
    parse_until,
    questions,
)
from arbiter.runs.schedule import WAIT, Openings, ScheduledGame

VARIANT = Variant(8, 7, True)


def adaptive(
    engines: list[str],
    budget: int,
    rows: list[ResultRow] | None = None,
    rule: StopRule | None = None,
    min_games: int = 4,
) -> AdaptiveSchedule:
    return AdaptiveSchedule(
        "t",
        engines,
        budget,
        VARIANT,
        Openings(random_plies=1, seed=4),
        4,
        rows or [],
        rule,
        min_games,
    )


def play(
    schedule: AdaptiveSchedule,
    elo: dict[str, float],
    rng: random.Random,
    stop_after: int | None = None,
) -> list[tuple[ScheduledGame, int]]:
    """The games handed out with the seat that won each, drawn from `elo`."""
    return played(schedule, rng, elo, stop_after)


def pool(n: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    elo, x = {}, 0.0
    for i in range(n):
        elo[f"e{i:02}"] = x
        x += rng.uniform(10, 100)
    return elo


@pytest.mark.parametrize(("n", "budget"), [(2, 10), (5, 60), (12, 200)])
def test_the_budget_is_spent_in_whole_pairs_with_every_engine_warmed_up(
    n: int, budget: int
) -> None:
    elo = pool(n, n)
    schedule = adaptive(list(elo), budget)
    games = play(schedule, elo, random.Random(1))
    assert len(games) == budget and schedule.over and schedule.next() is None
    ids = [g.game_id for g, _ in games]
    assert len(ids) == len(set(ids)) and [g.number for g, _ in games] == list(range(1, budget + 1))
    for (first, _), (second, _) in zip(games[::2], games[1::2], strict=True):
        assert first.engines == second.engines[::-1] and first.opening == second.opening
        assert first.pair_key == second.pair_key and first.round == second.round
    per_engine = Counter(e for g, _ in games for e in g.engines)
    assert min(per_engine[e] for e in elo) >= 4  # min_games
    # Each pair has its own key, the same two engines again in a batch too.
    batches = Counter(g.pair_key for g, _ in games)
    assert set(batches.values()) == {2}


def test_games_go_where_the_order_is_unsure() -> None:
    # Two close engines at the top, the rest far below: once warmed up, most games
    # are between the two.
    elo = {"a": 1000.0, "b": 990.0, "c": 400.0, "d": 200.0, "e": 0.0, "f": -200.0}
    schedule = adaptive(list(elo), 400, rule=StopRule(1))
    games = play(schedule, elo, random.Random(3))
    top = sum(set(g.engines) == {"a", "b"} for g, _ in games)
    assert top > len(games) / 3
    # Yet no engine is starved: each has about a tenth of the mean at least.
    per_engine = Counter(e for g, _ in games for e in g.engines)
    mean = 2 * len(games) / len(elo)
    assert min(per_engine.values()) >= 0.1 * mean - 2


@pytest.mark.parametrize("seed", range(5))
def test_a_schedule_rebuilt_after_a_kill_hands_out_exactly_what_is_missing(seed: int) -> None:
    elo = pool(9, seed)
    rng = random.Random(seed)
    whole = adaptive(list(elo), 120, rule=StopRule(3))
    games = play(whole, elo, random.Random(seed))
    results = {g.game_id: w for g, w in games}
    cut = rng.randrange(len(games))
    current = games[cut][0].round
    stored = [
        ResultRow(g.game_id, g.round, g.engines[0], g.engines[1], w)
        for k, (g, w) in enumerate(games)
        if g.round < current or (k < cut and rng.random() < 0.5)
    ]
    resumed = adaptive(list(elo), 120, stored, rule=StopRule(3))
    stored_ids = {row.game_id for row in stored}
    expected = [g for g, _ in games if g.game_id not in stored_ids]
    handed = []
    while (game := resumed.next()) is not None:
        if game is WAIT:
            continue
        handed.append(game)
        resumed.settled(game, record(game, results[game.game_id]))
    assert handed == expected  # the same games: ids, numbers, openings and seeds


def test_the_stop_rule_ends_a_clear_pool_early_with_the_right_order() -> None:
    elo = {f"e{i}": 400.0 * i for i in range(5)}
    schedule = adaptive(list(elo), 2000, rule=StopRule(2, 0.95))
    games = play(schedule, elo, random.Random(2))
    assert len(games) < 2000 and schedule.over
    assert "top 2 (e4, e3) settled at 95% confidence" in schedule.verdict
    assert [schedule.engines[i] for i in schedule.board().order][:2] == ["e4", "e3"]
    # Rebuilt from what was stored, the run is over: nothing is left to play.
    rows = [ResultRow(g.game_id, g.round, *g.engines, w) for g, w in games]
    again = adaptive(list(elo), 2000, rows, rule=StopRule(2, 0.95))
    assert again.over and again.next() is None and again.verdict == schedule.verdict


def test_questions_are_the_neighbours_or_the_top_places_against_all_below() -> None:
    order = [3, 0, 2, 1, 4]
    assert questions(order, None) == [(3, 0), (0, 2), (2, 1), (1, 4)]
    assert questions(order, 2) == [(3, 0), (0, 2), (0, 1), (0, 4)]
    assert questions(order, 1) == [(3, 0), (3, 2), (3, 1), (3, 4)]
    assert parse_until("top:3") == 3 and parse_until("order") is None
    for bad in ("top:0", "top:", "first:3", "top:x"):
        with pytest.raises(ValueError, match="unknown stop rule"):
            parse_until(bad)


def test_the_bound_holds_at_every_look_where_a_fixed_interval_does_not() -> None:
    # The same statement looked at after every batch: with a 95% interval from a fixed
    # number of games, one of many looks errs far more often than 5%; the mixture bound
    # is wider, and wider still the more is known (it grows like sqrt(log I)).
    # scipy here, not at the top: it takes a second of every worker's collection
    from scipy.stats import norm

    sd = np.array([1.0, 0.3, 0.1, 0.03, 0.01])
    z = bound(sd, 0.05) / sd
    assert np.all(z > norm.ppf(0.975)) and np.all(np.diff(z[2:]) > 0)
    rng = np.random.default_rng(7)
    looks, runs = 200, 2000
    steps = rng.normal(size=(runs, looks))  # a difference of 0, one unit of information a look
    info = np.arange(1, looks + 1)
    estimate = np.cumsum(steps, axis=1) / info
    naive = (np.abs(estimate) > 1.96 / np.sqrt(info)).any(axis=1).mean()
    mixture = (np.abs(estimate) > bound(1 / np.sqrt(info), 0.05)).any(axis=1).mean()
    assert naive > 0.25 and mixture < 0.05
    assert math.isclose(pair_alpha(0.95, 4), 0.05 / 6)


def test_the_normal_distribution_matches_scipy() -> None:
    from scipy.stats import norm

    x = np.linspace(-8, 8, 161)
    assert np.allclose(normal_cdf(x), norm.cdf(x), atol=1e-7)
