"""Swiss tournaments: each round pairs engines on equal or nearest scores (pure).

A round is a seat-swapped pair of games per pairing, scored in pair points: both games
won 1, one each 1/2, both lost 0. An engine left over in a round of an odd field gets a
bye worth 1 pair point (as a won pair: in a Swiss the bye goes to a low scorer, and the
full point is the usual award); no engine gets a second bye while another has none. Two
engines never meet twice.

Pairing is a maximum-weight matching (Edmonds' blossom algorithm, from networkx) on the
pairings not yet played, which finds the best whole round at once: a greedy pass down
the score groups can leave the last engines with no opponent they have not met, late in
a tournament, when a different pairing higher up would have left them one. Among the
complete pairings the matching takes, in order of priority:

1. the bye (in an odd field) to the lowest score it can go to, among the engines that
   have had the fewest byes;
2. the smallest sum of squared score differences (in half points) of the pairs: equal
   scores meet where they can, and a difference of one point costs more than two of
   half a point;
3. the fewest colour clashes: the engine in seat 1 of a pair's first game alternates for
   each engine from round to round, and two engines due the same seat are a clash (worse
   when either has had it twice running);
4. a tie-break drawn from the tournament's seed and the round, so that equal choices are
   made the same way on every run.

The weights encode the four as one integer, so that the matching is exact. Round k+1 is
paired from the stored results of rounds 1..k alone, never from the order engines are
listed in or the moment games finished: after a kill -9 a rerun makes the same pairings
and plays only the games not stored.

Standings list Swiss points, then Buchholz (the sum of the opponents' points), then
Sonneborn-Berger (each opponent's points weighted by the pair points scored against it).
For Buchholz a bye counts as a pair against a virtual opponent who had the bye-taker's
points before that round, lost the bye's pair and shares every later one (FIDE's rule
for unplayed rounds); Sonneborn-Berger counts played pairs only.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

import networkx as nx
from tabulate import tabulate

from arbiter.results.records import GameRecord
from arbiter.rules import Variant
from arbiter.runs.schedule import (
    WAIT,
    Openings,
    ScheduledGame,
    Unschedulable,
    Wait,
    derive,
    pair_games,
    winner_seat,
)

BYE_POINTS = Fraction(1)
_NOISE = 1 << 20  # tie-breaks are drawn below this
_BYE = -1  # the bye's node in the matching graph


class Unpairable(Unschedulable):
    """No round can be made without two engines meeting again."""


@dataclass(frozen=True)
class Pairing:
    """A round's pairs, each as the seats of its first game, and the engine with a bye."""

    pairs: tuple[tuple[str, str], ...]
    bye: str | None = None


@dataclass
class History:
    """What pairing needs to know of an engine's past rounds."""

    points: Fraction = Fraction(0)
    opponents: set[str] = field(default_factory=set)
    byes: int = 0
    firsts: list[int] = field(default_factory=list)  # its seat in each pair's first game


