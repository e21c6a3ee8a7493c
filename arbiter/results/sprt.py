"""Sequential tests on seat-swapped pairs, and an honest estimate after they stop (pure).

Games come in pairs sharing an opening, one game from each seat, and the two games of a
pair are correlated (the opening favours one side in both). Atoll has no draws, so a pair
scores 0 (lost twice), 1/2 (split) or 1 (won twice) for the engine under test: fishtest's
pentanomial model collapses to these three classes. Testing pairs instead of games uses
that correlation: the variance of a pair's score is what it is, not what independent
games would make it, so the test needs fewer games for the same error rates.

The test is the generalized SPRT (as fishtest and fastchess run it): the log-likelihood
ratio of the two maximum-likelihood distributions of the pair classes constrained to the
mean score of each hypothesis, with the logistic (400-point) Elo model. A sequential test
stops on lucky streaks as well as on strength, so the plain estimate at its stop is
biased away from the middle; `stopped_estimate` gives the median-unbiased one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arbiter.results.elo import Z95, Difference, expected_score
from arbiter.text import toml_key, toml_value

if TYPE_CHECKING:
    from arbiter._numpy import np

PAIR_SCORES = (0.0, 0.5, 1.0)  # lost twice, split, won twice
MODELS = ("pairs", "games")
_EMPTY = 1e-3  # a class never seen counts this much (fishtest's regularisation)


@dataclass(frozen=True)
class Sprt:
    """The SPRT asked for: H0 "elo0 stronger" against H1 "elo1 stronger"."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: str = "pairs"  # or "games": the binomial test on single games

    @property
    def lower(self) -> float:
        """At or below it H0 is accepted."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """At or above it H1 is accepted."""
        return math.log((1.0 - self.beta) / self.alpha)

    def conditions(self) -> dict[str, Any]:
        """The test as a condition of play (a started store refuses another)."""
        return {
            "elo0": self.elo0,
            "elo1": self.elo1,
            "alpha": self.alpha,
            "beta": self.beta,
            "model": self.model,
        }

    def verdict(self, llr: float) -> str:
        return "H1" if llr >= self.upper else "H0" if llr <= self.lower else "inconclusive"


def constrained_mle(counts: Sequence[float], scores: Sequence[float], mean: float) -> np.ndarray:
    """The distribution over `scores` most likely to give `counts` among those of the
    given mean score: p_i = q_i / (1 + lam (x_i - mean)), q the observed frequencies and
    lam the root of sum q_i (x_i - mean) / (1 + lam (x_i - mean)) = 0.

    Every count must be positive (see `regularised`) and the mean strictly inside the
    scores' range, so that the root exists and is unique (the sum falls with lam).
    """
    from arbiter._numpy import np  # imported when a test needs it

    q = np.asarray(counts, dtype=float)
    q = q / q.sum()
    d = np.asarray(scores, dtype=float) - mean
    # 1 + lam d_i > 0 for every i bounds lam on both sides.
    low = -1.0 / d.max() if d.max() > 0 else -1e12
    high = -1.0 / d.min() if d.min() < 0 else 1e12
    lam = 0.0
    for _ in range(100):  # Newton's steps, kept inside the bracket by bisection
        ratio = d / (1.0 + lam * d)
        slope = float(np.dot(q, ratio))
        if slope > 0:
            low = lam
        else:
            high = lam
        if abs(slope) < 1e-15:
            break
        step = lam + slope / float(np.dot(q, ratio * ratio))
        lam = step if low < step < high else 0.5 * (low + high)
    p = q / (1.0 + lam * d)
    result: np.ndarray = p / p.sum()
    return result


def regularised(counts: Sequence[int]) -> list[float]:
    """Counts with every class at least `_EMPTY`: the constrained maximum exists for
    any mean between the scores, even before a class has been seen."""
    return [float(c) if c > 0 else _EMPTY for c in counts]


def pair_llr(pairs: Sequence[int], elo0: float, elo1: float) -> float:
    """The GSPRT's log-likelihood ratio of H1 against H0 on pair classes
    [lost twice, split, won twice] counted for the engine under test."""
    from arbiter._numpy import np  # imported when a test needs it

    if sum(pairs) == 0:
        return 0.0
    n = regularised(pairs)
    p0 = constrained_mle(n, PAIR_SCORES, expected_score(elo0))
    p1 = constrained_mle(n, PAIR_SCORES, expected_score(elo1))
    return float(np.sum(np.asarray(n) * np.log(p1 / p0)))


def game_llr(wins: int, losses: int, elo0: float, elo1: float) -> float:
    """The binomial SPRT's log-likelihood ratio on single games (no draws in Atoll)."""
    p0, p1 = expected_score(elo0), expected_score(elo1)
    return wins * math.log(p1 / p0) + losses * math.log((1.0 - p1) / (1.0 - p0))


