"""SPSA tuning: a format that plays perturbed parameter values and moves them (pure).

Simultaneous perturbation stochastic approximation, as fishtest and OpenBench tune chess
engines. The tuned values theta start at each parameter's `start`. Iteration k (1-based)
draws a sign flip_i = +-1 per parameter from the seed, plays theta+ = theta + c_k flip
against theta- = theta - c_k flip (clipped to each range) in one seat-swapped pair on one
opening, and moves theta by a_k / c_k * result * flip, where `result` is theta+'s wins
less its losses over the pair (-2 to 2). With other engines in the file, theta+ and
theta- each play a seat-swapped pair against the same one of them instead (the others
in turn), on one opening, and `result` is theta+'s score less theta-'s.

The gains follow fishtest: c_k = c / k^gamma, a_k = a / (A + k)^alpha with alpha = 0.602,
gamma = 0.101 and A = 10% of the iterations; each parameter gives its perturbation at
the last iteration (`step`, c_end; default a tenth of its range) and its learning rate
there (`rate`, r_end; default 0.1), from which c = c_end N^gamma and
a = r_end c_end^2 (A + N)^alpha for N iterations.

Iterations are played in batches of `batch` (fishtest's fixed batch): every iteration
of a batch is played at the values the batches before it left, so a batch's games may be
played at once, and the updates of a batch are applied in iteration order once all its
games are stored. The values are therefore a pure function of the stored results and
the seed: a run killed at any point and resumed recomputes the same trajectory, and
hands out only the games of the batch in play that are not stored.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from arbiter.definitions import Key, Keys
from arbiter.engines.params import as_pairs, fill, shown
from arbiter.engines.process import EngineSpec
from arbiter.errors import ConfigError
from arbiter.results.records import GameRecord
from arbiter.results.sprt import Sprt, Verdict, expected_pairs, judge, test_from
from arbiter.results.store import ResultRow
from arbiter.rules import Variant
from arbiter.runs.schedule import (
    WAIT,
    Openings,
    ScheduledGame,
    Wait,
    derive,
    game_id,
    game_seed,
    winner_seat,
)
from arbiter.text import toml_value

ALPHA = 0.602
GAMMA = 0.101
A_SHARE = 0.1  # A, as a share of the iterations
DEFAULT_RATE = 0.1  # r_end: the learning rate at the last iteration
DEFAULT_STEP_SHARE = 0.1  # c_end: the perturbation at the last iteration, of the range

Values = tuple[tuple[str, float], ...]  # parameter values as a scheduled game carries them


@dataclass(frozen=True)
class Param:
    """One tuned parameter: its range, start, and the perturbation and rate at the end."""

    name: str
    low: float
    high: float
    start: float
    step: float  # c_end
    rate: float = DEFAULT_RATE  # r_end
    integer: bool = False  # filled rounded to a whole number

    def clip(self, value: float) -> float:
        return min(self.high, max(self.low, value))

    def played(self, value: float) -> float:
        """The value a command gets: clipped, and rounded for an integer parameter."""
        value = self.clip(value)
        return float(round(value)) if self.integer else value


@dataclass(frozen=True)
class TuneSettings:
    """`[tune]`: the engine, its parameters, the batch and the confirming test."""

    engine: str
    params: tuple[Param, ...]
    batch: int = 1
    opponents: tuple[str, ...] = ()  # the other engines of the file, if any
    confirm: Sprt | None = None  # the pair SPRT of the tuned values against the start

    @property
    def per_iteration(self) -> int:
        """Games an iteration plays: one pair, or one pair each for theta+ and theta-."""
        return 4 if self.opponents else 2

    def seats(self) -> tuple[str, str]:
        """The names theta+ and theta- play under: the engine's own name against other
        engines; against each other the two seats need names of their own."""
        if self.opponents:
            return self.engine, self.engine
        return plus_name(self.engine), minus_name(self.engine)

    def conditions(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "batch": self.batch,
            "confirm": None if self.confirm is None else self.confirm.conditions(),
            "params": {
                p.name: [p.low, p.high, p.start, p.step, p.rate, p.integer] for p in self.params
            },
        }


def confirm_pairs(budget: int, test: Sprt | None) -> int:
    """The confirming test's cap: the pairs it is expected to need (Wald's average
    sample number), or as many games as the tune, whichever is more. A clear verdict
    comes long before it; a test of values about as strong as the start runs to it."""
    return 0 if test is None else max(budget // 2, expected_pairs(test))


def plus_name(engine: str) -> str:
    return f"{engine}+"


def minus_name(engine: str) -> str:
    return f"{engine}-"


def tuned_name(engine: str) -> str:
    """The seat of the tuned values in the confirming test."""
    return f"{engine}:tuned"


def start_name(engine: str) -> str:
    """The seat of the start values in the confirming test."""
    return f"{engine}:start"


@dataclass(frozen=True)
class Gains:
    """The gain sequences of a run of `iterations` (module docstring)."""

    iterations: int

    @property
    def big_a(self) -> float:
        return A_SHARE * self.iterations

    def c(self, param: Param, k: int) -> float:
        return float(param.step * self.iterations**GAMMA / k**GAMMA)

    def a(self, param: Param, k: int) -> float:
        a = param.rate * param.step**2 * (self.big_a + self.iterations) ** ALPHA
        return float(a / (self.big_a + k) ** ALPHA)


def flips(seed: int, k: int, params: Sequence[Param]) -> list[int]:
    """Iteration k's perturbation signs, one per parameter, from the seed."""
    return [1 if derive(seed, f"spsa {k} {p.name}") & 1 else -1 for p in params]


