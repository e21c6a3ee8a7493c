"""The pair SPRT: its log-likelihood ratio against an independent computation, and the
estimate after a sequential stop against simulated tests of known strength."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from arbiter.results.elo import expected_score
from arbiter.results.sprt import (
    PAIR_SCORES,
    Sprt,
    constrained_mle,
    expected_pairs,
    game_llr,
    judge,
    pair_llr,
    parse_test,
    regularised,
    stopped_estimate,
)


def _brute_force_mle(counts: list[float], mean: float) -> np.ndarray:
    """The constrained maximum found by a general-purpose optimiser, not the formula."""
    # scipy here, not at the top: it takes a second of every worker's collection
    from scipy.optimize import minimize

    n = np.asarray(counts)
    x = np.asarray(PAIR_SCORES)
    best = minimize(
        lambda p: -float(np.sum(n * np.log(np.maximum(p, 1e-300)))),
        x0=np.full(3, 1 / 3),
        method="SLSQP",
        bounds=[(1e-12, 1.0)] * 3,
        constraints=[
            {"type": "eq", "fun": lambda p: np.sum(p) - 1.0},
            {"type": "eq", "fun": lambda p: np.sum(p * x) - mean},
        ],
        options={"ftol": 1e-15, "maxiter": 500},
    )
    assert best.success, best.message
    return np.asarray(best.x)


@pytest.mark.parametrize(
    "pairs", [[10, 30, 12], [0, 7, 3], [4, 0, 9], [5, 0, 0], [0, 0, 40], [1, 1, 1], [250, 520, 301]]
)
@pytest.mark.parametrize(("elo0", "elo1"), [(0.0, 10.0), (-20.0, 30.0), (0.0, 200.0)])
def test_the_llr_is_the_ratio_of_the_two_constrained_maxima(
    pairs: list[int], elo0: float, elo1: float
) -> None:
    n = regularised(pairs)
    p0 = _brute_force_mle(n, expected_score(elo0))
    p1 = _brute_force_mle(n, expected_score(elo1))
    expected = float(np.sum(np.asarray(n) * np.log(p1 / p0)))
    assert pair_llr(pairs, elo0, elo1) == pytest.approx(expected, abs=1e-5)
    for mean in (expected_score(elo0), expected_score(elo1)):
        found = constrained_mle(n, PAIR_SCORES, mean)
        assert found == pytest.approx(_brute_force_mle(n, mean), abs=1e-6)
        assert float(np.dot(found, PAIR_SCORES)) == pytest.approx(mean, abs=1e-12)


def test_no_pairs_say_nothing_and_bounds_follow_the_error_rates() -> None:
    assert pair_llr([0, 0, 0], 0, 10) == 0.0
    test = Sprt(0, 10, alpha=0.05, beta=0.1)
    assert test.lower == pytest.approx(math.log(0.1 / 0.95))
    assert test.upper == pytest.approx(math.log(0.9 / 0.05))
    assert test.verdict(test.upper) == "H1" and test.verdict(test.lower) == "H0"
    assert test.verdict(0.0) == "inconclusive"
    # The pair test sees what the game test sees in the direction of the evidence.
    assert pair_llr([10, 20, 40], 0, 20) > 0 > pair_llr([40, 20, 10], 0, 20)
    assert game_llr(100, 60, 0, 20) > 0 > game_llr(60, 100, 0, 20)


def test_correlated_pairs_decide_with_less_evidence_than_independent_games() -> None:
    """Fewer splits than independent games would give (the opening favours the same side
    in both games) is evidence the pair test uses and the game test cannot."""
    wins, losses = 120, 80  # the same games, as 100 pairs
    independent = [16, 48, 36]  # what independent games at this score would give
    correlated = [6, 68, 26]  # the same score; the openings decide more of the pairs' splits
    for pairs in (independent, correlated):
        assert pairs[1] + 2 * pairs[2] == wins
    assert pair_llr(correlated, 0, 30) > 1.5 * pair_llr(independent, 0, 30)
    assert pair_llr(independent, 0, 30) == pytest.approx(game_llr(wins, losses, 0, 30), rel=0.1)


def _simulated_stop(
    test: Sprt, elo: float, split: float, rng: random.Random, cap: int
) -> tuple[list[int], str]:
    """A pair test run to its stop on pairs drawn with this strength and share of splits."""
    score = expected_score(elo)
    won = score - split / 2  # a pair's mean score is won twice + split / 2
    pairs = [0, 0, 0]
    for _ in range(cap):
        draw = rng.random()
        pairs[2 if draw < won else 1 if draw < won + split else 0] += 1
        verdict = test.verdict(pair_llr(pairs, test.elo0, test.elo1))
        if verdict != "inconclusive":
            return pairs, verdict
    return pairs, "inconclusive"


@pytest.mark.slow
def test_the_estimate_after_a_stop_is_median_unbiased_where_the_plain_one_is_not() -> None:
    test = Sprt(0.0, 60.0)
    truth = 45.0
    rng = random.Random(7)
    plain_above = honest_above = covered = 0
    runs = 100
    for _ in range(runs):
        pairs, verdict = _simulated_stop(test, truth, 0.45, rng, cap=2000)
        n = sum(pairs)
        mean = (pairs[1] * 0.5 + pairs[2]) / n
        plain = -400 * math.log10(1 / mean - 1) if 0 < mean < 1 else math.copysign(1e9, mean - 0.5)
        estimate = stopped_estimate(pairs, test, verdict)
        assert estimate is not None
        plain_above += plain > truth
        honest_above += estimate.elo > truth
        covered += estimate.lower <= truth <= estimate.upper
    # A test that stops on lucky streaks overstates a difference between its hypotheses
    # (they stop at H1 when ahead); the median-unbiased estimate is above the truth half
    # the time, and its interval covers it about as often as it says.
    assert plain_above / runs > 0.6
    assert 0.4 <= honest_above / runs <= 0.6
    assert 0.9 <= covered / runs <= 0.995


# --- the binomial test (model=games) and the test's text ----------------------------------


def test_the_game_llr_by_hand() -> None:
    # p0 = 0.5; p1 = 1 / (1 + 10**-0.025) = 0.5143871841659987.
    llr = game_llr(60, 40, 0.0, 10.0)
    assert llr == pytest.approx(
        60 * math.log(0.5143871841659987 / 0.5) + 40 * math.log(0.4856128158340013 / 0.5)
    )
    assert llr == pytest.approx(0.534231, abs=1e-6)
    test = Sprt(0.0, 10.0, model="games")
    verdict = judge(test, [0, 0, 0], 60, 40)
    assert verdict.llr == llr and verdict.games == 100 and verdict.result == "inconclusive"
    assert test.lower == pytest.approx(math.log(0.05 / 0.95))  # -2.944439
    assert test.upper == pytest.approx(math.log(0.95 / 0.05))
    asym = Sprt(0.0, 5.0, alpha=0.1, beta=0.2)
    assert asym.lower == pytest.approx(math.log(0.2 / 0.9))
    assert asym.upper == pytest.approx(math.log(0.8 / 0.1))


def test_the_game_test_decides() -> None:
    test = Sprt(0.0, 10.0, model="games")
    for wins, losses, result in (
        (300, 200, "inconclusive"),
        (400, 260, "H1"),
        (200, 300, "H0"),
        (1000, 1000, "inconclusive"),
        (4000, 4000, "H0"),
    ):
        assert judge(test, [0, 0, 0], wins, losses).result == result


def test_parse_test() -> None:
    assert parse_test("elo0=0,elo1=10") == Sprt(0.0, 10.0, 0.05, 0.05, "pairs")
    assert parse_test(" elo0 = -5 , elo1=5, alpha=0.1,beta=0.2,model=games") == Sprt(
        -5.0, 5.0, 0.1, 0.2, "games"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("elo0=0,elo1=10,gamma=1", "unknown SPRT key gamma;"),
        ("elo1=10", "needs elo0"),
        ("alpha=0.1", "needs elo0 and elo1"),
        ("elo0=10,elo1=10", "elo1 > elo0"),
        ("elo0=0,elo1=10,alpha=0.5", "alpha must be between 0 and 0.5"),
        ("elo0=0,elo1=10,beta=0", "beta must be between 0 and 0.5"),
        ("elo0=0,elo1=ten", "elo1 must be a number"),
        ("elo0=0,elo1=nan", "must be finite"),
        ("elo0=0,elo0=1,elo1=10", "given twice"),
        ("elo0=0;elo1=10", "not key=value|must be a number"),
        ("elo0=0,elo1=10,model=trinomial", "pairs or games"),
        ("elo0=0,elo1=3000", "within ±2000"),
        ("", "not key=value"),
    ],
)
def test_parse_test_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_test(text)


def test_the_expected_pairs_follow_the_average_length_of_simulated_tests() -> None:
    # Wald's average sample number against the game test run on simulated games: under
    # each hypothesis the mean length of many runs, in pairs, lies near the formula's,
    # and the formula takes the shorter of the two.
    test = Sprt(0, 150)
    rng = random.Random(7)
    means = []
    for elo in (test.elo0, test.elo1):
        score, lengths = expected_score(elo), []
        for _ in range(2000):
            wins = losses = 0
            while test.lower < game_llr(wins, losses, test.elo0, test.elo1) < test.upper:
                if rng.random() < score:
                    wins += 1
                else:
                    losses += 1
            lengths.append(wins + losses)
        means.append(sum(lengths) / len(lengths) / 2)
    assert expected_pairs(test) == 15
    assert abs(min(means) - expected_pairs(test)) <= 3, means
    assert expected_pairs(Sprt(0, 50)) > 8 * expected_pairs(test)  # a narrower gap costs more
    assert expected_pairs(Sprt(0, 0.0)) == 0