def expected_pairs(test: Sprt) -> int:
    """About how many seat-swapped pairs the test needs to decide, whichever hypothesis
    holds: Wald's approximation of the average sample number, in games, halved.

    Under H1 (each game scored s1 = expected_score(elo1)) the LLR of a game rises on
    average by the Kullback-Leibler divergence KL1 = s1 ln(s1/s0) + (1-s1) ln((1-s1)/(1-s0))
    (s0 = expected_score(elo0)); the test stops at the upper bound B with probability
    1 - beta and at the lower bound A with beta, so it takes about
    ((1 - beta) B + beta A) / KL1 games. Under H0 the LLR falls on average by KL0, the
    divergence the other way, and the test stops at A with probability 1 - alpha: about
    ((1 - alpha) A + alpha B) / -KL0 games. The smaller of the two, in pairs, is what a
    pairing can be expected to need at best: `rounds` below it leaves most pairings
    undecided at the cap (elo0 = 0, elo1 = 150 at alpha = beta = 0.05: 15 pairs). The
    games are taken as independent; the pair model gains from pairs whose games are
    correlated (an opening favouring one side), so it may need fewer, and single runs
    scatter widely around the average.
    """
    s0, s1 = expected_score(test.elo0), expected_score(test.elo1)
    if s0 == s1:
        return 0
    kl1 = s1 * math.log(s1 / s0) + (1 - s1) * math.log((1 - s1) / (1 - s0))
    kl0 = s0 * math.log(s0 / s1) + (1 - s0) * math.log((1 - s0) / (1 - s1))
    under_h1 = ((1 - test.beta) * test.upper + test.beta * test.lower) / kl1
    under_h0 = -((1 - test.alpha) * test.lower + test.alpha * test.upper) / kl0
    return max(1, math.ceil(min(under_h1, under_h0) / 2))


PAIRED_MINIMUM = 10  # whole pairs before their own variance makes the interval


def paired(fitted: Difference, pairs: Sequence[int]) -> Difference:
    """A two-engine estimate with its interval from the variance of seat-swapped pairs.

    The fit treats games as independent; the two games of a pair are not (they share an
    opening, and an opening that favours a side favours it in both). The pairs' own
    variance, against the variance independent games at the same score would give,
    scales the interval (and the LOS with it): narrower when openings even out, wider
    when they decide. With fewer than `PAIRED_MINIMUM` whole pairs, or none split and
    none one-sided, the variance says too little, and the fit's interval stands.
    """
    from arbiter._numpy import np  # imported when a test needs it

    n = sum(pairs)
    if fitted.elo is None or fitted.error is None or n < PAIRED_MINIMUM:
        return fitted
    x = np.asarray(PAIR_SCORES)
    counts = np.asarray(pairs, dtype=float)
    mean = float(np.dot(counts, x)) / n
    independent = mean * (1.0 - mean) / 2.0  # two independent games' mean score
    var = float(np.dot(counts, (x - mean) ** 2)) / (n - 1)
    if independent <= 0.0 or var <= 0.0:
        return fitted
    error = fitted.error * math.sqrt(var / independent)
    sd = error / Z95
    return Difference(fitted.elo, error, 0.5 * (1.0 + math.erf(fitted.elo / (sd * math.sqrt(2)))))


