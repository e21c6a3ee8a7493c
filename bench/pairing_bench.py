#!/usr/bin/env python3
"""Round-robin, Swiss and adaptive pairing at equal game budgets, on simulated pools.

Run: python bench/pairing_bench.py [--quick] [--trials T] [--big-trials T] [--stop-budget G]
[--jobs J].

Pure: the real schedules (the round-robin's fixed sequence, `SwissSchedule`,
`AdaptiveSchedule`) and the real joint fit (`arbiter.results.ratings.fit`), against
outcomes drawn from known strengths; no process is started. Each trial draws a pool:
engines whose neighbours in strength are 10-100 Elo apart (uniformly), seat 1 worth 20
Elo. After each run the fit's order is compared with the truth: is the top 1 right, are
the top 3 right (the first three, in order), and the Spearman correlation of the whole
order. Budgets are counted in games; a round-robin round of N engines is N(N-1) games.

Then the stop rule: adaptive runs with `until = "top:3"` at 95% confidence and a large
budget, the games they used and how often the top 3 they stopped on was wrong; beside
them the same runs stopped by a naive rule that looks at fixed-sample 95% intervals
after every batch (each "A above B" once its interval excludes a tie), on the usual
pools, on close ones (neighbours 2-20 Elo apart), and for the winner of a pool whose
two best are equally strong, where every stop is a false claim and repeated looks bite.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from arbiter.results.ratings import fit
from arbiter.results.records import GameRecord, Termination
from arbiter.results.store import ResultRow
from arbiter.rules import Variant
from arbiter.runs.adaptive import AdaptiveSchedule, Board, StopRule, questions
from arbiter.runs.schedule import (
    WAIT,
    Fixed,
    Format,
    Openings,
    Schedule,
    ScheduledGame,
    Unschedulable,
    tournament_games,
)
from arbiter.runs.swiss import SwissSchedule

SEAT_ELO = 20.0
VARIANT = Variant(8, 11, True)
NO_OPENINGS = Openings()


def draw_pool(
    n: int,
    rng: random.Random,
    gaps: tuple[float, float] = (10.0, 100.0),
) -> dict[str, float]:
    elo, x = {}, 0.0
    names = [f"e{i:02}" for i in range(n)]
    rng.shuffle(names)  # the file's order says nothing about strength
    for name in names:
        elo[name] = x
        x += rng.uniform(*gaps)
    return elo


def record(game: ScheduledGame, seat: int) -> GameRecord:
    return GameRecord(
        game_id=game.game_id,
        variant={},
        seat1=game.engines[0],
        seat2=game.engines[1],
        tc={},
        started="",
        termination=Termination.RESIGN,
        winner=game.engines[seat - 1],
    )


def play(
    schedule: Schedule,
    elo: dict[str, float],
    rng: random.Random,
    look: Callable[[list[ResultRow]], bool] | None = None,
) -> list[ResultRow]:
    """Play a schedule to its end, a batch (what it hands out before waiting) at a time;
    `look(results)` is asked at every batch boundary and stops the run when true."""
    rows: list[ResultRow] = []
    flight: list[ScheduledGame] = []

    def settle() -> None:
        for game in flight:
            a, b = game.engines
            p = 1.0 / (1.0 + 10.0 ** (-(elo[a] - elo[b] + SEAT_ELO) / 400.0))
            seat = 1 if rng.random() < p else 2
            schedule.settled(game, record(game, seat))
            rows.append(ResultRow(game.game_id, game.round, a, b, seat))
        flight.clear()

    while True:
        try:
            game = schedule.next()
        except Unschedulable:  # a late Swiss round that cannot be paired: as far as it got
            game = None
        if game is None:
            settle()
            return rows
        if game is WAIT:
            settle()
            if look is not None and look(rows):
                return rows
            continue
        flight.append(game)


def order_of(names: list[str], rows: list[ResultRow]) -> list[str]:
    index = {e: i for i, e in enumerate(names)}
    n = len(names)
    wins, losses = np.zeros((n, n), dtype=np.int64), np.zeros((n, n), dtype=np.int64)
    for row in rows:
        (wins if row.winner_seat == 1 else losses)[index[row.seat1], index[row.seat2]] += 1
    result = fit(names, wins, losses)
    return [names[i] for i in result.order()]


def spearman(order: list[str], truth: list[str]) -> float:
    n = len(truth)
    rank = {e: i for i, e in enumerate(truth)}
    d2 = sum((i - rank[e]) ** 2 for i, e in enumerate(order))
    return 1.0 - 6.0 * d2 / (n * (n * n - 1))


@dataclass
class Outcome:
    top1: bool
    top3: bool
    rho: float
    games: int
    seconds: float


def judge(names: list[str], elo: dict[str, float], rows: list[ResultRow], t0: float) -> Outcome:
    truth = sorted(names, key=lambda e: -elo[e])
    order = order_of(names, rows)
    return Outcome(
        order[0] == truth[0],
        order[:3] == truth[:3],
        spearman(order, truth),
        len(rows),
        time.perf_counter() - t0,
    )


def run_format(fmt: str, n: int, budget: int, seed: int) -> Outcome:
    rng = random.Random(seed)
    elo = draw_pool(n, rng)
    names = sorted(elo)
    t0 = time.perf_counter()
    schedule: Schedule
    if fmt == "round-robin":
        rounds = budget // (n * (n - 1))
        schedule = Fixed(tournament_games("b", names, Format.ROUND_ROBIN, rounds, VARIANT))
    elif fmt == "swiss":
        rounds = min(budget // (2 * (n // 2)), n - 1)
        schedule = SwissSchedule("b", names, rounds, VARIANT, NO_OPENINGS, seed, {})
    else:  # "adaptive": games for the whole order; "adaptive top:3": for the top 3
        rule = StopRule(3, 0.95) if fmt == "adaptive top:3" else None
        schedule = AdaptiveSchedule("b", names, budget, VARIANT, NO_OPENINGS, seed, [], rule)
    rows = play(schedule, elo, random.Random(seed * 7 + 1))
    return judge(names, elo, rows, t0)


def naive_settled(names: list[str], rows: list[ResultRow], top: int) -> bool:
    """Each statement of the rule at a fixed-sample 95% interval, looked at every batch."""
    board = Board(names, rows)
    if int(board.games.min()) < 4 or not board.fit.converged:
        return False
    return all(
        float(board.theta[a] - board.theta[b]) > 1.96 * board.sd(a, b)
        for a, b in questions(board.order, top)
    )


def run_stop(rule: str, n: int, budget: int, seed: int, pool: str = "wide") -> Outcome:
    """An adaptive run with a stop rule: top 3 on a pool 10-100 Elo apart ("wide") or
    2-20 apart ("close"); or top 1 where the two best are equally strong ("tie"), so
    that any stop claims something false."""
    rng = random.Random(seed)
    elo = draw_pool(n, rng, (2.0, 20.0) if pool == "close" else (10.0, 100.0))
    top = 3
    if pool == "tie":
        best, second = sorted(elo, key=lambda e: -elo[e])[:2]
        elo[second] = elo[best]
        top = 1
    names = sorted(elo)
    t0 = time.perf_counter()
    # Both schedule for the rule; the naive run also stops at its first naive look
    # that holds (nearly always before the anytime bound would).
    schedule = AdaptiveSchedule(
        "b", names, budget, VARIANT, NO_OPENINGS, seed, [], StopRule(top, 0.95)
    )

    def naive(rows: list[ResultRow]) -> bool:
        return naive_settled(names, rows, top)

    rows = play(schedule, elo, random.Random(seed * 7 + 1), naive if rule == "naive" else None)
    return judge(names, elo, rows, t0)


def summary(label: str, outcomes: list[Outcome]) -> str:
    k = len(outcomes)
    top1 = sum(o.top1 for o in outcomes) / k
    top3 = sum(o.top3 for o in outcomes) / k
    se3 = (top3 * (1 - top3) / k) ** 0.5
    rho = statistics.fmean(o.rho for o in outcomes)
    games = statistics.fmean(o.games for o in outcomes)
    secs = statistics.fmean(o.seconds for o in outcomes)
    return (
        f"{label:<34} {k:>4} {games:>8.0f} {100 * top1:>6.1f}% {100 * top3:>6.1f}%"
        f" ±{100 * se3:>4.1f} {rho:>7.4f} {secs:>7.2f}s"
    )


HEADER = (
    f"{'format @ budget (games)':<34} {'runs':>4} {'games':>8} {'top 1':>7} {'top 3':>7}"
    f" {'(se)':>5} {'Spearman':>8} {'time':>8}"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=200, help="pools of 16 engines")
    parser.add_argument("--big-trials", type=int, default=30, help="pools of 64 engines")
    parser.add_argument("--stop-trials", type=int, default=100, help="stop-rule runs")
    parser.add_argument(
        "--stop-budget", type=int, default=1920, help="games a stop-rule run may play"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--quick", action="store_true", help="a few small runs (a smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.big_trials, args.stop_trials, args.stop_budget = 1, 0, 1, 480

    plans: list[tuple[str, int, list[tuple[str, int]]]] = []
    if args.trials:
        plans.append(
            (
                f"{16} engines",
                16,
                [
                    ("adaptive", 120),
                    ("adaptive top:3", 120),
                    ("swiss", 120),
                    ("round-robin", 240),
                    ("adaptive", 240),
                    ("adaptive top:3", 240),
                    ("swiss", 240),
                    ("round-robin", 480),
                ],
            )
        )
    if args.big_trials:
        plans.append(
            (
                f"{64} engines",
                64,
                [
                    ("adaptive", 2016),
                    ("adaptive top:3", 2016),
                    ("swiss", 2016),
                    ("round-robin", 4032),
                ],
            )
        )
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for title, n, runs in plans:
            trials = args.trials if n == 16 else args.big_trials
            print(f"\n{title}, neighbours 10-100 Elo apart, {trials} pools")
            print(HEADER)
            for fmt, budget in runs:
                seeds = range(1, trials + 1)
                outcomes = list(
                    pool.map(run_format, [fmt] * trials, [n] * trials, [budget] * trials, seeds)
                )
                print(summary(f"{fmt} @ {budget}", outcomes), flush=True)
        k = args.stop_trials
        for kind in ("wide", "close", "tie") if k else ():
            what = {
                "wide": 'top:3", 16 engines 10-100 Elo apart',
                "close": 'top:3", 16 engines 2-20 Elo apart',
                "tie": 'top:1", 16 engines, the best two equally strong',
            }[kind]
            print(f'\nStop rule until = "{what}, at 95%, budget {args.stop_budget}, {k} pools')
            print(HEADER)
            for rule in ("anytime", "naive"):
                outcomes = list(
                    pool.map(
                        run_stop,
                        [rule] * k,
                        [16] * k,
                        [args.stop_budget] * k,
                        range(1001, 1001 + k),
                        [kind] * k,
                    )
                )
                stopped = [o for o in outcomes if o.games < args.stop_budget]
                wrong = len(stopped) if kind == "tie" else sum(not o.top3 for o in stopped)
                print(summary(f"adaptive, {rule} stop", outcomes))
                print(
                    f"  stopped early in {len(stopped)} of {k} runs; of those, wrong in"
                    f" {wrong}"
                    + (
                        f"; median games {statistics.median(o.games for o in stopped):.0f}"
                        if stopped
                        else ""
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
