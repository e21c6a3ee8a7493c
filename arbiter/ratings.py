"""Match statistics on the 400-point logistic Elo scale (no draws in Atoll)."""

from __future__ import annotations

import math
from dataclasses import dataclass


def elo_from_score(score: float) -> float:
    """Elo difference for an expected score strictly between 0 and 1."""
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True)
class PairStats:
    """Two engines' head-to-head result, from the first engine's point of view."""

    wins: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.losses

    @property
    def score(self) -> float:
        return self.wins / self.games if self.games else 0.5

    def elo(self) -> float:
        """Maximum-likelihood Elo difference; infinite when one side won every game."""
        if not self.games:
            return 0.0
        if self.wins == 0:
            return -math.inf
        if self.losses == 0:
            return math.inf
        return elo_from_score(self.score)

    def elo_error(self, z: float = 1.959964) -> float:
        """Half-width of the 95% interval, from the normal approximation of the score."""
        n = self.games
        p = self.score
        if n == 0 or p in (0.0, 1.0):
            return math.inf
        se = math.sqrt(p * (1 - p) / n)
        lo, hi = max(1e-9, p - z * se), min(1 - 1e-9, p + z * se)
        return (elo_from_score(hi) - elo_from_score(lo)) / 2

    def los(self) -> float:
        """Likelihood of superiority: the chance the first engine is the stronger one."""
        if not self.games:
            return 0.5
        return 0.5 * (1 + math.erf((self.wins - self.losses) / math.sqrt(2 * self.games)))
