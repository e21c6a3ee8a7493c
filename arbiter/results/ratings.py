"""Match statistics and pool ratings on the 400-point logistic Elo scale (no draws in Atoll).

Model. A game with engine ``i`` in seat 1 and engine ``j`` in seat 2 is won by seat 1 with
probability ``1 / (1 + 10**(-(r_i - r_j + s) / 400))``, where ``s`` is the seat-1 (first
mover) advantage in Elo; it may come out negative. :func:`fit` finds the ratings and ``s``
that maximise the likelihood of all games jointly (Bradley-Terry), from per-pair, per-seat
win and loss counts, so its cost depends on the number of engines, not of games.

Prior. Each engine gets ``prior`` virtual games (``DEFAULT_PRIOR`` = 2), half won and half
lost, against a virtual opponent rated at the pool mean, with no seat advantage; the seat
term gets ``prior`` virtual games between equal engines, half won by each seat. This is a
shrinkage toward the mean (and toward no seat advantage) worth ``prior`` games: it keeps an
engine that won or lost every game, and a seat that won every game, at a finite rating with
a finite error, and its pull fades as real games accumulate (two virtual games move an
engine with a few hundred real games by well under one Elo). ``prior=0`` is plain maximum
likelihood; when the likelihood then has no unique maximum (an engine that won or lost all
its games, a seat that won all games, a pool in several disconnected parts, or a schedule
that cannot separate the seat advantage from the ratings), the fit stops with
``converged=False``: the ratings are where the iteration stopped and every error bar is
infinite.

Scale. Ratings are centred so that the mean rating of the pool is 0, or set by anchors:
engines whose ratings are given and held fixed. Error bars are 95% half-widths from the
curvature of the penalised log-likelihood at its maximum; with the centring they are errors
relative to the pool mean, with anchors relative to the anchors (whose own error is 0). An
engine without games is rated 0 (the pool mean, all it has is the prior) with an infinite
error.

Anchors. The ratings of the anchored engines are not parameters: :func:`fit` maximises the
same penalised likelihood over the other ratings and the seat term, with the anchors held at
their values, and the covariance is that of the free ratings given the anchors. The
likelihood and the prior only see differences of ratings, so with one anchor this is the
centred fit shifted until the anchor reads its value (which is how it is computed); with two
or more, the anchors also fix the spread between them, and the games between the engines
that are not anchored are fitted on that scale. The prior stays what it is without anchors:
virtual games against the pool mean, the mean of all the engines with games, anchors
included. It is a shrinkage of the differences between engines, not a statement about where
the scale lies, so the anchors alone place the scale, and one anchor gives exactly the
unanchored differences; an engine pulled towards the pool mean is pulled towards the anchors
only as far as they are part of the pool. An anchor without games keeps its value and error
0 and takes no part in the fit.

A component of the pool (below) that holds no anchor with games is not on the anchors'
scale: no game relates it to them. It is listed in :attr:`RatingFit.floating`; with a prior
it is placed against the pool mean by the prior alone (finite ratings, but not comparable
with the anchored ones), and under plain maximum likelihood (``prior=0``) its level is
undetermined, so the fit reports ``converged=False``. Every component that holds an anchor
is rated on the anchors' scale, even when the pool is not connected.

Connectivity. Engines are linked when they played at least one game with each other. When
the pool falls into several components the fit still runs (the prior keeps the offsets
between components finite) and :attr:`RatingFit.connected` is False: ratings in different
components are not comparable, since no game measured the difference between them, unless
each component holds an anchor (then each is placed by its anchors, as far as their values
are right).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arbiter._numpy import np, npt
from arbiter.results.elo import _LOGIT_PER_ELO, Z95, Difference

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

DEFAULT_PRIOR = 2.0
"""Virtual games per engine, scored 50% against the pool mean (see the module docstring)."""

_TOLERANCE_ELO = 1e-6
_MAX_ITERATIONS = 100
_MAX_STEP = 400.0 * _LOGIT_PER_ELO
# Below this step size the objective is quadratic to rounding, so the line search is skipped.
_SMALL_STEP = 1e-2 * _LOGIT_PER_ELO
# Beyond this logit (about 7000 Elo) a game's outcome carries no measurable information: the
# maximum is at infinity.
_MAX_LOGIT = 40.0


@dataclass(frozen=True)
class PairStats:
    """Two engines' head-to-head result, from the first engine's point of view.

    Counts only: the Elo difference they measure is :func:`estimate_difference`'s, the
    same fit that rates a pool, so that a match and the leaderboard never disagree.
    """

    wins: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.losses

    @property
    def score(self) -> float:
        return self.wins / self.games if self.games else 0.5


@dataclass(frozen=True, eq=False)
class RatingFit:
    """Ratings of a pool of engines, fitted jointly by :func:`fit`.

    Arrays are indexed like ``names`` and read-only. Unknown quantities (an engine without
    games, a fit that did not converge) have an infinite variance on the diagonal of
    ``covariance`` and zero covariance elsewhere, so that every difference involving them
    has an infinite error.

    Attributes:
        names: Engine names, in the order given to :func:`fit`.
        elo: Ratings in Elo, centred on the pool mean or on the anchors' scale.
        error: 95% half-widths of ``elo``, relative to the pool mean or to the anchors
            (0 for an anchored engine).
        covariance: Covariance of ``elo`` in Elo squared, on the same reference: given
            the anchors, whose rows and columns are 0.
        seat_advantage: Seat-1 advantage in Elo (0 when the seat term is off).
        seat_error: 95% half-width of ``seat_advantage`` (0 when the seat term is off,
            infinite when there are no games).
        games: Real games per engine.
        wins: Real wins per engine.
        losses: Real losses per engine.
        prior: Virtual games per engine used in the fit.
        connected: Whether every engine is linked to every other by a chain of games.
        components: The engines of each connected component, in input order; the
            components are ordered by their first engine.
        converged: Whether the penalised likelihood has a unique maximum and the iteration
            reached it. When False the ratings are where the iteration stopped and every
            error is infinite.
        iterations: Newton iterations used.
        anchors: The anchored engines and their Elo, in the order given; empty when the
            ratings are centred on the pool mean.
        floating: With anchors, the components (with games) that hold no anchor with
            games, whose ratings are not on the anchors' scale (module docstring); empty
            without anchors.
        unbounded: When not ``converged``, why the games do not bound the ratings, in
            words a reader can check against the results (an engine that won every game,
            a group that beat every engine outside it, a seat that won every game);
            empty when converged.
    """

    names: tuple[str, ...]
    elo: FloatArray
    error: FloatArray
    covariance: FloatArray
    seat_advantage: float
    seat_error: float
    games: IntArray
    wins: IntArray
    losses: IntArray
    prior: float
    connected: bool
    components: list[list[str]]
    converged: bool
    iterations: int
    anchors: tuple[tuple[str, float], ...] = ()
    floating: tuple[tuple[str, ...], ...] = ()
    unbounded: tuple[str, ...] = ()

    @property
    def anchor(self) -> tuple[str, float] | None:
        """The anchor when there is exactly one (None when centred or with several)."""
        return self.anchors[0] if len(self.anchors) == 1 else None

    def anchored(self, i: int) -> bool:
        """Whether engine ``i``'s rating was given (an anchor) rather than fitted."""
        return any(name == self.names[i] for name, _ in self.anchors)

    def order(self) -> list[int]:
        """Indices of the engines, best first; equal ratings are ordered by name."""
        return sorted(range(len(self.names)), key=lambda i: (-float(self.elo[i]), self.names[i]))

    def bounded(self, i: int) -> bool:
        """Whether engine ``i``'s rating is an estimate: its interval is finite (an anchor,
        whose rating is given, always is)."""
        return math.isfinite(float(self.error[i]))

    def difference(self, i: int, j: int) -> Difference:
        """``elo[i] - elo[j]`` with its 95% half-width and LOS, None where unbounded."""
        d, half = self.diff(i, j)
        los = self.los(i, j)
        if not math.isfinite(half) or los is None:
            return Difference(None, None, None)
        return Difference(d, half, los)

    def diff(self, i: int, j: int) -> tuple[float, float]:
        """Elo difference ``elo[i] - elo[j]`` and its 95% half-width.

        The half-width comes from the joint covariance, so it is narrower than the two
        engines' error bars combined when they played each other often.
        """
        return float(self.elo[i] - self.elo[j]), Z95 * self._diff_sd(i, j)

    def los(self, i: int, j: int) -> float | None:
        """Likelihood of superiority: the probability that engine ``i`` is stronger than ``j``;
        None when their difference is unbounded (an infinite error makes it undefined, not
        an even chance). Between two anchors the difference is given, with no error: 0 or 1.
        """
        d = float(self.elo[i] - self.elo[j])
        sd = self._diff_sd(i, j)
        if not math.isfinite(sd):
            return None
        if sd == 0.0:
            return 0.5 if d == 0.0 else float(d > 0.0)
        return 0.5 * (1.0 + math.erf(d / (sd * math.sqrt(2.0))))

    def score(self, i: int) -> float:
        """Fraction of its real games engine ``i`` won; 0.5 when it has none."""
        games = int(self.games[i])
        return int(self.wins[i]) / games if games else 0.5

    def _diff_sd(self, i: int, j: int) -> float:
        if i == j:
            return 0.0
        c = self.covariance
        var = float(c[i, i] + c[j, j] - 2.0 * c[i, j])
        return math.sqrt(max(var, 0.0))