def pair_round(engines: Sequence[str], history: Mapping[str, History], tie_seed: int) -> Pairing:
    """The best round for these engines (module docstring), or Unpairable.

    `engines` are in a fixed order (the schedule sorts them by name): the result depends
    on the engines, their histories and `tie_seed` only.
    """
    n = len(engines)
    halves = [int(history[e].points * 2) for e in engines]
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    # Each edge's costs, most important first: the bye-taker's score above the lowest it
    # could be, the squared score difference, the colour clash, the tie-break.
    edges: list[tuple[int, int, tuple[int, int, int, int]]] = []
    for i in range(n):
        for j in range(i + 1, n):
            if engines[j] in history[engines[i]].opponents:
                continue
            a, b = history[engines[i]], history[engines[j]]
            tiers = (
                0,
                (halves[i] - halves[j]) ** 2,
                _clash(a, b),
                _noise(tie_seed, engines[i], engines[j]),
            )
            edges.append((i, j, tiers))
    if n % 2:
        fewest = min(history[e].byes for e in engines)
        eligible = [i for i, e in enumerate(engines) if history[e].byes == fewest]
        low = min(halves[i] for i in eligible)
        graph.add_node(_BYE)
        for i in eligible:
            edges.append((i, _BYE, (halves[i] - low, 0, 0, _noise(tie_seed, engines[i], ""))))
    size = (n + 1) // 2  # edges of a complete round
    # One integer per edge, each tier's unit more than a whole round of the tiers below.
    clash_unit = size * _NOISE
    score_unit = (3 * size + 1) * clash_unit
    bye_unit = (size * max((c[1] for *_, c in edges), default=0) + 1) * score_unit
    costs = [
        bye * bye_unit + score * score_unit + clash * clash_unit + noise
        for *_, (bye, score, clash, noise) in edges
    ]
    top = max(costs, default=0) + 1
    for (i, j, _), cost in zip(edges, costs, strict=True):
        graph.add_edge(i, j, weight=top - cost)
    matching: set[tuple[int, int]] = nx.max_weight_matching(graph, maxcardinality=True)
    if len(matching) < size:
        raise Unpairable(
            f"no pairing of all {n} engines avoids two of them meeting again"
            + (" (or a second bye)" if n % 2 else "")
        )
    pairs: list[tuple[str, str]] = []
    bye = None
    for u, v in matching:
        if _BYE in (u, v):
            bye = engines[u if v == _BYE else v]
            continue
        i, j = sorted((u, v))
        pairs.append(_seats(engines[i], engines[j], history, tie_seed))
    # Stronger pairs first (by points, then names): a round's games are numbered so.
    pairs.sort(key=lambda p: (-max(history[e].points for e in p), sorted(p)))
    return Pairing(tuple(pairs), bye)


def _noise(seed: int, a: str, b: str) -> int:
    return derive(seed, json.dumps(sorted((a, b)), ensure_ascii=False)) % _NOISE


def _due(h: History) -> int | None:
    """The seat an engine is due in its next pair's first game (None: not yet played)."""
    return 3 - h.firsts[-1] if h.firsts else None


def _twice(h: History) -> bool:
    return len(h.firsts) >= 2 and h.firsts[-1] == h.firsts[-2]


def _clash(a: History, b: History) -> int:
    due = _due(a)
    if due is None or due != _due(b):
        return 0
    return 1 + _twice(a) + _twice(b)


def _seats(a: str, b: str, history: Mapping[str, History], tie_seed: int) -> tuple[str, str]:
    """Who sits in seat 1 of the first game: the engine due it; in a clash the one with
    the stronger claim (the same seat twice running, then more first games in the other
    seat); else the tie-break."""
    ha, hb = history[a], history[b]
    due_a, due_b = _due(ha), _due(hb)
    if due_a is not None and due_a != due_b:
        return (a, b) if due_a == 1 else (b, a)
    if due_b is not None and due_a is None:
        return (b, a) if due_b == 1 else (a, b)

    def claim(h: History) -> tuple[int, int]:
        want = _due(h)
        if want is None:
            return (0, 0)
        return (_twice(h), h.firsts.count(3 - want) - h.firsts.count(want))

    if due_a is not None and claim(ha) != claim(hb):
        favoured = a if claim(ha) > claim(hb) else b
        other = b if favoured == a else a
        return (favoured, other) if due_a == 1 else (other, favoured)
    flip = derive(tie_seed, json.dumps(["seats", a, b], ensure_ascii=False)) & 1
    return (a, b) if flip else (b, a)


@dataclass(frozen=True)
class Round:
    number: int
    pairing: Pairing
    games: tuple[ScheduledGame, ...]


