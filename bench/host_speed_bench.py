#!/usr/bin/env python3
"""Two simulated hosts of different speed on one machine: does calibration see the
difference, and does `scale_tc` make their results agree?

Each host is a CPU cgroup with a quota (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us`):
`--fast` and `--slow` give each host's share of one core (0.5 and 0.2 by default, so
the fast host is 2.5 times as fast). The group's weight is set to the kernel's maximum, so
that the machine's other load does not take the group below its quota: each host gets
its share of a core, not more, however busy the machine is. The engines of a host are
started inside its group (a shell writes itself into the group, then execs the engine),
and everything they start stays there.

Printed:

1. Each host's speed factor (`arbiter calibrate`'s reference workload, its wall time;
   both hosts measured at once, so that the machine's load weighs on both alike), the
   ratio of the two against the ratio of the shares, and the error. Where the engine's
   CPU time is metered too, the share of a core each host got (its wall factor over its
   CPU factor), and the ratio against the shares times the ratio of the CPU factors:
   the cores themselves run at different speeds for the two (a host throttled hard
   finds its caches cold after every pause), which the quota does not set.
2. Per host, a match of a fixed-work engine (the Monte Carlo bot at fixed playouts, told
   nothing of its clock, so that it never shortens its search) against the random bot,
   under one per-move time control: as the file gives it (the slow host's engine runs
   out of time), and scaled by each host's factor as `scale_tc = true` does. The fixed-
   work engine's score with its 95% interval (Wilson), and its losses on time.

Run as a user who may make cgroups (root in a container): python bench/host_speed_bench.py
[--fast 0.5] [--slow 0.2] [--games 12] [--playouts 8192] [--tc st=0.06] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import trio

from arbiter.engines.calibration import Calibration, calibrate, reference_engine
from arbiter.engines.dialect import Dialect, TimeFamily
from arbiter.engines.player import Player
from arbiter.engines.process import BOTS_FOLDER, Deadlines, EngineSpec, open_engine
from arbiter.games.referee import GameSpec, Referee, RefereeConfig
from arbiter.results.records import Termination
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl

PERIOD_US = 20_000  # the quota's period: short, so that a move's time is not rounded to it
MARGIN = 0.01  # seconds over a move's time before it loses (the referee's default is 0.1)
_V1 = Path("/sys/fs/cgroup/cpu")
_V2 = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class QuotaGroup:
    """A CPU cgroup whose processes together get `share` of one core at most."""

    folder: Path
    share: float
    version: int  # cgroup v1 or v2

    def wrap(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """`argv` started inside the group: a shell moves itself in, then execs it."""
        enter = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        return ("sh", "-c", enter, str(self.folder), *argv)

    def throttled(self) -> int:
        """Periods in which the quota held the group back (0: it never bound)."""
        for line in (self.folder / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key in ("nr_throttled",):
                return int(value)
        return 0

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.folder.rmdir()


def _own(controller: str) -> str | None:
    """This process's cgroup path in `controller`'s hierarchy ("" for cgroup v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(",") or (controller == "" and names == ""):
            return path
    return None


def make_group(name: str, share: float) -> QuotaGroup:
    """A quota group here; OSError (with why) where this machine gives none."""
    quota = max(1000, round(share * PERIOD_US))
    tried = []
    own = _own("cpu")
    if own is not None and (_V1 / "cpu.cfs_quota_us").exists():
        folder = _V1 / own.lstrip("/") / name
        try:
            folder.mkdir()
            (folder / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (folder / "cpu.cfs_quota_us").write_text(str(quota))
            (folder / "cpu.shares").write_text("262144")
            return QuotaGroup(folder, quota / PERIOD_US, 1)
        except OSError as exc:
            tried.append(f"cgroup v1 {folder}: {exc.strerror or exc}")
            with contextlib.suppress(OSError):
                folder.rmdir()
    own = _own("")
    if own is not None and (_V2 / "cgroup.controllers").exists():
        parent = _V2 / own.lstrip("/")
        folder = parent / name
        try:
            if "cpu" not in (parent / "cgroup.subtree_control").read_text().split():
                (parent / "cgroup.subtree_control").write_text("+cpu")
            folder.mkdir()
            (folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            (folder / "cpu.weight").write_text("10000")
            return QuotaGroup(folder, quota / PERIOD_US, 2)
        except OSError as exc:
            tried.append(f"cgroup v2 {folder}: {exc.strerror or exc}")
            with contextlib.suppress(OSError):
                folder.rmdir()
    raise OSError("; ".join(tried) or "no CPU cgroup controller is mounted here")


@contextlib.contextmanager
def hosts(fast: float, slow: float) -> Iterator[tuple[QuotaGroup, QuotaGroup]]:
    """Two quota groups, removed on the way out (their processes gone by then)."""
    made: list[QuotaGroup] = []
    try:
        for label, share in (("fast", fast), ("slow", slow)):
            made.append(make_group(f"arbiter-host-{label}-{os.getpid()}", share))
        yield made[0], made[1]
    finally:
        for group in made:
            group.remove()


def meter_apart() -> bool:
    """Whether an engine's CPU meter (its own cpuacct cgroup, on a CPU clock) is kept
    in another hierarchy than the quota's cpu controller, so that metering an engine
    does not take it out of its host's group (cgroup v1 with cpu and cpuacct mounted
    apart, as here)."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    names = [line.split(":", 2)[1].split(",") for line in lines]
    return any("cpu" in n for n in names) and not any("cpu" in n and "cpuacct" in n for n in names)


async def calibrate_on(group: QuotaGroup, moves: int) -> Calibration:
    """The reference workload with its engine inside `group`: on a CPU clock where its
    meter keeps it there, so that the CPU time of the work is known too; else on a wall
    clock (its CPU time then reads 0)."""
    spec = reference_engine()
    clock = ClockMode.CPU if group.version == 1 and meter_apart() else ClockMode.WALL
    spec = replace(spec, argv=group.wrap(spec.argv), clock=clock)
    return await calibrate(moves, round_trips=10, spec=spec)


async def calibrate_both(
    fast: QuotaGroup, slow: QuotaGroup, moves: int
) -> tuple[Calibration, Calibration]:
    """Both hosts measured at once, so that what else the machine runs (its caches,
    its memory bandwidth) weighs on both alike: one after the other, the ratio of the
    factors wandered by 25% here; together, by about 10%."""
    done: dict[str, Calibration] = {}

    async def one(label: str, group: QuotaGroup) -> None:
        done[label] = await calibrate_on(group, moves)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(one, "fast", fast)
        nursery.start_soon(one, "slow", slow)
    return done["fast"], done["slow"]


def _engine(group: QuotaGroup, name: str, *args: str) -> EngineSpec:
    argv = group.wrap((sys.executable, *args))
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    # Told nothing of its clock, the bot searches its full playouts whatever it has left.
    dialect = Dialect(time=TimeFamily.NONE)
    return EngineSpec(argv, name=name, cwd=str(BOTS_FOLDER), env=env, dialect=dialect)


@dataclass(frozen=True)
class Score:
    games: int
    wins: int
    time_losses: int

    def interval(self) -> tuple[float, float]:
        """The fixed-work engine's score with 95% confidence (Wilson)."""
        n, p, z = self.games, self.wins / max(1, self.games), 1.96
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def line(self) -> str:
        low, high = self.interval()
        return (
            f"{self.wins}/{self.games} = {self.wins / self.games:.2f} [{low:.2f}, {high:.2f}],"
            f" {self.time_losses} lost on time"
        )


async def match(group: QuotaGroup, games: int, playouts: int, tc: TimeControl) -> Score:
    """The fixed-work engine against the random bot on this host, seats alternating."""
    work = _engine(group, "fixed", "mc_bot.py", "--playouts", str(playouts), "--seed", "1")
    other = _engine(group, "random", "random_bot.py", "--seed", "2")
    variant = Variant(islands=4, size=5, pie=False)
    referee = Referee(RefereeConfig(margin=MARGIN))
    deadlines = Deadlines(handshake=120, command=120)
    wins = time_losses = game = 0
    while game < games:  # engines started again after a game that faulted one
        async with open_engine(work, deadlines) as a, open_engine(other, deadlines) as b:
            players = {"fixed": Player.of(a), "random": Player.of(b)}
            for name, player in players.items():
                player.name = name
            while game < games:
                seats = ["fixed", "random"] if game % 2 == 0 else ["random", "fixed"]
                spec = GameSpec(f"g{game}", variant, (tc, tc))
                outcome = await referee.play(spec, [players[s] for s in seats])
                record, game = outcome.record, game + 1
                won = record.winner == "fixed"
                wins += won
                time_losses += not won and record.termination is Termination.TIME
                if outcome.faulty:
                    break
    return Score(games, wins, time_losses)


async def main_async(args: argparse.Namespace) -> None:
    with hosts(args.fast, args.slow) as (fast, slow):
        pair = await calibrate_both(fast, slow, args.moves)
        measured = {"fast": pair[0], "slow": pair[1]}
        for label, group in (("fast", fast), ("slow", slow)):
            m = measured[label]
            cores = (
                f"; its CPU factor {m.cpu_factor:.3f}, so the host got"
                f" {m.factor / m.cpu_factor:.3f} of a core"
                if m.cpu_s
                else ""
            )
            print(
                f"{label} host ({group.share:.3f} of a core): factor {m.factor:.3f}"
                f" ({m.work_s:.2f} s of wall time for {args.moves} moves; quota bound in"
                f" {group.throttled()} periods{cores})"
            )
        ratio = measured["fast"].factor / measured["slow"].factor
        expected = fast.share / slow.share
        print(
            f"factor ratio fast / slow {ratio:.2f}, shares {expected:.2f}:"
            f" {100 * (ratio / expected - 1):+.1f}%"
        )
        if measured["fast"].cpu_s and measured["slow"].cpu_s:
            cores = measured["fast"].cpu_factor / measured["slow"].cpu_factor
            print(
                f"the cores ran {cores:.2f} times as fast for the fast host as for the slow"
                f" one; shares times that {expected * cores:.2f}:"
                f" {100 * (ratio / (expected * cores) - 1):+.1f}%"
            )
        tc = TimeControl.parse(args.tc)
        for label, group in (("fast", fast), ("slow", slow)):
            for scaled in (False, True):
                host_tc = tc.scaled(measured[label].factor) if scaled else tc
                score = await match(group, args.games, args.playouts, host_tc)
                how = f"scaled to {host_tc}" if scaled else f"as given, {tc}"
                print(f"{label} host, time control {how}: fixed-work engine {score.line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", type=float, default=0.5, help="the fast host's share")
    parser.add_argument("--slow", type=float, default=0.2, help="the slow host's share")
    parser.add_argument("--moves", type=int, default=8, help="moves of the calibration")
    parser.add_argument("--games", type=int, default=12, help="games per host and control")
    parser.add_argument("--playouts", type=int, default=8192)
    parser.add_argument("--tc", default="st=0.06", help="the file's time control")
    parser.add_argument("--quick", action="store_true", help="a smoke test: tiny sizes")
    args = parser.parse_args()
    if args.quick:
        args.moves, args.games = 2, 1
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    trio.run(main_async, args)


if __name__ == "__main__":
    main()