def fit(
    names: Sequence[str],
    seat1_wins: npt.ArrayLike,
    seat1_losses: npt.ArrayLike,
    *,
    prior: float = DEFAULT_PRIOR,
    anchor: tuple[str, float] | None = None,
    anchors: Mapping[str, float] | None = None,
    seat_term: bool = True,
) -> RatingFit:
    """Rate a pool jointly, so that every game informs every rating through its opponents.

    Check ``converged`` (False: no unique maximum, errors infinite), ``connected`` (False:
    ratings in different components are not comparable) and, with anchors, ``floating``
    (components not on the anchors' scale) before printing.

    Args:
        names: Engine names, distinct.
        seat1_wins: ``(n, n)`` counts; ``[i, j]`` is the number of games with ``i`` in seat 1
            and ``j`` in seat 2 that ``i`` won.
        seat1_losses: ``(n, n)`` counts; ``[i, j]`` is the number of those games ``j`` won.
        prior: Virtual games per engine scored 50% against the pool mean (module docstring).
        anchor: ``(name, elo)``: one anchor, the same as ``anchors={name: elo}``.
        anchors: Engine name to Elo: ratings held fixed at these values, the others fitted
            against them (module docstring), instead of centring on the pool mean.
        seat_term: Fit the seat-1 advantage; False fixes it at 0, for schedules that are not
            seat-balanced.

    Raises:
        ValueError: Counts that are not non-negative integers of shape ``(n, n)`` with a zero
            diagonal, repeated names, a negative prior, both ``anchor`` and ``anchors``, an
            unknown anchor name (the message lists the known names) or a non-finite anchor
            Elo.
    """
    names_t = tuple(names)
    n = len(names_t)
    if len(set(names_t)) != n:
        raise ValueError("engine names must be distinct")
    wins = _counts(seat1_wins, n, "seat1_wins")
    losses = _counts(seat1_losses, n, "seat1_losses")
    if not (math.isfinite(prior) and prior >= 0.0):
        raise ValueError(f"prior must be a finite number of games >= 0, not {prior!r}")
    if anchor is not None and anchors is not None:
        raise ValueError("give anchor or anchors, not both")
    pinned = _pinned(names_t, dict([anchor]) if anchor is not None else anchors or {})

    played = wins + losses
    games = played.sum(axis=1) + played.sum(axis=0)
    engine_wins = wins.sum(axis=1) + losses.sum(axis=0)
    engine_losses = losses.sum(axis=1) + wins.sum(axis=0)
    groups = _components(played)
    components = [[names_t[i] for i in group] for group in groups]
    active = np.flatnonzero(games > 0)
    seat = seat_term and active.size > 0
    position = np.cumsum(games > 0) - 1  # an engine with games: its index among them
    # The anchors that take part in the fit: those with games (the others only keep their
    # value), in the parameters' order, with their ratings in logits.
    fixed = {int(position[i]): value * _LOGIT_PER_ELO for i, value in pinned if games[i] > 0}
    held = {i for i, _ in pinned if games[i] > 0}
    floating = [g for g in groups if games[g[0]] > 0 and held.isdisjoint(g)] if pinned else []

    model = _Model(
        wins[np.ix_(active, active)].astype(np.float64),
        losses[np.ix_(active, active)].astype(np.float64),
        prior,
        seat,
    )
    # Each gauge direction moves the ratings of one part of the pool together without
    # changing the likelihood: the whole pool when the prior ties it together, each
    # component on its own under plain maximum likelihood. Two or more anchors are held
    # fixed instead, which leaves only the components without an anchor free to move, and
    # those only without a prior (the prior ties them to the pool mean, hence to the
    # anchors). One anchor is a shift of the centred fit (module docstring).
    constrained = len(pinned) > 1 and bool(fixed)
    if constrained:
        gauge_groups = [] if prior > 0.0 else [position[group] for group in floating]
    elif prior > 0.0:
        gauge_groups = [np.arange(active.size)] if active.size else []
    else:
        gauge_groups = [position[group] for group in groups if games[group[0]] > 0]
    params, converged, iterations, cov = _maximise(
        model, gauge_groups, fixed if constrained else {}
    )
    if prior == 0.0 and len(gauge_groups) > (0 if constrained else 1):
        converged = False

    elo = np.zeros(n)
    covariance = np.zeros((n, n))
    elo[active] = params[: active.size] / _LOGIT_PER_ELO
    known = np.zeros(n, dtype=bool)
    seat_var = math.inf if seat_term else 0.0
    if converged and cov is not None:
        k = active.size
        covariance[np.ix_(active, active)] = cov[:k, :k] / _LOGIT_PER_ELO**2
        known[active] = True
        if seat:
            seat_var = float(cov[k, k]) / _LOGIT_PER_ELO**2
    else:
        converged = False
    seat_advantage = float(params[-1]) / _LOGIT_PER_ELO if seat else 0.0

    if len(pinned) == 1:
        [(anchor_index, value)] = pinned
        elo += value - elo[anchor_index]
        covariance, known = _relative_to(covariance, known, anchor_index)
    covariance[~known, :] = 0.0
    covariance[:, ~known] = 0.0
    covariance[~known, ~known] = math.inf
    for i, value in pinned:
        elo[i] = value
        covariance[i, :] = covariance[:, i] = 0.0
    error = Z95 * np.sqrt(np.maximum(np.diag(covariance), 0.0))

    for array in (elo, error, covariance, games, engine_wins, engine_losses):
        array.setflags(write=False)
    why = (
        ()
        if converged
        else _why_unbounded(
            names_t, wins, losses, groups, prior, seat, floating if constrained else None
        )
    )
    return RatingFit(
        names=names_t,
        elo=elo,
        error=error,
        covariance=covariance,
        seat_advantage=seat_advantage,
        seat_error=Z95 * math.sqrt(seat_var),
        games=games,
        wins=engine_wins,
        losses=engine_losses,
        prior=float(prior),
        connected=len(components) <= 1,
        components=components,
        converged=converged,
        iterations=iterations,
        anchors=tuple((names_t[i], value) for i, value in pinned),
        floating=tuple(tuple(names_t[i] for i in g) for g in floating),
        unbounded=why,
    )