@dataclass(frozen=True)
class Estimate:
    """An Elo estimate with its interval (bounds may be infinite)."""

    elo: float
    lower: float
    upper: float


def stopped_estimate(
    pairs: Sequence[int], test: Sprt, result: str, level: float = 0.95
) -> Estimate | None:
    """The median-unbiased Elo estimate, and its interval, of a pair test that stopped
    with `result` ("H0", "H1", or "inconclusive" at its cap) after `pairs`.

    A sequential test stops when its statistic crosses a bound, and a lucky streak takes
    it there sooner: the mean score at the stop overstates the difference (understates
    it for H0). As fishtest does, outcomes are ordered by how far they went (a stop at
    the upper bound after fewer pairs is a stronger result, a stop at the lower bound
    after fewer pairs a weaker one; then the final score), and the estimate is the
    strength under which the observed outcome is the median one (mid-p: ties count
    half); the interval's ends are those under which it is at the (1 -/+ level) / 2
    quantiles.

    The probabilities are computed exactly for the random walk of the pairs' total
    score, with the test's bounds in their linear (Brownian) approximation: the LLR of a
    pair scoring x is about (s1 - s0) (x - (s0 + s1) / 2) / var, var the pairs' observed
    score variance; the slope is taken from the test's own LLR at the stop where the two
    differ (nearly every pair in one class). The pair classes keep the observed shape,
    tilted to each candidate mean as the test's own maximum-likelihood distributions are.
    None when no pair was played; infinite ends where the data bound nothing.
    """
    from arbiter._numpy import np  # imported when a test needs it

    total = sum(pairs)
    if total == 0:
        return None
    n = regularised(pairs)
    q = np.asarray(n) / sum(n)
    x = np.asarray(PAIR_SCORES)
    var = max(_MIN_VAR, float(np.sum(q * (x - np.sum(q * x)) ** 2)))
    s0, s1 = expected_score(test.elo0), expected_score(test.elo1)
    mid = (s0 + s1) / 2.0
    slope = (s1 - s0) / var
    # Where the test's own LLR is far from its linear form (nearly every pair in one
    # class), the walk takes the slope that puts the observed outcome where the test did.
    llr = pair_llr(pairs, test.elo0, test.elo1)
    off = (pairs[1] / 2.0 + pairs[2]) - total * mid
    if abs(off) > 0.5 and llr / off > 0:
        slope = llr / off
    walk = _Walk(n, total, slope, mid, test, result, pairs[1] + 2 * pairs[2])
    tail = (1.0 - level) / 2.0
    targets = ((0.5, 2), (tail, 0), (1.0 - tail, 1))  # (probability, which of the three)

    def values(pair: tuple[np.ndarray, np.ndarray], which: int) -> np.ndarray:
        return (pair[0], pair[1], 0.5 * (pair[0] + pair[1]))[which]

    # One pass over a coarse grid serves the three ends; each is then found on finer
    # grids between the two candidates that bracket it, the three ends' grids walked in
    # one pass each time (the walk's rows are independent: the same numbers, a third of
    # the passes).
    coarse = np.linspace(-_ELO_RANGE, _ELO_RANGE, 41)
    pair = walk.stronger(coarse)
    ends = [0.0, 0.0, 0.0]
    brackets: dict[int, tuple[float, float]] = {}
    for end, (target, which) in enumerate(targets):
        above = np.flatnonzero(values(pair, which) >= target)
        if len(above) == 0:
            ends[end] = math.inf
        elif above[0] == 0:
            ends[end] = -math.inf
        else:
            first = int(above[0])
            brackets[end] = (float(coarse[first - 1]), float(coarse[first]))
    fine = 17
    for _ in range(2):
        if not brackets:
            break
        grids = {end: np.linspace(low, high, fine) for end, (low, high) in brackets.items()}
        both = walk.stronger(np.concatenate(list(grids.values())))
        for row, (end, elos) in enumerate(grids.items()):
            part = slice(row * fine, (row + 1) * fine)
            target, which = targets[end]
            reached = values((both[0][part], both[1][part]), which) >= target
            first = max(1, int(np.flatnonzero(reached)[0]) if reached.any() else fine - 1)
            brackets[end] = (float(elos[first - 1]), float(elos[first]))
    for end, (low, high) in brackets.items():
        ends[end] = 0.5 * (low + high)
    return Estimate(ends[0], ends[1], ends[2])


