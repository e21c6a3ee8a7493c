"""Whether one host's results differ from the others': a chi-square residual per host.

A host that is slow, overloaded or broken loses games the others would not (engines
flagged on time, a bot that misbehaves there only), which ratings mix with the honest
games. As fishtest flags a bad worker, each host's results are compared with what the
other hosts' results predict: for every engine pairing both the host and the others
played, the host's score of the pairing's first engine (in name order) against the
others', as the standardised residual of a two-sample test of proportions,

    z = (w_h / n_h - w_o / n_o) / sqrt(p (1 - p) (1 / n_h + 1 / n_o)),

where `p` is the pooled score (w_h + w_o) / (n_h + n_o). The host's statistic is the sum
of z² over its pairings, chi-square distributed with one degree of freedom per pairing
under the hypothesis that the host plays as the others do. A pairing whose pooled score
is 0 or 1, or that only this host (or only the others) played, says nothing and is left
out. Games are counted, not seat-swapped pairs: every host plays both seats of a pairing
alike, so the first mover's advantage is the same on each.

Pure: it counts what it is given and imports nothing but `math`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

# A host whose results are this unlikely under the others' is flagged: with a handful of
# hosts, one in a thousand is rare enough that a flag is worth a look.
FLAG_P = 0.001


@dataclass(frozen=True)
class Deviation:
    """How far one host's results are from the other hosts'."""

    chi2: float  # the sum of the squared standardised residuals
    df: int  # one per pairing compared
    p: float | None  # the chance of a chi2 this large if the host plays as the others; None: df 0

    @property
    def flagged(self) -> bool:
        return self.p is not None and self.p < FLAG_P

    def line(self) -> str:
        if self.p is None:
            return "no pairing to compare with the other hosts"
        said = (
            f"chi-square {self.chi2:.2f} on {self.df} degree{'s' if self.df != 1 else ''}"
            f" of freedom against the other hosts, p = {self.p:.3g}"
        )
        if self.flagged:
            said += f": its results differ from the others' (p < {FLAG_P:g}), check this host"
        return said


def deviations(games: Iterable[tuple[str, str, str, bool]]) -> dict[str, Deviation]:
    """Each host's deviation from the others, from (host, seat1, seat2, seat1 won) of
    every rated game; hosts in the order they first appear."""
    games_by: Counter[tuple[str, tuple[str, str]]] = Counter()
    wins_by: Counter[tuple[str, tuple[str, str]]] = Counter()
    hosts: dict[str, None] = {}
    for host, seat1, seat2, seat1_won in games:
        pairing = (seat1, seat2) if seat1 <= seat2 else (seat2, seat1)
        first_won = seat1_won if pairing[0] == seat1 else not seat1_won
        hosts.setdefault(host, None)
        games_by[host, pairing] += 1
        wins_by[host, pairing] += first_won
    all_games: Counter[tuple[str, str]] = Counter()
    all_wins: Counter[tuple[str, str]] = Counter()
    for (_, pairing), n in games_by.items():
        all_games[pairing] += n
        all_wins[pairing] += wins_by[_, pairing]
    out = {}
    for host in hosts:
        chi2, df = 0.0, 0
        for pairing, total in all_games.items():
            n_h = games_by.get((host, pairing), 0)
            n_o = total - n_h
            w_h = wins_by.get((host, pairing), 0)
            w_o = all_wins[pairing] - w_h
            pooled = all_wins[pairing] / total
            if not n_h or not n_o or pooled in (0.0, 1.0):
                continue
            z = (w_h / n_h - w_o / n_o) / math.sqrt(pooled * (1 - pooled) * (1 / n_h + 1 / n_o))
            chi2 += z * z
            df += 1
        out[host] = Deviation(chi2, df, chi2_survival(chi2, df) if df else None)
    return out


def chi2_survival(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with `df` degrees of freedom: the regularised upper
    incomplete gamma function Q(df/2, x/2), by its series below a + 1 and its continued
    fraction above (as Numerical Recipes computes it), to about 1e-12."""
    if df <= 0:
        raise ValueError("degrees of freedom must be at least 1")
    if x <= 0:
        return 1.0
    a, y = df / 2, x / 2
    log_front = a * math.log(y) - y - math.lgamma(a)
    if y < a + 1:  # the series of the lower function P, then Q = 1 - P
        term = total = 1 / a
        k = a
        for _ in range(10_000):
            k += 1
            term *= y / k
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    # Lentz's continued fraction for Q.
    tiny = 1e-300
    b = y + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)