def _pinned(names: tuple[str, ...], anchors: Mapping[str, float]) -> list[tuple[int, float]]:
    """The anchors as (engine index, Elo), in the order given; ValueError for a name that is
    not an engine's or a value that is not a finite number."""
    out = []
    for name, value in anchors.items():
        if name not in names:
            listed = ", ".join(names) if names else "(none)"
            raise ValueError(f"unknown anchor engine {name!r}; known engines: {listed}")
        try:
            elo = float(value)
        except (TypeError, ValueError):
            elo = math.nan
        if not math.isfinite(elo):
            raise ValueError(f"anchor Elo must be finite, not {value!r} (engine {name!r})")
        out.append((names.index(name), elo))
    return out


def estimate_difference(
    a_seat1: tuple[int, int], b_seat1: tuple[int, int], *, prior: float = DEFAULT_PRIOR
) -> Difference:
    """Engine A's Elo difference over B from their games alone, as :func:`fit` rates a
    pool of the two: the same model, seat term, prior and interval, so that a match's
    summary and a leaderboard of its games print the same numbers.

    Args:
        a_seat1: A's (wins, losses) in the games with A in seat 1.
        b_seat1: B's (wins, losses) in the games with B in seat 1.
        prior: Virtual games per engine (module docstring).
    """
    wins = [[0, a_seat1[0]], [b_seat1[0], 0]]
    losses = [[0, a_seat1[1]], [b_seat1[1], 0]]
    return fit(("A", "B"), wins, losses, prior=prior).difference(0, 1)


