"""Match statistics on the logistic Elo scale."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.results.elo import elo_from_score, expected_score
from arbiter.results.ratings import (
    DEFAULT_PRIOR,
    PairStats,
    RatingFit,
    estimate_difference,
    fit,
)

Counts = npt.NDArray[np.int64]
LOGIT = math.log(10) / 400  # logits per Elo


def test_elo_of_known_scores() -> None:
    assert elo_from_score(0.5) == pytest.approx(0.0)
    assert elo_from_score(0.75) == pytest.approx(190.85, abs=0.01)  # 400 * log10(3)
    assert elo_from_score(0.25) == pytest.approx(-190.85, abs=0.01)


def test_pair_stats_count_and_score() -> None:
    s = PairStats(wins=75, losses=25)
    assert s.games == 100 and s.score == 0.75
    assert PairStats(0, 0).score == 0.5


@pytest.mark.parametrize("prior", [DEFAULT_PRIOR, 0.5])
def test_two_engines_are_estimated_as_the_pool_fit_rates_them(prior: float) -> None:
    # A 3-1 over four seat-swapped games: A won both games in seat 1 and split in seat 2.
    d = estimate_difference((2, 0), (1, 1), prior=prior)
    pool = fit(["a", "b"], [[0, 2], [1, 0]], [[0, 0], [1, 0]], prior=prior)
    diff, half = pool.diff(0, 1)
    assert d.bounded and d.elo == pytest.approx(diff) and d.error == pytest.approx(half)
    assert d.los == pytest.approx(pool.los(0, 1))
    assert d.elo > 0 and 0.5 < d.los < 1
    # From the other side: the same difference, negated.
    other = estimate_difference((1, 1), (2, 0), prior=prior)
    assert other.elo == pytest.approx(-d.elo) and other.error == pytest.approx(d.error)
    assert other.los == pytest.approx(1 - d.los)


def test_an_even_match_is_zero_with_a_finite_interval() -> None:
    d = estimate_difference((1, 0), (1, 0))  # 1-1, each engine won in seat 1
    assert d.elo == pytest.approx(0.0, abs=1e-6) and d.los == pytest.approx(0.5)
    assert d.error is not None and 0 < d.error < 1000
    more = estimate_difference((50, 0), (50, 0))
    assert more.error is not None and more.error < d.error


def test_without_prior_an_unbounded_difference_has_no_number_and_no_los() -> None:
    d = estimate_difference((2, 0), (0, 2), prior=0.0)  # A won all four games
    assert not d.bounded and d.elo is None and d.error is None and d.los is None
    # With the prior the same games give a finite estimate.
    assert estimate_difference((2, 0), (0, 2)).bounded


# --- helpers -------------------------------------------------------------------------------


def names_for(n: int) -> list[str]:
    return [f"e{i}" for i in range(n)]


def simulate(
    rng: np.random.Generator, strengths: npt.ArrayLike, seat: float, per_seat: int
) -> tuple[Counts, Counts]:
    """Round robin, each ordered pair (i in seat 1, j in seat 2) playing per_seat games."""
    r = np.asarray(strengths, dtype=float)
    n = r.size
    p = expected_score_matrix(r[:, None] - r[None, :] + seat)
    games = np.full((n, n), per_seat)
    np.fill_diagonal(games, 0)
    wins = rng.binomial(games, p).astype(np.int64)
    return wins, (games - wins).astype(np.int64)


def expected_score_matrix(diff: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = 1.0 / (1.0 + 10.0 ** (-diff / 400.0))
    return out


def pair(wins: int, losses: int, n: int = 2, i: int = 0, j: int = 1) -> tuple[Counts, Counts]:
    w = np.zeros((n, n), dtype=np.int64)
    lo = np.zeros((n, n), dtype=np.int64)
    w[i, j], lo[i, j] = wins, losses
    return w, lo


def reference_nll(
    elo: npt.NDArray[np.float64], seat: float, wins: Counts, losses: Counts, prior: float
) -> float:
    """Negated log-likelihood plus prior, written cell by cell from the model's definition.

    ``elo`` must have mean 0: the prior's virtual opponent sits at the pool mean.
    """

    def log_p(diff_elo: float) -> float:  # log of the probability that the stronger side wins
        return -math.log1p(10.0 ** (-diff_elo / 400.0))

    n = len(elo)
    total = 0.0
    for i in range(n):
        for j in range(n):
            d = float(elo[i] - elo[j]) + seat
            total -= int(wins[i, j]) * log_p(d) + int(losses[i, j]) * log_p(-d)
    for i in range(n):
        total -= prior / 2 * (log_p(float(elo[i])) + log_p(-float(elo[i])))
    total -= prior / 2 * (log_p(seat) + log_p(-seat))
    return total


# --- fit against an independent computation ------------------------------------------------


@pytest.mark.parametrize("prior", [DEFAULT_PRIOR, 0.0])
def test_fit_matches_generic_optimiser_and_numerical_hessian(prior: float) -> None:
    rng = np.random.default_rng(7)
    n = 5
    strengths = rng.normal(0.0, 150.0, n)
    games = rng.integers(3, 40, (n, n))
    np.fill_diagonal(games, 0)
    p = expected_score_matrix(strengths[:, None] - strengths[None, :] + 35.0)
    wins = rng.binomial(games, p).astype(np.int64)
    losses = (games - wins).astype(np.int64)

    # Free parameters: the first n-1 ratings in hundreds of Elo (the last one makes the mean
    # 0) and the seat advantage.
    def unpack(z: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], float]:
        r = 100.0 * np.append(z[: n - 1], -z[: n - 1].sum())
        return r, 100.0 * float(z[n - 1])

    def objective(z: npt.NDArray[np.float64]) -> float:
        r, s = unpack(z)
        return reference_nll(r, s, wins, losses, prior)

    # scipy here, not at the top: it takes a second of every worker's collection
    from scipy import optimize

    best = optimize.minimize(objective, np.zeros(n), method="BFGS", options={"gtol": 1e-9})
    ref_elo, ref_seat = unpack(best.x)

    result = fit(names_for(n), wins, losses, prior=prior)
    assert result.converged and result.connected
    np.testing.assert_allclose(result.elo, ref_elo, atol=0.1)
    assert result.seat_advantage == pytest.approx(ref_seat, abs=0.1)
    assert result.elo.sum() == pytest.approx(0.0, abs=1e-6)

    # Numerical Hessian of the reference objective in Elo, on the same parameters.
    z0 = best.x
    h = 0.01  # 1 Elo
    m = z0.size
    hess = np.zeros((m, m))
    for a in range(m):
        for b in range(m):
            ea, eb = np.eye(m)[a] * h, np.eye(m)[b] * h
            hess[a, b] = (
                objective(z0 + ea + eb)
                - objective(z0 + ea - eb)
                - objective(z0 - ea + eb)
                + objective(z0 - ea - eb)
            ) / (4 * (100 * h) ** 2)
    cov_z = np.linalg.inv(hess)
    jac = np.zeros((n + 1, m))  # (ratings, seat) from the free parameters, in Elo per Elo
    jac[: n - 1, : n - 1] = np.eye(n - 1)
    jac[n - 1, : n - 1] = -1.0
    jac[n, n - 1] = 1.0
    cov = jac @ cov_z @ jac.T
    ref_error = 1.959964 * np.sqrt(np.diag(cov))
    np.testing.assert_allclose(result.error, ref_error[:n], rtol=0.02)
    assert result.seat_error == pytest.approx(ref_error[n], rel=0.02)
    np.testing.assert_allclose(result.covariance, cov[:n, :n], rtol=0.03, atol=1.0)


def test_two_engines_without_seat_or_prior() -> None:
    wins, losses = pair(75, 25)
    result = fit(["a", "b"], wins, losses, prior=0.0, seat_term=False)
    assert result.converged
    diff, half_width = result.diff(0, 1)
    assert diff == pytest.approx(400 * math.log10(3), abs=1e-4)  # 190.85
    assert result.elo[0] == pytest.approx(-result.elo[1])
    assert result.seat_advantage == 0.0 and result.seat_error == 0.0
    # Fisher information of 100 games at p = 0.75, in Elo.
    sd = 1 / (LOGIT * math.sqrt(100 * 0.75 * 0.25))
    assert half_width == pytest.approx(1.959964 * sd, rel=1e-6)
    assert result.error[0] == pytest.approx(1.959964 * sd / 2, rel=1e-6)


def test_seat_advantage_alone() -> None:
    # Equal engines, seat 1 wins 75% from both sides.
    wins = np.array([[0, 75], [75, 0]])
    losses = np.array([[0, 25], [25, 0]])
    result = fit(["a", "b"], wins, losses, prior=0.0)
    assert result.seat_advantage == pytest.approx(400 * math.log10(3), abs=1e-4)
    np.testing.assert_allclose(result.elo, 0.0, atol=1e-6)


def test_expected_score_inverts_elo_from_score() -> None:
    for d in (-500.0, -190.85, 0.0, 35.0, 800.0):
        assert elo_from_score(expected_score(d)) == pytest.approx(d, abs=1e-6)
    assert expected_score(0.0) == 0.5
    assert expected_score(1e6) == 1.0 and expected_score(-1e6) == 0.0


# --- calibration ---------------------------------------------------------------------------


def test_error_bars_are_calibrated() -> None:
    rng = np.random.default_rng(2024)
    strengths = np.linspace(-200.0, 200.0, 6)
    truth = strengths - strengths.mean()
    seat = 40.0
    pools = 200
    inside = seat_inside = diff_inside = diffs = 0
    for _ in range(pools):
        wins, losses = simulate(rng, strengths, seat, per_seat=150)
        result = fit(names_for(6), wins, losses)
        assert result.converged
        inside += int(np.sum(np.abs(result.elo - truth) <= result.error))
        seat_inside += abs(result.seat_advantage - seat) <= result.seat_error
        for i in range(6):
            for j in range(i + 1, 6):
                d, hw = result.diff(i, j)
                diff_inside += abs(d - (truth[i] - truth[j])) <= hw
                diffs += 1
    assert 0.92 <= inside / (pools * 6) <= 0.98
    assert 0.92 <= diff_inside / diffs <= 0.98
    assert 0.90 <= seat_inside / pools <= 0.99


# --- prior ---------------------------------------------------------------------------------


def all_win_pool() -> tuple[Counts, Counts]:
    """Engine 0 wins all its 40 games; engines 1 and 2 split theirs."""
    wins = np.array([[0, 10, 10], [0, 0, 6], [0, 5, 0]])
    losses = np.array([[0, 0, 0], [10, 0, 4], [10, 5, 0]])
    return wins, losses


def test_prior_keeps_an_all_win_engine_finite() -> None:
    wins, losses = all_win_pool()
    result = fit(["top", "b", "c"], wins, losses)
    assert result.converged
    assert np.all(np.isfinite(result.elo)) and np.all(np.isfinite(result.error))
    assert result.order()[0] == 0
    assert 200 < result.elo[0] < 1500
    assert 0 < result.error[0] < 1000
    assert np.all(result.error[1:] < 400)


def test_without_prior_an_all_win_engine_is_reported_not_converged() -> None:
    wins, losses = all_win_pool()
    result = fit(["top", "b", "c"], wins, losses, prior=0.0)
    assert not result.converged
    assert np.all(np.isfinite(result.elo))
    assert result.elo[0] > result.elo[1] and result.elo[0] > result.elo[2]
    assert np.all(np.isinf(result.error)) and math.isinf(result.seat_error)
    assert 0 < result.iterations <= 100
    # No finite interval: no estimate at all, and no likelihood of superiority.
    assert math.isinf(result.diff(0, 1)[1]) and result.los(0, 1) is None
    assert not any(result.bounded(i) for i in range(3))
    assert result.difference(0, 1).elo is None and result.difference(0, 1).los is None
    assert result.unbounded == ("top won all 40 of its games",)


def test_without_prior_a_seat_that_won_every_game_is_not_converged() -> None:
    wins = np.array([[0, 5], [5, 0]])
    losses = np.zeros((2, 2), dtype=np.int64)
    plain = fit(["a", "b"], wins, losses, prior=0.0)
    assert not plain.converged and "seat 1 won all 10 games" in plain.unbounded
    with_prior = fit(["a", "b"], wins, losses)
    assert with_prior.converged and 0 < with_prior.seat_advantage < math.inf
    assert with_prior.seat_error < 1000


def test_why_unbounded_names_the_groups_that_won_or_lost_everything() -> None:
    # a beat b and c, who beat d; b and c split their games: a and d run off, b and c not.
    wins = np.zeros((4, 4), dtype=np.int64)
    losses = np.zeros((4, 4), dtype=np.int64)
    wins[0, 1] = wins[0, 2] = wins[1, 3] = wins[2, 3] = 3
    wins[1, 2], losses[1, 2] = 2, 2
    result = fit(["a", "b", "c", "d"], wins, losses, prior=0.0, seat_term=False)
    assert result.unbounded == ("a won all 6 of its games", "d lost all 6 of its games")
    # A group that beat everyone outside it is named as a group, the losers not again.
    wins[1, 3] = wins[2, 3] = 0
    wins[3, 0], losses[3, 0] = 1, 1
    wins[0, 3], losses[0, 3] = 0, 0
    result = fit(["a", "b", "c", "d"], wins, losses, prior=0.0, seat_term=False)
    assert not result.converged and result.unbounded == (
        "a, d won every game they played against the other engines",
    )
    # Converged: nothing to explain.
    assert fit(["a", "b", "c", "d"], wins, losses).unbounded == ()


def test_prior_is_virtual_games_scored_half_against_the_pool_mean() -> None:
    # Two engines, A beats B 3-0 (no seat term). With the prior, A's real plus virtual
    # wins equal its expected score over real plus virtual games.
    wins, losses = pair(3, 0)
    result = fit(["a", "b"], wins, losses, prior=2.0, seat_term=False)
    t = float(result.elo[0]) * LOGIT
    p = 1.0 / (1.0 + math.exp(-t))  # against the virtual opponent at the mean, 0
    p_real = 1.0 / (1.0 + math.exp(-2 * t))
    assert 3 * p_real + 2 * p == pytest.approx(3 + 1, abs=1e-9)
    # Stronger prior, stronger shrinkage.
    weak = fit(["a", "b"], wins, losses, prior=0.5, seat_term=False)
    assert 0 < result.elo[0] < weak.elo[0]


def test_prior_pull_is_small_with_many_games() -> None:
    rng = np.random.default_rng(3)
    wins, losses = simulate(rng, [-150.0, 0.0, 50.0, 300.0], 30.0, per_seat=200)
    plain = fit(names_for(4), wins, losses, prior=0.0)
    shrunk = fit(names_for(4), wins, losses)
    np.testing.assert_allclose(shrunk.elo, plain.elo, atol=1.0)
    assert np.ptp(shrunk.elo) < np.ptp(plain.elo)


# --- pool structure ------------------------------------------------------------------------


def test_disconnected_pool_is_reported() -> None:
    wins = np.zeros((5, 5), dtype=np.int64)
    losses = np.zeros((5, 5), dtype=np.int64)
    wins[0, 2], losses[0, 2] = 7, 3  # a-c
    wins[3, 1], losses[3, 1] = 2, 6  # d-b
    wins[1, 3], losses[1, 3] = 5, 5  # b-d
    names = ["a", "b", "c", "d", "e"]
    result = fit(names, wins, losses)
    assert not result.connected
    assert result.components == [["a", "c"], ["b", "d"], ["e"]]
    assert result.converged
    assert np.all(np.isfinite(result.elo[:4])) and np.all(np.isfinite(result.error[:4]))
    # An engine without games sits at the pool mean with an infinite error.
    assert result.elo[4] == 0.0 and math.isinf(result.error[4]) and result.games[4] == 0
    assert result.elo.sum() == pytest.approx(0.0, abs=1e-6)
    assert result.score(4) == 0.5 and result.los(4, 0) is None and not result.bounded(4)
    # Plain maximum likelihood cannot place the components against each other.
    assert not fit(names, wins, losses, prior=0.0).converged

    connected = fit(["a", "b", "c"], *all_win_pool())
    assert connected.connected and connected.components == [["a", "b", "c"]]


def test_no_games_at_all() -> None:
    zeros = np.zeros((3, 3), dtype=np.int64)
    result = fit(["a", "b", "c"], zeros, zeros)
    assert result.converged and not result.connected and len(result.components) == 3
    np.testing.assert_array_equal(result.elo, 0.0)
    assert np.all(np.isinf(result.error)) and math.isinf(result.seat_error)
    empty = fit([], np.zeros((0, 0)), np.zeros((0, 0)))
    assert empty.connected and empty.components == [] and empty.order() == []


def test_anchor() -> None:
    rng = np.random.default_rng(5)
    wins, losses = simulate(rng, [-100.0, 0.0, 100.0, 250.0], 20.0, per_seat=50)
    names = ["a", "b", "c", "d"]
    centred = fit(names, wins, losses)
    anchored = fit(names, wins, losses, anchor=("b", 1500.0))
    assert anchored.elo[1] == 1500.0 and anchored.error[1] == 0.0
    assert anchored.anchor == ("b", 1500.0)
    np.testing.assert_allclose(anchored.elo - centred.elo, 1500.0 - centred.elo[1])
    for i in range(4):
        for j in range(4):
            assert anchored.diff(i, j) == pytest.approx(centred.diff(i, j))
        # Error relative to the anchor is the error of the difference to it.
        assert anchored.error[i] == pytest.approx(centred.diff(i, 1)[1])
    assert anchored.seat_advantage == pytest.approx(centred.seat_advantage)
    with pytest.raises(ValueError, match=r"unknown anchor engine 'z'.*a, b, c, d"):
        fit(names, wins, losses, anchor=("z", 0.0))


def test_fit_methods() -> None:
    wins = np.array([[0, 30, 20], [10, 0, 15], [5, 15, 0]])
    losses = np.array([[0, 10, 5], [30, 0, 15], [20, 10, 0]])
    result = fit(["x", "y", "z"], wins, losses)
    assert isinstance(result, RatingFit)
    # Engine 1: seat 1 against 0 and 2 (25 + 45 games), seat 2 against them (45 + 20).
    np.testing.assert_array_equal(result.games, [130, 135, 105])
    # Wins in seat 1 (row of seat1_wins) plus wins in seat 2 (column of seat1_losses).
    np.testing.assert_array_equal(result.wins, [50 + 50, 25 + 20, 20 + 20])
    np.testing.assert_array_equal(result.wins + result.losses, result.games)
    assert result.score(0) == pytest.approx(100 / 130)
    assert result.order() == sorted(range(3), key=lambda i: -result.elo[i])
    d, hw = result.diff(0, 2)
    cov = result.covariance
    assert d == pytest.approx(result.elo[0] - result.elo[2])
    assert hw == pytest.approx(1.959964 * math.sqrt(cov[0, 0] + cov[2, 2] - 2 * cov[0, 2]))
    assert result.los(0, 2) + result.los(2, 0) == pytest.approx(1.0)
    assert result.los(0, 2) > 0.99 and result.los(1, 1) == 0.5
    assert result.diff(1, 1) == (0.0, 0.0)
    tied = fit(["b", "a"], np.array([[0, 5], [5, 0]]), np.array([[0, 5], [5, 0]]))
    assert tied.order() == [1, 0]
    with pytest.raises(ValueError):
        result.elo[0] = 1.0


@pytest.mark.parametrize(
    ("names", "wins", "losses", "prior", "message"),
    [
        (["a", "a"], [[0, 1], [0, 0]], [[0, 0], [0, 0]], 2.0, "distinct"),
        (["a", "b"], [[0, 1]], [[0, 0], [0, 0]], 2.0, "shape"),
        (["a", "b"], [[0, -1], [0, 0]], [[0, 0], [0, 0]], 2.0, "non-negative"),
        (["a", "b"], [[0, 1.5], [0, 0]], [[0, 0], [0, 0]], 2.0, "whole"),
        (["a", "b"], [[1, 0], [0, 0]], [[0, 0], [0, 0]], 2.0, "diagonal"),
        (["a", "b"], [[0, 1], [0, 0]], [[0, 0], [0, 0]], -1.0, "prior"),
    ],
)
def test_fit_rejects_bad_input(
    names: list[str], wins: object, losses: object, prior: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        fit(names, wins, losses, prior=prior)  # type: ignore[arg-type]


# --- symmetries ----------------------------------------------------------------------------


@st.composite
def pools(draw: st.DrawFn) -> tuple[Counts, Counts, list[int]]:
    n = draw(st.integers(2, 5))
    cells = st.lists(st.integers(0, 12), min_size=n * n, max_size=n * n)
    wins = np.array(draw(cells), dtype=np.int64).reshape(n, n)
    losses = np.array(draw(cells), dtype=np.int64).reshape(n, n)
    np.fill_diagonal(wins, 0)
    np.fill_diagonal(losses, 0)
    return wins, losses, draw(st.permutations(list(range(n))))


def assert_same_fit(a: RatingFit, b: RatingFit, order: list[int], seat_sign: float) -> None:
    np.testing.assert_allclose(b.elo, a.elo[order], atol=1e-4)
    np.testing.assert_allclose(b.error, a.error[order], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(b.covariance, a.covariance[np.ix_(order, order)], atol=1e-3)
    assert b.seat_advantage == pytest.approx(seat_sign * a.seat_advantage, abs=1e-4)
    assert b.seat_error == pytest.approx(a.seat_error, rel=1e-5)
    np.testing.assert_array_equal(b.games, a.games[order])
    np.testing.assert_array_equal(b.wins, a.wins[order])
    assert b.connected == a.connected and b.converged == a.converged


@settings(max_examples=60, deadline=None)
@given(pools())
def test_permuting_engines_permutes_the_fit(pool: tuple[Counts, Counts, list[int]]) -> None:
    wins, losses, order = pool
    names = names_for(len(order))
    base = fit(names, wins, losses)
    ix = np.ix_(order, order)
    permuted = fit([names[i] for i in order], wins[ix], losses[ix])
    assert_same_fit(base, permuted, order, 1.0)
    assert sorted(map(sorted, permuted.components)) == sorted(map(sorted, base.components))


@settings(max_examples=60, deadline=None)
@given(pools())
def test_swapping_seats_negates_only_the_seat_advantage(
    pool: tuple[Counts, Counts, list[int]],
) -> None:
    wins, losses, _ = pool
    names = names_for(len(wins))
    base = fit(names, wins, losses)
    # A seat-1 win of i over j becomes a seat-1 loss of j against i.
    swapped = fit(names, losses.T, wins.T)
    assert_same_fit(base, swapped, list(range(len(names))), -1.0)
