"""The chi-square residual per host against hand calculations and scipy."""

from __future__ import annotations

import math

import pytest

from arbiter.results.deviation import FLAG_P, chi2_survival, deviations


def games(host: str, n: int, first_wins: int) -> list[tuple[str, str, str, bool]]:
    """`n` games of a against b on `host`, seats alternating, a winning the first ones."""
    return [
        (host, "a", "b", i < first_wins) if i % 2 == 0 else (host, "b", "a", i >= first_wins)
        for i in range(n)
    ]


def test_the_survival_function_is_scipys() -> None:
    # scipy here, not at the top: it takes a second of every worker's collection
    from scipy import stats

    for df in (1, 2, 3, 5, 10, 31, 100):
        for x in (0.01, 0.5, 1.0, 3.84, 7.5, 20.0, 60.0, 150.0):
            expected = stats.chi2.sf(x, df)
            assert chi2_survival(x, df) == pytest.approx(expected, rel=1e-9), (x, df)


def test_the_survival_function_in_closed_form() -> None:
    # One degree of freedom: erfc(sqrt(x / 2)); two: exp(-x / 2).
    for x in (0.2, 2.0, 9.0, 25.0):
        assert chi2_survival(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)
        assert chi2_survival(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-10)
    assert chi2_survival(0.0, 3) == 1.0


def test_a_hosts_residual_by_hand() -> None:
    # Host x: a wins 8 of 10; the others (y): 2 of 10. Pooled 0.5, so
    # z = (0.8 - 0.2) / sqrt(0.25 * (1/10 + 1/10)) = 0.6 / sqrt(0.05), z^2 = 7.2.
    found = deviations(games("x", 10, 8) + games("y", 10, 2))
    assert found["x"].chi2 == pytest.approx(7.2) and found["x"].df == 1
    assert found["x"].p == pytest.approx(math.erfc(math.sqrt(3.6)))
    # Two hosts are one comparison: each differs from the other as much.
    assert found["y"].chi2 == pytest.approx(7.2)
    # It is the Pearson statistic of the host-by-result table (no continuity correction).
    from scipy import stats

    table = [[8, 2], [2, 8]]
    pearson = stats.chi2_contingency(table, correction=False)[0]
    assert found["x"].chi2 == pytest.approx(pearson)


def test_pairings_add_up_and_uninformative_ones_are_left_out() -> None:
    played = games("x", 10, 8) + games("y", 10, 2)
    # A second pairing: c against d, x 3 of 6, the others 3 of 6: z = 0.
    played += [(h, "c", "d", i < 3) for h in ("x", "y") for i in range(6)]
    # A pairing every host's first engine won: pooled score 1, no information.
    played += [(h, "e", "f", True) for h in ("x", "y") for _ in range(4)]
    # A pairing only x played: nothing to compare with.
    played += [("x", "g", "h", True)] * 5
    found = deviations(played)
    assert found["x"].df == 2 and found["x"].chi2 == pytest.approx(7.2)
    assert found["x"].p == pytest.approx(math.exp(-3.6))
    assert list(found) == ["x", "y"]
    alone = deviations([("x", "a", "b", True), ("x", "a", "b", False)])["x"]
    assert alone.df == 0 and alone.p is None and not alone.flagged


def test_only_a_tiny_p_value_flags_a_host() -> None:
    honest = deviations(games("x", 100, 52) + games("y", 100, 48) + games("z", 100, 50))
    assert not any(d.flagged for d in honest.values())
    odd = deviations(games("x", 100, 52) + games("y", 100, 48) + games("z", 100, 80))
    assert odd["z"].flagged and odd["z"].p is not None and odd["z"].p < FLAG_P
    assert not odd["x"].flagged and not odd["y"].flagged