_REASONS = 6  # reasons listed at most; the rest are counted


def _why_unbounded(
    names: tuple[str, ...],
    wins: IntArray,
    losses: IntArray,
    groups: list[list[int]],
    prior: float,
    seat: bool,
    floating: list[list[int]] | None = None,
) -> tuple[str, ...]:
    """Why the likelihood has no unique maximum, from the results themselves.

    Under plain maximum likelihood a rating runs off to infinity when its engine, or a
    group of engines, won (or lost) every game it played against the rest of its part of
    the pool: the beat graph (an edge from every engine to each one it beat at least
    once) is then not strongly connected within that part. With anchors held fixed
    (``floating`` lists the components that hold none), a component without an anchor has
    no level of its own, where without anchors only several components lack one.
    """
    played = wins + losses
    beat = (wins + losses.T) > 0  # beat[i, j]: i won at least once against j
    reasons: list[str] = []
    for group in groups:
        members = [i for i in group if played[i].sum() + played[:, i].sum() > 0]
        if len(members) < 2:
            continue
        for part, won in _separated(members, beat):
            listed = ", ".join(names[i] for i in part)
            games = int(sum(played[i].sum() + played[:, i].sum() for i in part))
            if len(part) == 1:
                reasons.append(f"{listed} {'won' if won else 'lost'} all {games} of its games")
            else:
                reasons.append(
                    f"{listed} {'won' if won else 'lost'} every game they played"
                    " against the other engines"
                )
    if seat:
        total = played.sum()
        for n, seat_won in ((1, int(wins.sum())), (2, int(losses.sum()))):
            if total and seat_won == total:
                reasons.append(f"seat {n} won all {total} games")
    if prior == 0.0 and floating is not None:
        reasons += [
            f"{', '.join(names[i] for i in g)} never played an anchored engine,"
            " directly or through other engines"
            for g in floating
        ]
    elif prior == 0.0 and len([g for g in groups if played[np.ix_(g, g)].sum()]) > 1:
        reasons.append("the engines fall into groups that never played each other")
    if not reasons and prior == 0.0 and seat:
        one_way = [
            f"{names[i]} {'won' if wins[i, j] else 'lost'} all {int(played[i, j])} of its"
            f" games in seat 1 against {names[j]}"
            for i, j in zip(*np.nonzero(played), strict=True)
            if wins[i, j] == 0 or losses[i, j] == 0
        ]
        reasons.append(
            ", ".join(one_way[:2] or ["the games by seat"]) + " (the ratings and"
            " the seat advantage cannot both be fitted)"
        )
    if not reasons:
        reasons.append(
            "the games do not determine the ratings" if prior == 0.0 else "the fit did not converge"
        )
    if len(reasons) > _REASONS:
        reasons[_REASONS - 1 :] = [f"{len(reasons) - _REASONS + 1} more such results"]
    return tuple(reasons)


