"""Match statistics on the logistic Elo scale."""

from __future__ import annotations

import math

import pytest

from arbiter.ratings import PairStats, elo_from_score


def test_elo_of_known_scores() -> None:
    assert elo_from_score(0.5) == pytest.approx(0.0)
    assert elo_from_score(0.75) == pytest.approx(190.85, abs=0.01)  # 400 * log10(3)
    assert elo_from_score(0.25) == pytest.approx(-190.85, abs=0.01)


def test_pair_stats() -> None:
    s = PairStats(wins=75, losses=25)
    assert s.games == 100 and s.score == 0.75
    assert s.elo() == pytest.approx(190.85, abs=0.01)
    # The 95% interval shrinks with more games at the same score.
    assert PairStats(750, 250).elo_error() < s.elo_error() < PairStats(15, 5).elo_error()
    assert 0 < s.elo_error() < 200
    assert s.los() > 0.999 and PairStats(25, 75).los() < 0.001
    assert PairStats(10, 10).los() == pytest.approx(0.5)


def test_degenerate_results() -> None:
    assert PairStats(0, 0).elo() == 0.0 and PairStats(0, 0).los() == 0.5
    assert PairStats(4, 0).elo() == math.inf and PairStats(0, 4).elo() == -math.inf
    assert math.isinf(PairStats(4, 0).elo_error())