class SwissSchedule:
    """A Swiss tournament as a results-aware schedule (arbiter.runs.schedule.Schedule).

    Built from the results already stored (`results`: game id -> winning seat), it
    replays the pairings of the rounds those complete, then hands out the games of the
    first round not complete, and pairs the next round once all of them are settled.
    """

    def __init__(
        self,
        name: str,
        engines: Collection[str],
        rounds: int,
        variant: Variant,
        openings: Openings,
        seed: int,
        results: Mapping[str, int],
    ) -> None:
        self.name = name
        self.engines = sorted(engines)
        self.rounds = rounds
        self.variant = variant
        self.openings = openings
        self.seed = seed
        self.results = dict(results)  # game id: the seat that won
        self.played: list[Round] = []  # rounds paired so far, in order
        self.problem = ""  # why no further round can be paired
        self._pending: deque[ScheduledGame] = deque()
        self._advance()

    @property
    def pairs_per_round(self) -> int:
        return len(self.engines) // 2

    @property
    def total(self) -> int:
        """Games in the whole tournament."""
        return 2 * self.pairs_per_round * self.rounds

    def done(self) -> int:
        """Games of the rounds paired so far that are stored."""
        return sum(g.game_id in self.results for r in self.played for g in r.games)

    def next(self) -> ScheduledGame | Wait | None:
        if self._pending:
            return self._pending.popleft()
        if self.played and not self._complete(self.played[-1]):
            return WAIT
        self._advance()
        if self._pending:
            return self._pending.popleft()
        if self.problem:
            raise Unpairable(self.problem)
        return None

    def settled(self, game: ScheduledGame, record: GameRecord) -> None:
        self.results[game.game_id] = winner_seat(record)

    def _complete(self, round_: Round) -> bool:
        return all(g.game_id in self.results for g in round_.games)

    def _advance(self) -> None:
        """Pair rounds while the last one paired is complete; its missing games become
        the games to hand out."""
        while not self._pending and len(self.played) < self.rounds and not self.problem:
            if self.played and not self._complete(self.played[-1]):
                return
            number = len(self.played) + 1
            try:
                pairing = pair_round(
                    self.engines, self.history(), derive(self.seed, f"swiss round {number}")
                )
            except Unpairable as exc:
                last = number - 1
                self.problem = (
                    f"Swiss round {number} cannot be paired: {exc}; the tournament"
                    f" ends after round {last} (set rounds = {last})"
                )
                return
            games: list[ScheduledGame] = []
            first = 2 * self.pairs_per_round * (number - 1) + 1
            for index, pair in enumerate(pairing.pairs):
                games += pair_games(
                    self.name,
                    number,
                    pair,
                    first + 2 * index,
                    self.variant,
                    self.openings,
                    seed=self.seed,
                )
            round_ = Round(number, pairing, tuple(games))
            self.played.append(round_)
            self._pending.extend(g for g in games if g.game_id not in self.results)

    def history(self) -> dict[str, History]:
        """Each engine's points, opponents, byes and seats over the rounds paired (a pair
        scores once both its games are stored)."""
        out = {e: History() for e in self.engines}
        for round_ in self.played:
            for pair, points in self._pair_points(round_):
                for engine, other in (pair, pair[::-1]):
                    out[engine].opponents.add(other)
                out[pair[0]].firsts.append(1)
                out[pair[1]].firsts.append(2)
                if points is not None:
                    out[pair[0]].points += points
                    out[pair[1]].points += 1 - points
            if round_.pairing.bye is not None:
                out[round_.pairing.bye].byes += 1
                out[round_.pairing.bye].points += BYE_POINTS
        return out

    def _pair_points(self, round_: Round) -> list[tuple[tuple[str, str], Fraction | None]]:
        """Each pair of a round with the pair points of its first-game seat 1 (None
        while a game is missing)."""
        out: list[tuple[tuple[str, str], Fraction | None]] = []
        for index, pair in enumerate(round_.pairing.pairs):
            games = round_.games[2 * index : 2 * index + 2]  # the pair's two games
            if any(g.game_id not in self.results for g in games):
                out.append((pair, None))
                continue
            wins = sum(g.engines[self.results[g.game_id] - 1] == pair[0] for g in games)
            out.append((pair, Fraction(wins, 2)))
        return out

    def standings(self) -> list[SwissRow]:
        """Swiss points and tie-breaks over the pairs scored so far (module docstring)."""
        history = self.history()
        points = {e: history[e].points for e in self.engines}
        buchholz = dict.fromkeys(self.engines, Fraction(0))
        berger = dict.fromkeys(self.engines, Fraction(0))
        record = {e: [0, 0, 0] for e in self.engines}  # pairs won, split, lost
        byes: dict[str, list[int]] = {e: [] for e in self.engines}
        before = dict.fromkeys(self.engines, Fraction(0))  # points before each round
        finished = sum(self._complete(r) for r in self.played)
        for round_ in self.played:
            scored = dict.fromkeys(self.engines, Fraction(0))
            for (a, b), got in self._pair_points(round_):
                if got is None:
                    continue
                for engine, other, own in ((a, b, got), (b, a, 1 - got)):
                    buchholz[engine] += points[other]
                    berger[engine] += own * points[other]
                    record[engine][0 if own == 1 else 1 if own else 2] += 1
                    scored[engine] = own
            bye = round_.pairing.bye
            if bye is not None:
                byes[bye].append(round_.number)
                later = max(0, finished - round_.number)
                buchholz[bye] += before[bye] + Fraction(later, 2)
                scored[bye] = BYE_POINTS
            for engine in self.engines:
                before[engine] += scored[engine]
        rows = [
            SwissRow(0, e, points[e], buchholz[e], berger[e], tuple(record[e]), tuple(byes[e]))
            for e in self.engines
        ]
        rows.sort(key=lambda r: (-r.points, -r.buchholz, -r.berger, r.name))
        return [replace(r, rank=rank) for rank, r in enumerate(rows, 1)]

    def rounds_done(self) -> int:
        return sum(self._complete(r) for r in self.played)