def _separated(members: list[int], beat: npt.NDArray[np.bool_]) -> list[tuple[list[int], bool]]:
    """The groups of a connected part of the pool that won (True) or lost (False) every
    game against the rest of it: the source and sink components of its beat graph."""
    idx = np.array(members)
    sub = beat[np.ix_(idx, idx)]
    reach = sub | np.eye(len(members), dtype=bool)
    while True:  # transitive closure by squaring: a few rounds for any pool size
        nxt = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
        if np.array_equal(nxt, reach):
            break
        reach = nxt
    strong = reach & reach.T
    seen: set[int] = set()
    out: list[tuple[list[int], bool]] = []
    for k in range(len(members)):
        if k in seen:
            continue
        comp = [int(v) for v in np.flatnonzero(strong[k])]
        seen.update(comp)
        if len(comp) == len(members):
            return []
        inside = np.zeros(len(members), dtype=bool)
        inside[comp] = True
        beaten_from_outside = bool(sub[np.ix_(~inside, inside)].any())
        beats_outside = bool(sub[np.ix_(inside, ~inside)].any())
        if not beaten_from_outside:
            out.append(([members[v] for v in comp], True))
        elif not beats_outside:
            out.append(([members[v] for v in comp], False))
    # A group that lost every game against everyone the winners are not is the winners'
    # result seen from the other side: say it once.
    top = {i for part, won in out if won for i in part}
    return [(part, won) for part, won in out if won or set(part) != set(members) - top]


