"""The pair SPRT: its log-likelihood ratio against an independent computation, and the
estimate after a sequential stop against simulated tests of known strength."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize

from arbiter.results.ratings import expected_score
from arbiter.results.sprt import (
    PAIR_SCORES,
    Sprt,
    constrained_mle,
    game_llr,
    pair_llr,
    regularised,
    stopped_estimate,
)


def _brute_force_mle(counts: list[float], mean: float) -> np.ndarray:
    """The constrained maximum found by a general-purpose optimiser, not the formula."""
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


def _simulated_stop(test: Sprt, elo: float, split: float, rng: random.Random,
                    cap: int) -> tuple[list[int], str]:  # fmt: skip
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
    runs = 200
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
