"""Adaptive pairing: games go where the ranking is still unsure (pure).

A run has a budget of games, played in batches of seat-swapped pairs. After each batch
the ratings are fitted jointly (`arbiter.results.ratings.fit`, Bradley-Terry with a
seat term and the usual prior) and the next batch is chosen from that fit alone:

- **Warm-up.** Until every engine has `min_games` games, a batch is a Swiss round on
  the games won so far (`arbiter.runs.swiss.pair_round`): everyone plays, nobody meets
  an opponent twice while another is left, and the game graph is connected early.
- **Questions.** The order of the fit asks a few questions "is A above B?": each
  engine against the next one down (the whole order), or with `until = "top:K"` the
  first K against the next one down and the K-th against every engine below it. The
  ranking's uncertainty is the sum over the questions of the probability that the two
  are the other way round, Phi(-|d| / sd), from the fit's estimate `d` of the
  difference and its standard deviation `sd`.
- **Value of a pair.** One more pair between engines i and j adds 2 p (1 - p) to the
  information about `r_i - r_j` (p: the fit's chance that i wins). That shrinks the
  deviation of every question's difference from `sd` to `sd'`, by an amount the fit's
  covariance gives in closed form (a rank-one update), and the question's swap
  probability would drop to Phi(-|d| / sd') if the estimate stayed where it is. A
  pair's value is that drop summed over the questions, with |d| / sd counted as at
  least TIE_H (an estimate at a tie is not worthless to refine: it will move as games
  come in). Averaging over what the pair may show instead (the one-step look-ahead)
  gives next to nothing once a few hundred games are in: one pair can only change the
  answer when the estimate is within a hair of a tie, which is why that myopic value
  is not used. Pairs already played often are worth less, by the information they
  add. Pairings more than WINDOW places apart in the order are not priced: their games
  are nearly certain and tell next to nothing.
- **A batch** is filled greedily: the most valuable pair, then the fit's covariance is
  updated as if it were played, then the next (the same pairing again if it is still
  worth most: two close leaders may fill a batch).
  First, though, the engines with fewer games than a tenth of the mean (or than
  `min_games`) get a pair with the opponent most worth playing, the fewest games
  first, in up to a quarter of the batch: no engine is starved, so a fit that is wrong
  about one can always be corrected.

The stop rule (`until`) ends the run once its questions are settled at the stated
confidence; why it is valid at every look, not just at a fixed number of games, is in
the docs (Adaptive pairing, the stop rule). Everything depends only on the results and
the seed: batch b is chosen from the results of batches 1..b-1, so a rebuilt schedule
recomputes the batch in play and hands out only its games not stored.
"""

from __future__ import annotations

import json
import math
from collections import Counter, deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction

from arbiter._numpy import np, npt
from arbiter.results.ratings import DEFAULT_PRIOR, RatingFit, fit
from arbiter.results.records import GameRecord
from arbiter.results.store import ResultRow
from arbiter.rules import Variant
from arbiter.runs.schedule import (
    WAIT,
    Openings,
    ScheduledGame,
    Wait,
    derive,
    pair_games,
    winner_seat,
)
from arbiter.runs.swiss import History, Unpairable, pair_round

FloatArray = npt.NDArray[np.float64]

LOGIT_PER_ELO = math.log(10.0) / 400.0
FLOOR_SHARE = 0.1  # no engine below this share of the mean games (once warmed up)
WINDOW = 6  # pairings priced: engines at most this many places apart in the order
SETTLED_H = 4.5  # a question this many deviations from a swap has nothing left to gain
TIGHTEST_SD_ELO = 20.0  # the stop rule's bound is tightest at this deviation of a difference
TIE_H = 1.0  # a question is priced as if its estimate were at least this many deviations
# from a tie: truly close engines still draw games


@dataclass(frozen=True)
class StopRule:
    """`until`: the first `top` places in order settled (`top` None: the whole order),
    each "A above B" at `confidence` (simultaneously, at every look)."""

    top: int | None
    confidence: float = 0.95

    def __str__(self) -> str:
        return "order" if self.top is None else f"top:{self.top}"


def parse_until(text: str) -> int | None:
    """`top:K` gives K, `order` None; ValueError otherwise."""
    if text == "order":
        return None
    head, _, number = text.partition(":")
    if head == "top" and number.isascii() and number.isdigit() and int(number) >= 1:
        return int(number)
    raise ValueError(f"unknown stop rule {text!r}")


