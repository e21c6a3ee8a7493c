"""The 400-point logistic Elo scale: what a score means, and a difference as measured.

Kept apart from the rating fit (`arbiter.results.ratings`) and free of numpy, so that
what only needs the scale (the sequential tests, a tournament's definition) loads fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959964
"""Two-sided 95% quantile of the standard normal distribution."""

_LOGIT_PER_ELO = math.log(10.0) / 400.0


def elo_from_score(score: float) -> float:
    """Elo difference for an expected score strictly between 0 and 1."""
    return -400.0 * math.log10(1.0 / score - 1.0)


def expected_score(diff_elo: float) -> float:
    """Expected score of the side that is ``diff_elo`` stronger (inverse of elo_from_score).

    Written with tanh so that huge differences give 0 or 1 instead of overflowing.
    """
    return 0.5 * (1.0 + math.tanh(0.5 * _LOGIT_PER_ELO * diff_elo))


@dataclass(frozen=True)
class Difference:
    """An Elo difference as a fit measures it, or None where the games do not bound it.

    Attributes:
        elo: The estimate; None when its interval is unbounded (no unique maximum of the
            likelihood, see the module docstring), for then any number would be where an
            iteration happened to stop, not a measurement.
        error: 95% half-width of ``elo``; None when ``elo`` is.
        los: Likelihood of superiority, the probability that the difference is positive;
            None when it is undefined (an unbounded difference).
    """

    elo: float | None
    error: float | None
    los: float | None

    @property
    def bounded(self) -> bool:
        return self.elo is not None


__all__ = ["Z95", "Difference", "elo_from_score", "expected_score"]