_MIN_VAR = 0.02  # of a pair's score (independent even games give 0.125)
_ELO_RANGE = 1200.0  # beyond it an end is shown as unbounded


class _Walk:
    """The pairs' total score, in half points, as a random walk stopped by the test."""

    def __init__(
        self,
        counts: Sequence[float],
        total: int,
        slope: float,
        mid: float,
        test: Sprt,
        result: str,
        observed: int,
    ) -> None:
        self.counts, self.total, self.slope, self.mid = counts, total, slope, mid
        self.test, self.result, self.observed = test, result, observed

    def stronger(self, elos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each Elo difference: P(an outcome at least as strong as the observed one),
        and P(a stronger one)."""
        from arbiter._numpy import np  # imported when a test needs it

        p = np.array([constrained_mle(self.counts, PAIR_SCORES, expected_score(e)) for e in elos])
        t_ = self.test
        alive = np.ones((len(elos), 1))  # mass on half points start .. start + width - 1
        start = 0
        before = np.zeros(len(elos))  # stopped at the upper bound before the end
        for t in range(1, self.total + 1):
            width = alive.shape[1] + 2
            step = np.zeros((len(elos), width))
            step[:, :-2] += p[:, [0]] * alive
            step[:, 1:-1] += p[:, [1]] * alive
            step[:, 2:] += p[:, [2]] * alive
            k = np.arange(start, start + width)
            value = self.slope * (k / 2.0 - t * self.mid)
            up, down = value >= t_.upper, value <= t_.lower
            if t == self.total:
                break
            before += step[:, up].sum(axis=1)  # an earlier H1 stop beats any outcome
            keep = np.flatnonzero(~(up | down))
            if len(keep) == 0:  # every path stopped before the end: only earlier H1 stops
                return np.minimum(before, 1.0), np.minimum(before, 1.0)  # are stronger
            alive = step[:, keep[0] : keep[-1] + 1]
            start += int(keep[0])
        if self.result == "H0":  # not stopped low by now, or stopped low with more points
            base = before + step[:, ~down].sum(axis=1)
            at_least = base + step[:, down & (k >= self.observed)].sum(axis=1)
            more = base + step[:, down & (k > self.observed)].sum(axis=1)
        else:  # H1 now, or still running (at a cap): more points now
            at_least = before + step[:, k >= self.observed].sum(axis=1)
            more = before + step[:, k > self.observed].sum(axis=1)
        return np.minimum(at_least, 1.0), np.minimum(more, 1.0)


@dataclass(frozen=True)
class Verdict:
    """Where a test stands: its statistic, its bounds, its result, and what it counted.

    `pairs` are [lost twice, split, won twice] for the engine under test (whole pairs
    only), `games` the rated games the test counted (twice the pairs under the pair
    model), whatever the model.
    """

    llr: float
    lower: float
    upper: float
    result: str
    games: int
    model: str
    pairs: tuple[int, int, int]

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "llr": round(self.llr, 4),
            "lower": round(self.lower, 4),
            "upper": round(self.upper, 4),
            "result": self.result,
            "games": self.games,
            "pairs": list(self.pairs),
        }

    def state(self, rounds: int | None = None) -> str:
        """The test's state in words, the same in every view (status, report, summaries).

        Decided: H1 or H0 accepted. Undecided, a tournament pairing's test (`rounds`: the
        pairs it is scheduled) is "going on" until the pairing has played them all, and
        then "inconclusive": the rounds cap came first. Without `rounds` (a finished
        match) an undecided test is inconclusive."""
        if self.result in ("H1", "H0"):
            return f"{self.result} accepted"
        if rounds is None:
            return "inconclusive"
        if sum(self.pairs) < rounds:
            return "going on"
        return "inconclusive (the rounds cap came first)"

    def line(self, rounds: int | None = None) -> str:
        """The test in one line, as the summaries print it (`rounds` as for `state`)."""
        lost, split, won = self.pairs
        counted = (
            f"pairs {won} won twice, {split} split, {lost} lost twice"
            if self.model == "pairs"
            else f"{self.games} games"
        )
        word = self.state(rounds)
        return (
            f"SPRT ({self.model}): LLR {self.llr:.2f} [{self.lower:.2f}, {self.upper:.2f}],"
            f" {word}; {counted}"
        )


def judge(test: Sprt, pairs: Sequence[int], wins: int, losses: int) -> Verdict:
    """The test on what was counted: whole pairs under the pair model, games otherwise."""
    if test.model == "pairs":
        llr, games = pair_llr(pairs, test.elo0, test.elo1), 2 * sum(pairs)
    else:
        llr, games = game_llr(wins, losses, test.elo0, test.elo1), wins + losses
    lost, split, won = (int(c) for c in pairs)
    return Verdict(
        llr, test.lower, test.upper, test.verdict(llr), games, test.model, (lost, split, won)
    )


def parse_test(text: str) -> Sprt:
    """``"elo0=0,elo1=10[,alpha=0.05,beta=0.05,model=pairs]"`` as a test.

    Raises:
        ValueError: Naming the problem: an item without ``=``, an unknown or repeated key,
            a value that is not a finite number, a missing elo0 or elo1, ``elo1 <= elo0``,
            alpha or beta outside (0, 0.5), or a model other than pairs and games.
    """
    values: dict[str, object] = {}
    for item in text.split(","):
        key, sep, raw = item.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise ValueError(f"SPRT item {item.strip()!r} is not key=value")
        if key in values:
            raise ValueError(f"SPRT key {key!r} is given twice")
        raw = raw.strip()
        if key == "model":
            values[key] = raw
            continue
        try:
            values[key] = float(raw)
        except ValueError:
            raise ValueError(f"SPRT {key} must be a number, not {raw[:40]!r}") from None
    return test_from(values)


def test_from(values: Mapping[str, object]) -> Sprt:
    """A test from its keys: a tournament file's inline table, or parsed text. Numbers
    must be numbers (a TOML string is refused as every other key's would be)."""
    allowed = ("elo0", "elo1", "alpha", "beta", "model")
    numbers: dict[str, float] = {}
    model = "pairs"
    for key, raw in values.items():
        if key not in allowed:
            raise ValueError(
                f"unknown SPRT key {toml_key(str(key))}; expected {', '.join(allowed)}"
            )
        if key == "model":
            if raw not in MODELS:
                raise ValueError(f"SPRT model must be pairs or games, not {toml_value(raw)}")
            model = str(raw)
            continue
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ValueError(f"SPRT {key} must be a number, not {toml_value(raw)}")
        if not math.isfinite(raw):
            raise ValueError(f"SPRT {key} must be finite, not {toml_value(raw)}")
        numbers[key] = float(raw)
    missing = [k for k in ("elo0", "elo1") if k not in numbers]
    if missing:
        raise ValueError(f"SPRT needs {' and '.join(missing)}")
    test = Sprt(
        numbers["elo0"],
        numbers["elo1"],
        numbers.get("alpha", 0.05),
        numbers.get("beta", 0.05),
        model,
    )
    if test.elo1 <= test.elo0:
        raise ValueError(f"SPRT needs elo1 > elo0, got elo0={test.elo0:g}, elo1={test.elo1:g}")
    if not all(abs(e) <= 2000 for e in (test.elo0, test.elo1)):
        raise ValueError("SPRT elo0 and elo1 must be within ±2000")
    for name, value in (("alpha", test.alpha), ("beta", test.beta)):
        if not 0.0 < value < 0.5:
            raise ValueError(f"SPRT {name} must be between 0 and 0.5 (exclusive), not {value:g}")
    return test