def questions(order: Sequence[int], top: int | None) -> list[tuple[int, int]]:
    """The "A above B" statements (indices, A first) a ranking rests on: the whole order
    (`top` None) or its first `top` places in order (module docstring)."""
    n = len(order)
    if top is None or top >= n - 1:
        return [(order[r], order[r + 1]) for r in range(n - 1)]
    return [(order[r], order[r + 1]) for r in range(top - 1)] + [
        (order[top - 1], order[s]) for s in range(top, n)
    ]


def bound(sd: FloatArray | float, alpha: float) -> FloatArray:
    """Half-width of an anytime-valid confidence sequence for a difference whose
    current standard deviation is `sd` (logits), at level `alpha` two-sided.

    Robbins' normal mixture: with information I = 1 / sd^2, the estimate stays within
    sqrt((I + rho) log((I + rho) / (rho alpha^2))) / I of the truth at every I at once,
    with probability 1 - alpha, for a martingale with normal increments. `rho` sets
    where it is tightest: here at a deviation of TIGHTEST_SD_ELO.
    """
    info_star = 1.0 / (TIGHTEST_SD_ELO * LOGIT_PER_ELO) ** 2
    log_a = 2.0 * math.log(1.0 / alpha)
    rho = info_star / (log_a + math.log1p(log_a))
    info = 1.0 / np.maximum(np.asarray(sd, dtype=np.float64), 1e-12) ** 2
    width: FloatArray = np.sqrt((info + rho) * np.log((info + rho) / (rho * alpha**2))) / info
    return width


