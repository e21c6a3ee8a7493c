"""How fast this host plays: a fixed reference workload and the speed factor it gives.

The workload is the bundled Monte Carlo bot choosing moves at a fixed number of playouts
from the empty Atoll 7 board (the same work on every host: its seed is fixed and its
clock far longer than the work), plus round trips of a trivial command over the pipe,
which is what a fast engine's moves cost. The speed factor is the reference time of the
work divided by the time it took here: 2.0 is twice as fast as the reference, 0.5 half.
It is measured in wall time, since that is what a host that is slow, throttled or shared
gives an engine; the CPU time of the same work is reported beside it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import trio

from arbiter.engines.player import Player
from arbiter.engines.process import BOTS_FOLDER, Deadlines, EngineSpec, open_engine
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl

PLAYOUTS = 2048
MOVES = 8
ROUND_TRIPS = 200
# CPU seconds the workload took on the reference, one core of an AMD EPYC virtual machine
# (the CPU time, since that machine was shared): the factor is relative to it.
REFERENCE_WORK_S = 0.30


@dataclass(frozen=True)
class Calibration:
    """One measurement of this host."""

    moves: int
    work_s: float  # wall seconds of the moves
    cpu_s: float  # CPU seconds the bot used for them
    round_trip_us: float  # microseconds of a trivial command's round trip, the mean

    @property
    def factor(self) -> float:
        """This host's speed against the reference (the wall time of the work)."""
        return REFERENCE_WORK_S * self.moves / MOVES / max(self.work_s, 1e-9)

    @property
    def cpu_factor(self) -> float:
        """The same, from the CPU time of the work: what the host's cores do when they run."""
        return REFERENCE_WORK_S * self.moves / MOVES / max(self.cpu_s, 1e-9)

    def as_dict(self) -> dict[str, Any]:
        return {
            "factor": round(self.factor, 3),
            "cpu_factor": round(self.cpu_factor, 3),
            "moves": self.moves,
            "work_s": round(self.work_s, 4),
            "cpu_s": round(self.cpu_s, 4),
            "round_trip_us": round(self.round_trip_us, 1),
        }

    def line(self) -> str:
        return (
            f"speed factor {self.factor:.2f} ({self.moves} moves of {PLAYOUTS} playouts in"
            f" {self.work_s:.3f} s of wall time; {self.cpu_s:.3f} s of CPU time, factor"
            f" {self.cpu_factor:.2f}); a pipe round trip {self.round_trip_us:.0f} µs"
        )


def reference_engine() -> EngineSpec:
    argv = (sys.executable, "mc_bot.py", "--playouts", str(PLAYOUTS), "--seed", "1")
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return EngineSpec(argv, name="calibration", cwd=str(BOTS_FOLDER), env=env, clock=ClockMode.CPU)


async def calibrate(moves: int = MOVES, round_trips: int = ROUND_TRIPS) -> Calibration:
    """Run the reference workload here (a few seconds at most on a usable host)."""
    deadlines = Deadlines(handshake=60, command=60)
    async with open_engine(reference_engine(), deadlines) as engine:
        player = Player.of(engine)
        session = engine.session
        await player.new_game(Variant(), TimeControl(infinite=True))
        work = cpu = 0.0
        for _ in range(moves):
            await session.command("clear_board", timeout=deadlines.command)
            before_cpu, started = engine.cpu_seconds(), trio.current_time()
            await session.command("genmove", "b", timeout=deadlines.command)
            work += trio.current_time() - started
            cpu += engine.cpu_seconds() - before_cpu
        started = trio.current_time()
        for _ in range(round_trips):
            await session.command("name", timeout=deadlines.command)
        trip = (trio.current_time() - started) / max(1, round_trips) * 1e6
    return Calibration(moves, work, cpu, trip)