@dataclass(frozen=True)
class SwissRow:
    rank: int
    name: str
    points: Fraction
    buchholz: Fraction
    berger: Fraction
    pairs: tuple[int, ...]  # won, split, lost
    byes: tuple[int, ...]  # the rounds of its byes


def _num(x: Fraction) -> str:
    return f"{float(x):g}"


def swiss_table(schedule: SwissSchedule) -> str:
    """The Swiss standings as text, with a line saying how far the rounds are."""
    rows = [
        [
            r.rank,
            r.name,
            _num(r.points),
            _num(r.buchholz),
            _num(r.berger),
            "-".join(map(str, r.pairs)),
            ", ".join(map(str, r.byes)) or "-",
        ]
        for r in schedule.standings()
    ]
    headers = ["rank", "engine", "points", "Buchholz", "S-B", "pairs W-D-L", "bye"]
    text = tabulate(
        rows,
        headers,
        tablefmt="simple",
        disable_numparse=True,
        colalign=("right", "left", *["right"] * 5),
    )
    done = schedule.rounds_done()
    line = f"Swiss: {done} of {schedule.rounds} rounds complete (pair points: 1 a pair won"
    line += " twice, 1/2 split, 0 lost twice; a bye 1)"
    if schedule.problem:
        line += f"\n{schedule.problem}"
    return f"{text}\n{line}"


def swiss_json(schedule: SwissSchedule) -> dict[str, object]:
    return {
        "rounds": schedule.rounds,
        "rounds_complete": schedule.rounds_done(),
        "standings": [
            {
                "rank": r.rank,
                "name": r.name,
                "points": float(r.points),
                "buchholz": float(r.buchholz),
                "sonneborn_berger": float(r.berger),
                "pairs": dict(zip(("won", "split", "lost"), r.pairs, strict=True)),
                "byes": list(r.byes),
            }
            for r in schedule.standings()
        ],
        "pairings": [
            {"round": r.number, "pairs": [list(p) for p in r.pairing.pairs], "bye": r.pairing.bye}
            for r in schedule.played
        ],
        "problem": schedule.problem or None,
    }