def _counts(data: npt.ArrayLike, n: int, what: str) -> IntArray:
    array = np.asarray(data)
    if array.shape != (n, n):
        raise ValueError(f"{what} must have shape ({n}, {n}), not {array.shape}")
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f"{what} must hold numbers of games")
    values = array.astype(np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values != np.round(values)):
        raise ValueError(f"{what} must hold non-negative whole numbers of games")
    if np.any(np.diag(values) != 0):
        raise ValueError(f"{what} has games on its diagonal: an engine cannot play itself")
    return values.astype(np.int64)


def _components(played: IntArray) -> list[list[int]]:
    """Connected components of the game graph, as sorted index lists ordered by first index."""
    n = played.shape[0]
    linked = (played + played.T) > 0
    label = np.full(n, -1)
    groups: list[list[int]] = []
    for start in range(n):
        if label[start] >= 0:
            continue
        label[start] = len(groups)
        members = [start]
        frontier = [start]
        while frontier:
            nxt = np.flatnonzero(linked[frontier].any(axis=0) & (label < 0))
            label[nxt] = len(groups)
            frontier = [int(v) for v in nxt]
            members.extend(frontier)
        groups.append(sorted(members))
    return groups


class _Model:
    """Penalised log-likelihood in logits: parameters are the ratings, then the seat term."""

    def __init__(self, wins: FloatArray, losses: FloatArray, prior: float, seat: bool) -> None:
        self.wins = wins
        self.losses = losses
        self.played = wins + losses
        self.has_games = self.played > 0
        self.prior = prior
        self.seat = seat
        self.k = wins.shape[0]

    def logits(self, params: FloatArray) -> FloatArray:
        theta = params[: self.k]
        s = params[self.k] if self.seat else 0.0
        x: FloatArray = theta[:, None] - theta[None, :] + s
        return x

    def value(self, params: FloatArray) -> float:
        x = self.logits(params)
        plus = _softplus(x)
        total = -float(np.sum(self.wins * (plus - x) + self.losses * plus))
        if self.prior > 0.0:
            theta = params[: self.k]
            total -= 0.5 * self.prior * float(np.sum(_log_cosh_half(theta - theta.mean())))
            if self.seat:
                total -= 0.5 * self.prior * float(_log_cosh_half(params[self.k : self.k + 1])[0])
        return total

    def derivatives(self, params: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Gradient of the penalised log-likelihood and its negated Hessian."""
        k = self.k
        p, q = _sigmoid_pair(self.logits(params))
        residual = self.wins * q - self.losses * p
        weight = self.played * p * q
        size = k + 1 if self.seat else k
        grad = np.zeros(size)
        hess = np.zeros((size, size))
        grad[:k] = residual.sum(axis=1) - residual.sum(axis=0)
        out_w, in_w = weight.sum(axis=1), weight.sum(axis=0)
        hess[:k, :k] = np.diag(out_w + in_w) - weight - weight.T
        if self.seat:
            grad[k] = residual.sum()
            hess[:k, k] = hess[k, :k] = out_w - in_w
            hess[k, k] = weight.sum()
        if self.prior > 0.0:
            theta = params[:k]
            pm, qm = _sigmoid_pair(theta - theta.mean())
            slope = 0.5 * self.prior * (qm - pm)
            grad[:k] += slope - slope.mean()
            curve = self.prior * pm * qm
            # Curvature of the prior through the pool mean: P diag(curve) P, P = I - 11'/k.
            hess[:k, :k] += (
                np.diag(curve) - (curve[:, None] + curve[None, :]) / k + curve.sum() / k**2
            )
            if self.seat:
                ps, qs = _sigmoid_pair(params[k : k + 1])
                grad[k] += 0.5 * self.prior * float(qs[0] - ps[0])
                hess[k, k] += self.prior * float(ps[0] * qs[0])
        return grad, hess

    def max_logit(self, params: FloatArray) -> float:
        if not self.has_games.any():
            return 0.0
        return float(np.abs(self.logits(params)[self.has_games]).max())


def _softplus(x: FloatArray) -> FloatArray:
    """log(1 + e^x) without overflow; it is the negated log-likelihood of a loss at logit x."""
    out: FloatArray = np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
    return out


def _log_cosh_half(x: FloatArray) -> FloatArray:
    """Negated log-likelihood of one win and one loss at logit x."""
    out: FloatArray = 2.0 * _softplus(x) - x
    return out


def _sigmoid_pair(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """sigmoid(x) and sigmoid(-x), each accurate in its own tail, from one exponential."""
    small = np.exp(-np.abs(x))
    big = 1.0 / (1.0 + small)
    positive = x >= 0.0
    return np.where(positive, big, small * big), np.where(positive, small * big, big)


def _maximise(
    model: _Model,
    gauge_groups: list[npt.NDArray[np.intp]],
    fixed: Mapping[int, float] | None = None,
) -> tuple[FloatArray, bool, int, FloatArray | None]:
    """Damped Newton ascent; returns parameters, convergence, iterations and covariance.

    The gauge directions (flat in the likelihood) are given a unit curvature scaled to the
    problem so that the Newton system is regular; steps then leave each group's mean where
    it is, which keeps the ratings centred. ``fixed`` holds parameters (by index, in logits)
    at their values: the ascent moves the others, and the covariance is theirs given the
    fixed ones (whose rows and columns are 0), not centred.
    """
    size = model.k + (1 if model.seat else 0)
    params = np.zeros(size)
    if model.k == 0:
        return params, True, 0, np.zeros((size, size))
    fixed = fixed or {}
    whole = not fixed
    free = np.array([i for i in range(size) if i not in fixed], dtype=np.intp)
    if fixed:
        held = np.array(list(fixed.values()))
        params[list(fixed)] = held
        params[free[free < model.k]] = held.mean()  # the free ratings start amid the anchors
        if free.size == 0:
            return params, True, 0, np.zeros((size, size))
    free_ratings = int(np.count_nonzero(free < model.k))
    gauge = np.zeros((free.size, len(gauge_groups)))
    for col, group in enumerate(gauge_groups):
        gauge[np.searchsorted(free, group), col] = 1.0 / math.sqrt(len(group))

    def derivatives(params: FloatArray) -> tuple[FloatArray, FloatArray]:
        grad, hess = model.derivatives(params)
        if whole:
            return grad, hess
        return grad[free], hess[np.ix_(free, free)]

    def moved(params: FloatArray, step: FloatArray) -> FloatArray:
        if whole:
            return params + step
        out = params.copy()
        out[free] += step
        return out

    def regular(hess: FloatArray) -> tuple[FloatArray, float]:
        diagonal = np.diag(hess)[:free_ratings]
        scale = (float(np.mean(diagonal)) if diagonal.size else 0.0) or 1.0
        return hess + scale * (gauge @ gauge.T), scale

    converged = False
    iterations = 0
    while iterations < _MAX_ITERATIONS:
        iterations += 1
        grad, hess = derivatives(params)
        step = _solve(regular(hess)[0], grad)
        if step is None:
            break
        size_now = float(np.abs(step).max())
        if size_now < _TOLERANCE_ELO * _LOGIT_PER_ELO:
            params = moved(params, step)
            converged = True
            break
        if size_now <= _SMALL_STEP:
            params = moved(params, step)
            continue
        if size_now > _MAX_STEP:
            step *= _MAX_STEP / size_now
        current = model.value(params)
        slope = float(grad @ step)
        t = 1.0
        while t > 1e-6:
            trial = moved(params, t * step)
            if model.value(trial) >= current + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            break
        params = trial
        if model.max_logit(params) > _MAX_LOGIT:
            break
    if not converged:
        return params, False, iterations, None

    _, hess = derivatives(params)
    regular_hess, scale = regular(hess)
    if model.prior == 0.0:
        eig = np.linalg.eigvalsh(regular_hess)
        if eig[0] <= 1e-12 * eig[-1]:
            return params, False, iterations, None
    try:
        inverse = np.linalg.inv(regular_hess)
    except np.linalg.LinAlgError:
        return params, False, iterations, None
    cov: FloatArray = inverse - (gauge @ gauge.T) / scale
    if whole:
        k = model.k
        centre = np.eye(size)
        centre[:k, :k] -= 1.0 / k
        cov = centre @ cov @ centre.T
    else:
        given = np.zeros((size, size))
        given[np.ix_(free, free)] = cov
        cov = given
    if not np.all(np.isfinite(cov)):
        return params, False, iterations, None
    return params, True, iterations, cov


def _solve(matrix: FloatArray, rhs: FloatArray) -> FloatArray | None:
    try:
        out = np.linalg.solve(matrix, rhs).astype(np.float64, copy=False)
    except np.linalg.LinAlgError:
        return None
    return out if np.all(np.isfinite(out)) else None


def _relative_to(
    covariance: FloatArray, known: npt.NDArray[np.bool_], a: int
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Covariance of ``elo - elo[a]``: rows and columns of the anchor become zero."""
    out = np.zeros(covariance.shape)
    if not known[a]:
        return out, np.zeros_like(known)
    idx = np.flatnonzero(known)
    sub = covariance[np.ix_(idx, idx)]
    pos = int(np.searchsorted(idx, a))
    out[np.ix_(idx, idx)] = sub - sub[:, [pos]] - sub[[pos], :] + sub[pos, pos]
    return out, known