@dataclass(frozen=True)
class Iteration:
    """One iteration's games and values."""

    k: int
    plus: dict[str, float]
    minus: dict[str, float]
    flip: list[int]
    games: tuple[ScheduledGame, ...]
    plus_ids: frozenset[str]  # the games theta+ plays (against other engines)


class TuneSchedule:
    """An SPSA run as a results-aware schedule (arbiter.runs.schedule.Schedule)."""

    def __init__(
        self,
        name: str,
        settings: TuneSettings,
        budget: int,
        variant: Variant,
        openings: Openings,
        seed: int,
        rows: Sequence[ResultRow],
    ) -> None:
        self.name = name
        self.settings = settings
        self.budget = budget
        self.variant = variant
        self.openings = openings
        self.seed = seed
        self.iterations = budget // settings.per_iteration
        self.gains = Gains(max(1, self.iterations))
        self.results: dict[str, ResultRow] = {row.game_id: row for row in rows}
        self.theta = {p.name: p.start for p in settings.params}
        self.trajectory: list[dict[str, float]] = [dict(self.theta)]  # after each batch
        self.iteration = 0  # iterations whose updates are applied
        # The confirming test, in batches of `batch` pairs, judged once each is stored.
        self.cap = confirm_pairs(budget, settings.confirm)
        self.confirmed = 0  # confirming pairs counted
        self.counts = [0, 0, 0]  # the tuned values: pairs lost twice, split, won twice
        self.verdict: Verdict | None = None
        self._pending: deque[ScheduledGame] = deque()
        self._batch: list[Iteration] = []
        self._advance()

    # The Schedule protocol.

    def next(self) -> ScheduledGame | Wait | None:
        if self._pending:
            return self._pending.popleft()
        if not self._batch:
            return None
        if not self._complete():
            return WAIT
        self._advance()
        if self._pending:
            return self._pending.popleft()
        return None

    def settled(self, game: ScheduledGame, record: GameRecord) -> None:
        self.results[game.game_id] = ResultRow(
            game.game_id, game.round, game.engines[0], game.engines[1], winner_seat(record)
        )

    # The run's state.

    @property
    def total(self) -> int:
        """The tune's games, and the confirming test's at most."""
        return self.iterations * self.settings.per_iteration + 2 * self.cap

    @property
    def over(self) -> bool:
        return self.iteration >= self.iterations and not self._confirming()

    def done(self) -> int:
        last = self.iterations + self.cap
        return sum(1 for row in self.results.values() if row.round <= last)

    def _confirming(self) -> bool:
        """Whether the confirming test still has pairs to play."""
        if self.settings.confirm is None or self.confirmed >= self.cap:
            return False
        return self.verdict is None or self.verdict.result not in ("H0", "H1")

    def current(self) -> dict[str, float]:
        """The tuned values after the iterations applied so far."""
        return {p.name: p.played(self.theta[p.name]) for p in self.settings.params}

    def _complete(self) -> bool:
        return all(g.game_id in self.results for it in self._batch for g in it.games)

    def _advance(self) -> None:
        """Apply every complete batch in order, then hand out the games of the next one
        not stored."""
        while True:
            if self._batch:
                if not self._complete():
                    break
                if self._batch[0].k > self.iterations:
                    for it in self._batch:
                        self._count(it)
                    test = self.settings.confirm
                    assert test is not None
                    self.verdict = judge(test, self.counts, 0, 0)
                else:
                    for it in self._batch:
                        self._update(it)
                    self.trajectory.append(dict(self.theta))
                self._batch = []
            if self.iteration < self.iterations:
                last = min(self.iterations, self.iteration + self.settings.batch)
                self._batch = [self._make(k) for k in range(self.iteration + 1, last + 1)]
            elif self._confirming():
                last = min(self.cap, self.confirmed + self.settings.batch)
                self._batch = [self._confirm(j) for j in range(self.confirmed + 1, last + 1)]
            else:
                return
        self._pending = deque(
            g for it in self._batch for g in it.games if g.game_id not in self.results
        )

    def _update(self, it: Iteration) -> None:
        result = self._result(it)
        for p, f in zip(self.settings.params, it.flip, strict=True):
            c, a = self.gains.c(p, it.k), self.gains.a(p, it.k)
            self.theta[p.name] = p.clip(self.theta[p.name] + a / c * result * f)
        self.iteration = it.k

    def _count(self, it: Iteration) -> None:
        """A confirming pair: how many of its two games the tuned values won."""
        tuned = tuned_name(self.settings.engine)
        won = 0
        for g in it.games:
            row = self.results[g.game_id]
            won += (row.seat1 if row.winner_seat == 1 else row.seat2) == tuned
        self.counts[won] += 1
        self.confirmed = it.k - self.iterations

    def _confirm(self, j: int) -> Iteration:
        """The confirming test's pair j: the tuned values against the start values, on
        one opening (an Iteration whose k follows the tune's)."""
        k = self.iterations + j
        key = json.dumps(["spsa-confirm", j], ensure_ascii=False)
        opening = self.openings.for_pair(self.variant, 0, k, key)
        tuned = as_pairs(self.current())
        start = as_pairs({p.name: p.played(p.start) for p in self.settings.params})
        a, b = tuned_name(self.settings.engine), start_name(self.settings.engine)
        games = []
        for n, (seats, params) in enumerate((((a, b), (tuned, start)), ((b, a), (start, tuned)))):
            gid = game_id(self.name, k, *seats)
            games.append(
                ScheduledGame(
                    number=self.total - 2 * self.cap + 2 * j - 1 + n,
                    game_id=gid,
                    engines=seats,
                    round=k,
                    pair_key=key,
                    opening=opening,
                    seed=game_seed(self.seed, gid),
                    params=params,
                )
            )
        return Iteration(k, {}, {}, [], tuple(games), frozenset())

    def _result(self, it: Iteration) -> float:
        """theta+'s wins less its losses over the iteration's games (less theta-'s
        score against other engines)."""
        total = 0
        plus_seat = self.settings.seats()[0]
        for g in it.games:
            row = self.results[g.game_id]
            winner = row.seat1 if row.winner_seat == 1 else row.seat2
            if self.settings.opponents:
                mine = winner == self.settings.engine
                sign = 1 if g.game_id in it.plus_ids else -1
                total += sign * (1 if mine else -1)
            else:
                total += 1 if winner == plus_seat else -1
        return total / 2 if self.settings.opponents else float(total)

    def _make(self, k: int) -> Iteration:
        params = self.settings.params
        flip = flips(self.seed, k, params)
        c = {p.name: self.gains.c(p, k) for p in params}
        plus = {
            p.name: p.played(self.theta[p.name] + c[p.name] * f)
            for p, f in zip(params, flip, strict=True)
        }
        minus = {
            p.name: p.played(self.theta[p.name] - c[p.name] * f)
            for p, f in zip(params, flip, strict=True)
        }
        games = self._games(k, as_pairs(plus), as_pairs(minus))
        plus_ids = frozenset(g.game_id for g in games[: len(games) // 2])
        return Iteration(k, plus, minus, flip, tuple(games), plus_ids)

    def _games(self, k: int, values_plus: Values, values_minus: Values) -> list[ScheduledGame]:
        """Iteration k's games: its pair (or pairs) on one opening; theta+'s first."""
        key = json.dumps(["spsa", k], ensure_ascii=False)
        opening = self.openings.for_pair(self.variant, 0, k, key)
        first = (k - 1) * self.settings.per_iteration + 1
        a, b = self.settings.seats()
        if self.settings.opponents:
            other = self.settings.opponents[(k - 1) % len(self.settings.opponents)]
            pairs = [
                ((a, other), values_plus, 0),
                ((b, other), values_minus, 1),
            ]
        else:
            pairs = [((a, b), values_plus, 0)]
        games: list[ScheduledGame] = []
        params: tuple[Values, Values]
        for (me, them), mine, again in pairs:
            for seats in ((me, them), (them, me)):
                gid = game_id(self.name, k, seats[0], seats[1], again)
                if self.settings.opponents:
                    params = (mine, ()) if seats[0] == me else ((), mine)
                else:
                    params = (
                        (values_plus, values_minus)
                        if seats[0] == a
                        else (values_minus, values_plus)
                    )
                games.append(
                    ScheduledGame(
                        number=first + len(games),
                        game_id=gid,
                        engines=seats,
                        round=k,
                        pair_key=f"{key}-{again}",
                        opening=opening,
                        seed=game_seed(self.seed, gid),
                        params=params,
                    )
                )
        return games


def tune_json(schedule: TuneSchedule) -> dict[str, object]:
    """`tune` in `tournament status --json`: the current values, iterations and games,
    and the confirming test (null without one; its verdict once a batch is judged)."""
    test = schedule.settings.confirm
    confirm = None
    if test is not None:
        verdict = schedule.verdict
        confirm = {
            **test.conditions(),
            "pairs": schedule.confirmed,
            "verdict": None if verdict is None else verdict.as_json(),
            "state": "not started" if verdict is None else verdict.state(schedule.cap),
        }
    return {
        "engine": schedule.settings.engine,
        "params": schedule.current(),
        "start": {p.name: p.start for p in schedule.settings.params},
        "iteration": schedule.iteration,
        "iterations": schedule.iterations,
        "games": schedule.done(),
        "budget": schedule.iterations * schedule.settings.per_iteration,
        "over": schedule.over,
        "confirm": confirm,
        # Each parameter's value at the start and after each batch (the report plots it).
        "trajectory": {
            p.name: [point[p.name] for point in schedule.trajectory]
            for p in schedule.settings.params
        },
        "ranges": {p.name: [p.low, p.high] for p in schedule.settings.params},
    }


def tune_lines(schedule: TuneSchedule) -> list[str]:
    """What an SPSA run shows beside the table: its progress and the current values."""
    values = schedule.current()
    shown_values = ", ".join(
        f"{p.name} = {shown(round(values[p.name], 4))} (start {shown(p.start)},"
        f" range {shown(p.low)}-{shown(p.high)})"
        for p in schedule.settings.params
    )
    tuning = schedule.iteration < schedule.iterations
    games = min(schedule.done(), schedule.iterations * schedule.settings.per_iteration)
    lines = [
        f"SPSA tune of {schedule.settings.engine}: iteration {schedule.iteration} of"
        f" {schedule.iterations}, {games} games ({'in progress' if tuning else 'done'})",
        f"Tuned values: {shown_values}",
    ]
    test = schedule.settings.confirm
    if test is not None:
        head = (
            f"Confirming SPRT of the tuned values against the start (elo0 = {test.elo0:g},"
            f" elo1 = {test.elo1:g}, at most {schedule.cap} pairs): "
        )
        verdict = schedule.verdict
        lines.append(
            head
            + (
                ("waiting for the tune" if tuning else "not started")
                if verdict is None
                else verdict.line(schedule.cap)
            )
        )
    return lines


# The [tune] table's keys, and each [tune.params.NAME] table's, in the reference's order.
TUNE = Keys(
    Key("engine", str, "the engine whose parameters are tuned: one of the file's engines"),
    Key(
        "params",
        dict,
        "one `[tune.params.NAME]` table per parameter, NAME a `{NAME}` placeholder of the"
        " engine's command",
        type_text="tables",
    ),
    Key(
        "batch",
        int,
        "iterations played at the same values, at once if the run has the slots; the"
        " values move once a batch is stored (part of the conditions: the trajectory"
        " depends on it)",
        default=1,
        low=1,
        high=1000,
    ),
    Key(
        "confirm",
        dict,
        "`{ elo0 = 0, elo1 = 10 }`: once the budget is spent, a pair SPRT of the tuned"
        " values against the start values in the same store",
        type_text="inline table",
    ),
    sort=False,
)
PARAM = Keys(
    Key("min", float, "the lowest value played"),
    Key("max", float, "the highest value played"),
    Key("start", float, "where the tune starts, within min and max"),
    Key(
        "step",
        float,
        "the perturbation at the last iteration (fishtest's c_end), above 0",
        shown="a tenth of max - min",
    ),
    Key(
        "rate",
        float,
        "the learning rate at the last iteration (fishtest's r_end), above 0",
        default=DEFAULT_RATE,
    ),
    sort=False,
)
_PARAM_HINT = "e.g. [tune.params.C] with min = 0.1, max = 2.0, start = 1.0"


def read_tune(table: Any, where: str) -> tuple[str, tuple[Param, ...], int, Sprt | None]:
    """`[tune]`'s engine, parameters, batch and confirming test (not yet checked against
    the engines); ConfigError names the key."""
    if not isinstance(table, dict):
        raise ConfigError(
            'format = "spsa" needs a [tune] table',
            where=where,
            hint='add [tune] with engine = "NAME" and [tune.params.X] tables',
        )
    TUNE.refuse_unknown(table, where)
    engine = TUNE.get(table, "engine", where)
    if engine is None:
        raise ConfigError("names no engine", where=f"{where}.engine", hint='engine = "NAME"')
    tables = TUNE.get(table, "params", where)
    if not tables:
        raise ConfigError("no parameters", where=f"{where}.params", hint=_PARAM_HINT)
    params = []
    for name, raw in tables.items():
        here = f"{where}.params.{name}"
        if not isinstance(raw, dict):
            raise ConfigError("must be a table", where=here, hint=_PARAM_HINT)
        PARAM.refuse_unknown(raw, here)
        missing = [k for k in ("min", "max", "start") if k not in raw]
        if missing:
            raise ConfigError(f"{missing[0]} is missing", where=here, hint=_PARAM_HINT)
        low, high, start = (float(PARAM.get(raw, k, here)) for k in ("min", "max", "start"))
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ConfigError(
                f"min {shown(low)} must be below max {shown(high)}",
                where=here,
                hint=_PARAM_HINT,
            )
        if not low <= start <= high:
            raise ConfigError(
                f"start {shown(start)} is outside {shown(low)}-{shown(high)}",
                where=f"{here}.start",
                hint="start within min and max",
            )
        step = PARAM.get(raw, "step", here, DEFAULT_STEP_SHARE * (high - low))
        rate = PARAM.get(raw, "rate", here)
        for key, value in (("step", step), ("rate", rate)):
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(
                    f"must be above 0, not {value}", where=f"{here}.{key}", hint=_PARAM_HINT
                )
        integer = all(type(raw[k]) is int for k in ("min", "max", "start"))
        params.append(Param(name, low, high, start, float(step), float(rate), integer))
    confirm = TUNE.get(table, "confirm", where)
    test = None
    if confirm is not None:
        try:
            test = test_from(confirm)
        except ValueError as exc:
            raise ConfigError(
                str(exc), where=f"{where}.confirm", hint="e.g. confirm = { elo0 = 0, elo1 = 10 }"
            ) from exc
    return engine, tuple(params), TUNE.get(table, "batch", where), test


def tune_field(
    file: Path,
    tuned: tuple[str, tuple[Param, ...], int, Sprt | None],
    engines: dict[str, EngineSpec],
    conditions: dict[str, dict[str, Any]],
) -> tuple[
    TuneSettings, dict[str, EngineSpec], dict[str, dict[str, Any]], dict[str, tuple[str, ...]]
]:
    """The tune's settings and the field it plays: the tuned engine, started with the
    start values where no game gives it its own (the engine check), against the file's
    other engines, or as two seats of its own (theta+ and theta-) when there are none."""
    name, params, batch, confirm = tuned
    where = f"{file}: tune"
    if name not in engines:
        raise ConfigError(
            f"no engine named {toml_value(name)}",
            where=f"{where}.engine",
            hint=f"engines: {', '.join(engines)}",
        )
    # A parameter without a placeholder in the command is told by protocol, during each
    # game's set-up (`set_param`, PROTOCOL.md 5.4).
    template = engines[name].argv
    start = {p.name: p.played(p.start) for p in params}
    started = replace(engines[name], argv=fill(template, start))
    others = tuple(e for e in engines if e != name)
    if others:
        field = {**engines, name: started}
        field_conditions = conditions
        templates = {name: template}
    else:
        plus, minus = plus_name(name), minus_name(name)
        field = {plus: replace(started, name=plus), minus: replace(started, name=minus)}
        field_conditions = {plus: conditions[name], minus: conditions[name]}
        templates = {plus: template, minus: template}
    if confirm is not None:  # the tuned values against the start values
        for seat in (tuned_name(name), start_name(name)):
            field[seat] = replace(started, name=seat)
            field_conditions = {**field_conditions, seat: conditions[name]}
            templates[seat] = template
    settings = TuneSettings(name, params, batch, others, confirm)
    return settings, field, field_conditions, templates
