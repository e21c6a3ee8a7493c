"""How fast this host plays: a fixed reference workload and the speed factor it gives.

The workload is the bundled Monte Carlo bot choosing moves at a fixed number of playouts
from the empty Atoll 7 board (the same work on every host: its seed is fixed and its
clock far longer than the work), plus round trips of a trivial command over the pipe,
which is what a fast engine's moves cost. The speed factor is the reference time of the
work divided by the time it took here: 2.0 is twice as fast as the reference, 0.5 half.
It is measured in wall time, since that is what a host that is slow, throttled or shared
gives an engine; the CPU time of the same work is reported beside it.

Every run records the factor of each host that plays its games, so a host's factor is
measured once and kept in the user's cache folder, by host name, CPU model and arbiter
version (`this_host`); `arbiter calibrate` measures it again and replaces it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio

from arbiter.engines.player import Player
from arbiter.engines.process import BOTS_FOLDER, Deadlines, EngineSpec, open_engine
from arbiter.errors import ArbiterError
from arbiter.replace import replace_whole
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl

log = logging.getLogger(__name__)

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


async def calibrate(
    moves: int = MOVES, round_trips: int = ROUND_TRIPS, spec: EngineSpec | None = None
) -> Calibration:
    """Run the reference workload here (a few seconds at most on a usable host); `spec`
    starts the reference engine another way (inside a cgroup, say)."""
    deadlines = Deadlines(handshake=60, command=60)
    async with open_engine(spec or reference_engine(), deadlines) as engine:
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


# "0" skips the measurement: runs then record no factor (the tests' default, since the
# reference workload takes seconds on a busy machine).
SKIP_VARIABLE = "ARBITER_CALIBRATE"
CACHE_FILE = "speed.json"


@dataclass(frozen=True)
class HostSpeed:
    """A host's factors as a run records them: from the wall and the CPU time of the work."""

    factor: float
    cpu_factor: float

    def under(self, cpu_clock: bool) -> float:
        """The factor a game's clock calls for: a CPU clock charges what the cores do,
        a wall clock what the host, loaded as it was when measured, gives an engine."""
        return self.cpu_factor if cpu_clock else self.factor


def cache_folder() -> Path:
    """Where this user's measurements are kept ($XDG_CACHE_HOME, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "atoll-arbiter"


def host_key(where: tuple[str, str]) -> str:
    """What a measurement holds for: this host and its CPU model (`where`, as records
    name them) and this arbiter's version (a new version may change the bot's work)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("atoll-arbiter")
    except PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        own = "unknown"
    return f"{where[0]} | {where[1]} | {own}"


def cached(where: tuple[str, str]) -> HostSpeed | None:
    """This host's kept measurement, if any (an unreadable cache is no measurement)."""
    try:
        entry = json.loads((cache_folder() / CACHE_FILE).read_text("utf-8")).get(host_key(where))
        speed = HostSpeed(float(entry["factor"]), float(entry["cpu_factor"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    usable = all(math.isfinite(f) and f > 0 for f in (speed.factor, speed.cpu_factor))
    return speed if usable else None  # an edited cache: measured again


def remember(measured: Calibration, where: tuple[str, str]) -> HostSpeed:
    """Keep a measurement as this host's (a cache that cannot be written is skipped:
    the next run measures again)."""
    global _known
    speed = HostSpeed(round(measured.factor, 3), round(measured.cpu_factor, 3))
    _known = speed
    path = cache_folder() / CACHE_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            kept = json.loads(path.read_text("utf-8"))
            kept = kept if isinstance(kept, dict) else {}
        except (OSError, ValueError):
            kept = {}
        kept[host_key(where)] = {
            **measured.as_dict(),
            "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        replace_whole(path, json.dumps(kept, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        log.warning("could not keep this host's speed factor in %s: %s", path, exc)
    return speed


_known: HostSpeed | None = None  # this process's answer, once found
_finding = threading.Lock()


def this_host(where: tuple[str, str], *, needed: bool = False) -> HostSpeed | None:
    """This host's speed, measured once per host: this process's answer, else the
    cache's, else measured now (a few seconds) and kept. None where measurement is
    skipped (ARBITER_CALIBRATE=0, unless the factor is `needed`: `scale_tc`) or failed.
    Blocking: call it from a thread, not a trio task.

    Processes of one host (Dask workers, a driver) that ask together measure once: the
    others wait on a lock file, then read the cache, so that no measurement runs beside
    another and halves it."""
    global _known
    if os.environ.get(SKIP_VARIABLE, "").strip() == "0" and not needed:
        return None
    with _finding:
        if _known is not None:
            return None if _known is NOT_MEASURED else _known
        found = cached(where)
        if found is not None:
            _known = found
            return found
        folder = cache_folder()
        with contextlib.ExitStack() as stack:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                lock = stack.enter_context(open(folder / f"{CACHE_FILE}.lock", "a"))
                fcntl.flock(lock, fcntl.LOCK_EX)
            except OSError:
                pass  # no shared folder: measure without waiting for the others
            found = cached(where)
            if found is None:
                log.info("measuring this host's speed factor, once (kept in %s)", folder)
                try:
                    found = remember(trio.run(calibrate), where)
                except ArbiterError as exc:  # the bot did not start or answer: no factor
                    log.warning("could not measure this host's speed factor: %s", exc)
                    found = NOT_MEASURED
            _known = found
            return None if found is NOT_MEASURED else found


NOT_MEASURED = HostSpeed(0.0, 0.0)  # this process tried, and the measurement failed