def pair_alpha(confidence: float, engines: int) -> float:
    """The level each pairwise statement is held at: the rule's error shared over every
    pair of engines (which pairs are asked depends on the data)."""
    return (1.0 - confidence) / max(1, engines * (engines - 1) // 2)


def normal_cdf(x: FloatArray) -> FloatArray:
    """Phi(x), from the Chebyshev fit of erfc (Numerical Recipes' erfcc: relative error
    below 1.2e-7 everywhere), vectorised."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (
        1.00002368
        + t
        * (
            0.37409196
            + t
            * (
                0.09678418
                + t
                * (
                    -0.18628806
                    + t
                    * (
                        0.27886807
                        + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
                    )
                )
            )
        )
    )
    tail = 0.5 * t * np.exp(-z * z + poly)  # Phi(-|x|)
    out: FloatArray = np.where(x >= 0, 1.0 - tail, tail)
    return out


class Board:
    """The fit of the games so far, in logits, and what one more pair would tell."""

    def __init__(self, engines: Sequence[str], rows: Sequence[ResultRow]) -> None:
        self.engines = list(engines)
        index = {e: i for i, e in enumerate(self.engines)}
        n = len(self.engines)
        wins = np.zeros((n, n), dtype=np.int64)
        losses = np.zeros((n, n), dtype=np.int64)
        self.met = np.zeros((n, n), dtype=np.int64)  # games between i and j
        for row in rows:
            if row.seat1 not in index or row.seat2 not in index:
                continue  # an engine no longer in the field
            i, j = index[row.seat1], index[row.seat2]
            (wins if row.winner_seat == 1 else losses)[i, j] += 1
            self.met[i, j] += 1
            self.met[j, i] += 1
        self.wins_by_engine = wins.sum(axis=1) + losses.sum(axis=0)
        self.games = self.met.sum(axis=1)
        self.fit: RatingFit = fit(self.engines, wins, losses, prior=DEFAULT_PRIOR)
        self.theta = np.asarray(self.fit.elo) * LOGIT_PER_ELO
        cov = np.asarray(self.fit.covariance)
        self.cov = np.where(np.isfinite(cov), cov, 0.0) * LOGIT_PER_ELO**2
        if not self.fit.converged:
            self.cov = np.eye(n) * 1e6  # nothing known: every pair is worth the same
        self.order = self.fit.order()
        self.rank = np.empty(n, dtype=np.intp)  # each engine's place in the order
        self.rank[self.order] = np.arange(n)

    def sd(self, i: int, j: int) -> float:
        c = self.cov
        return math.sqrt(max(float(c[i, i] + c[j, j] - 2.0 * c[i, j]), 1e-18))

    def settled(self, rule: StopRule) -> bool:
        """Whether every question of the rule is answered at its confidence, with bounds
        that hold at every look (`bound`)."""
        if not self.fit.converged or len(self.engines) < 2:
            return False
        alpha = pair_alpha(rule.confidence, len(self.engines))
        for a, b in questions(self.order, rule.top):
            d = float(self.theta[a] - self.theta[b])
            if d <= float(bound(self.sd(a, b), alpha)):
                return False
        return True

    def closest(self, rule: StopRule) -> tuple[str, str, float]:
        """The question nearest to being the other way round: (A, B, P(B above A))."""
        best = ("", "", 0.0)
        for a, b in questions(self.order, rule.top):
            h = float(self.theta[a] - self.theta[b]) / self.sd(a, b)
            p = float(normal_cdf(np.array([-h]))[0])
            if p >= best[2]:
                best = (self.engines[a], self.engines[b], p)
        return best

    def candidates(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """The pairings worth pricing: engines at most WINDOW places apart in the order.
        A game between engines far apart is nearly certain, so it tells next to nothing
        (and the floor keeps every engine playing)."""
        i, j = np.triu_indices(len(self.engines), 1)
        near = np.abs(self.rank[i] - self.rank[j]) <= WINDOW
        return i[near], j[near]

    def gains(
        self,
        cov: FloatArray,
        asked: Sequence[tuple[int, int]],
        i: npt.NDArray[np.intp],
        j: npt.NDArray[np.intp],
    ) -> FloatArray:
        """For each pairing (i[k], j[k]), how much one more pair between them lowers the
        summed swap probability of the questions (module docstring), under `cov`."""
        theta = self.theta
        p = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
        info = 2.0 * p * (1.0 - p)  # what a pair adds to the information on r_i - r_j
        spread = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
        if not asked:
            return np.zeros(len(i))
        a = np.array([q[0] for q in asked])
        b = np.array([q[1] for q in asked])
        w = cov[:, a] - cov[:, b]  # (engines, questions)
        var = w[a, np.arange(len(a))] - w[b, np.arange(len(a))]
        h = np.abs(theta[a] - theta[b]) / np.sqrt(np.maximum(var, 1e-18))
        # A question settled beyond doubt has nothing left to gain.
        live = (var > 1e-18) & (h <= SETTLED_H)
        if not live.any():
            return np.zeros(len(i))
        w, var, h = w[:, live], var[live], h[live]
        h = np.maximum(h, TIE_H)
        removed = info[None, :] * (w[i].T - w[j].T) ** 2 / (1.0 + info * spread)[None, :]
        shrink = np.sqrt(var[:, None] / np.maximum(var[:, None] - removed, 1e-300))
        after = normal_cdf(-h[:, None] * shrink)
        total: FloatArray = (normal_cdf(-h)[:, None] - after).sum(axis=0)
        return total


def choose(
    engines: Sequence[str],
    rows: Sequence[ResultRow],
    batch: int,
    pairs: int,
    rule: StopRule | None,
    min_games: int,
    seed: int,
) -> list[tuple[str, str]]:
    """Batch `batch`'s pairings (at most `pairs`), from the results of the batches
    before it: a warm-up Swiss round, or the most valuable pairs (module docstring).
    Each pairing is (seat 1, seat 2) of its first game."""
    n = len(engines)
    size = min(max(1, n // 2), pairs)
    if size <= 0:
        return []
    board = Board(engines, rows)
    games = board.games
    tie = derive(seed, f"adaptive batch {batch}")
    if int(games.min()) < min_games:
        return _warm_up(engines, board, tie)[:size]
    cov = board.cov.copy()
    asked = questions(board.order, None if rule is None else rule.top)
    first, second = board.candidates()
    noise = np.array(
        [
            _noise(tie, engines[a], engines[b])
            for a, b in zip(first.tolist(), second.tolist(), strict=True)
        ]
    )
    chosen: list[tuple[int, int]] = []
    floor = max(min_games, FLOOR_SHARE * float(games.mean()))
    starved = sorted(
        (k for k in range(n) if games[k] < floor), key=lambda k: (int(games[k]), engines[k])
    )
    floor_pairs = max(1, size // 4)  # the rest of the batch goes where it is worth most
    for k in starved:
        if len(chosen) >= floor_pairs:
            break
        if any(k in pair for pair in chosen):
            continue  # paired already, with another engine below the floor
        # Its most valuable pairing, or the opponent nearest in rating.
        mine = (first == k) | (second == k)
        value = _relative(board.gains(cov, asked, first, second))
        near = -np.abs(board.theta[first] - board.theta[second])
        pick = _best(np.where(mine, value + 1e-6 * near, -np.inf), noise)
        chosen.append((int(first[pick]), int(second[pick])))
        cov = _update(cov, board, *chosen[-1])
    while len(chosen) < size:
        value = _relative(board.gains(cov, asked, first, second))
        if float(value.max()) <= 0.0:
            # Nothing left to settle: spread games over neighbours in the order.
            apart = np.abs(board.rank[first] - board.rank[second])
            played = board.met[first, second] + np.array(
                [
                    sum({a, b} == {int(x), int(y)} for a, b in chosen)
                    for x, y in zip(first.tolist(), second.tolist(), strict=True)
                ]
            )
            value = _relative(1.0 / (apart * (1.0 + played)))
        pick = _best(value, noise)
        chosen.append((int(first[pick]), int(second[pick])))
        cov = _update(cov, board, *chosen[-1])
    return [_seated(engines, i, j, tie) for i, j in chosen]


def _noise(seed: int, a: str, b: str) -> float:
    return derive(seed, json.dumps(sorted((a, b)), ensure_ascii=False)) / 2.0**64


def _relative(value: FloatArray) -> FloatArray:
    """Values as fractions of the largest, to 9 digits: near-equal ones tie (and the
    seed decides), whatever the rounding of the arithmetic that made them."""
    top = float(value.max(initial=0.0))
    if top <= 1e-300:
        return np.zeros_like(value)
    out: FloatArray = np.round(value / top, 9)
    return out


def _best(value: FloatArray, noise: FloatArray) -> int:
    return int(np.argmax(value + 1e-12 * noise))


def _update(cov: FloatArray, board: Board, i: int, j: int) -> FloatArray:
    """The covariance once a pair between i and j is played (its outcome unknown)."""
    d = float(board.theta[i] - board.theta[j])
    p = 1.0 / (1.0 + math.exp(-d))
    info = 2.0 * p * (1.0 - p)
    u = cov[:, i] - cov[:, j]
    spread = float(u[i] - u[j])
    out: FloatArray = cov - info * np.outer(u, u) / (1.0 + info * spread)
    return out


def _seated(engines: Sequence[str], i: int, j: int, tie: int) -> tuple[str, str]:
    """Seat 1 of a pair's first game, drawn from the seed (the pair plays both ways)."""
    a, b = engines[i], engines[j]
    flip = derive(tie, json.dumps(["seats", *sorted((a, b))], ensure_ascii=False)) & 1
    return (a, b) if flip else (b, a)


def _warm_up(engines: Sequence[str], board: Board, tie: int) -> list[tuple[str, str]]:
    """A Swiss round on the games won so far; the engine left over in an odd field is
    one with the most games. Opponents met before are avoided while it can be done."""
    history = {}
    for k, e in enumerate(engines):
        met = {engines[j] for j in np.flatnonzero(board.met[k]).tolist()}
        history[e] = History(
            points=Fraction(int(board.wins_by_engine[k]), 2),
            opponents=met,
            byes=-int(board.games[k]),
        )
    try:
        pairing = pair_round(engines, history, tie)
    except Unpairable:
        for h in history.values():
            h.opponents = set()
        pairing = pair_round(engines, history, tie)
    return list(pairing.pairs)


class AdaptiveSchedule:
    """An adaptive run as a results-aware schedule (arbiter.runs.schedule.Schedule).

    Built from the results already stored, it recomputes the batch in play (the last
    one with a stored game, from the batches before it) and hands out its games not
    stored; once they are all settled it checks the stop rule and chooses the next.
    """

    def __init__(
        self,
        name: str,
        engines: Collection[str],
        budget: int,
        variant: Variant,
        openings: Openings,
        seed: int,
        rows: Sequence[ResultRow],
        rule: StopRule | None = None,
        min_games: int = 4,
    ) -> None:
        self.name = name
        self.engines = sorted(engines)
        self.budget = budget
        self.variant = variant
        self.openings = openings
        self.seed = seed
        self.rule = rule
        self.min_games = min_games
        self.rows = list(rows)
        self.results = {row.game_id: row for row in self.rows}
        self.batch = max((row.round for row in self.rows), default=0)
        self.games: tuple[ScheduledGame, ...] = ()  # the batch in play
        self.verdict = ""  # why the run is over before its budget
        self._over = False
        self._pending: deque[ScheduledGame] = deque()
        if self.batch:
            self._make(self.batch)
            if self._complete():
                self._start_next()
        else:
            self._start_next()

    @property
    def total(self) -> int:
        return self.budget

    @property
    def over(self) -> bool:
        """Whether the run is over: its budget spent or its stop rule settled."""
        return self._over

    def done(self) -> int:
        return len(self.rows)

    def next(self) -> ScheduledGame | Wait | None:
        if self._pending:
            return self._pending.popleft()
        if self._over:
            return None
        if not self._complete():
            return WAIT
        self._start_next()
        return self._pending.popleft() if self._pending else None

    def settled(self, game: ScheduledGame, record: GameRecord) -> None:
        row = ResultRow(
            game.game_id, game.round, game.engines[0], game.engines[1], winner_seat(record)
        )
        self.rows.append(row)
        self.results[row.game_id] = row

    def _complete(self) -> bool:
        return all(g.game_id in self.results for g in self.games)

    def _before(self, batch: int) -> list[ResultRow]:
        return [row for row in self.rows if row.round < batch]

    def _start_next(self) -> None:
        """Check the stop rule on the results so far, then choose the next batch."""
        self._check(self.rows)
        if not self._over:
            self._make(self.batch + 1)
            if not self.games:
                self._over = True

    def _check(self, rows: Sequence[ResultRow]) -> None:
        if len(rows) + 2 > self.budget:
            self._over = True
            return
        if self.rule is not None and len(self.engines) >= 2:
            board = Board(self.engines, rows)
            if int(board.games.min()) >= self.min_games and board.settled(self.rule):
                names = [self.engines[i] for i in board.order]
                what = (
                    "the whole order"
                    if self.rule.top is None or self.rule.top >= len(names) - 1
                    else f"the top {self.rule.top}"
                )
                shown = names if self.rule.top is None else names[: self.rule.top]
                self.verdict = (
                    f"{what} ({', '.join(shown)}) settled at"
                    f" {100 * self.rule.confidence:g}% confidence after"
                    f" {len(rows)} games"
                )
                self._over = True

    def _make(self, batch: int) -> None:
        before = self._before(batch)
        pairs = choose(
            self.engines,
            before,
            batch,
            (self.budget - len(before)) // 2,
            self.rule,
            self.min_games,
            self.seed,
        )
        first = len(before) + 1
        games: list[ScheduledGame] = []
        seen: Counter[frozenset[str]] = Counter()  # pairs of the same two in this batch
        for k, pair in enumerate(pairs):
            again = seen[frozenset(pair)]
            games += pair_games(
                self.name,
                batch,
                pair,
                first + 2 * k,
                self.variant,
                self.openings,
                seed=self.seed,
                again=again,
            )
            seen[frozenset(pair)] += 1
        self.batch = batch
        self.games = tuple(games)
        self._pending = deque(g for g in games if g.game_id not in self.results)

    def board(self) -> Board:
        return Board(self.engines, self.rows)


def adaptive_lines(schedule: AdaptiveSchedule) -> list[str]:
    """What an adaptive run shows beside the Elo table: its budget and its stop rule."""
    played = schedule.done()
    line = f"Adaptive: {played} of {schedule.budget} games, in {schedule.batch} batches"
    rule = schedule.rule
    if rule is None:
        return [line + "; no stop rule (until): the budget is played"]
    line += f'; stop rule until = "{rule}" at {100 * rule.confidence:g}% confidence: '
    if schedule.verdict:
        return [line + schedule.verdict + " (the run is over)"]
    if len(schedule.engines) < 2 or not played:
        return [line + "not settled"]
    a, b, p = schedule.board().closest(rule)
    return [
        line + f"not settled; the closest call: {a} above {b}"
        f" ({100 * (1 - p):.1f}% sure, before correcting for repeated looks)"
    ]


def adaptive_json(schedule: AdaptiveSchedule) -> dict[str, object]:
    rule = schedule.rule
    return {
        "budget": schedule.budget,
        "games": schedule.done(),
        "batches": schedule.batch,
        "until": None if rule is None else str(rule),
        "confidence": None if rule is None else rule.confidence,
        "settled": bool(schedule.verdict),
        "verdict": schedule.verdict or None,
        "over": schedule.over,
    }
