"""The harness's own stalls, told apart from an engine's slowness.

A referee that is not running cannot watch a clock: a laptop lid closed on a paused
process, a SIGSTOP, a virtual machine descheduled, or a host so overloaded that the event
loop does not run for seconds. The time passes all the same, and without this module it
would be charged to whichever engine was thinking. A heartbeat task wakes every PERIOD
seconds in each trio run that plays games; a wake-up later than GAP seconds past its time
is a stall of the harness, kept as a span. The referee asks how much of an engine's wait
the harness spent stalled: that time is never charged to the engine (see arbiter.games.referee).
"""

from __future__ import annotations

import logging
import sys
from collections import deque

import trio

log = logging.getLogger(__name__)

PERIOD = 0.05  # seconds between heartbeats
GAP = 0.2  # a heartbeat this much later than due means the harness itself stalled
_SPANS = 256  # stalls remembered (a game asks only about its current wait)


class Heartbeat:
    """Stalls of this trio run's event loop, as (start, end) spans of trio time."""

    def __init__(self) -> None:
        self.last = trio.current_time()
        self.spans: deque[tuple[float, float]] = deque(maxlen=_SPANS)
        self.total = 0.0
        # How late the last beat woke, in seconds: how far the loop is behind now (its
        # queue of ready tasks), which the arena's pacing reads (arbiter.arena.hall).
        self.lag = 0.0
        self._beats = trio.lowlevel.ParkingLot()

    async def next_beat(self) -> None:
        """Wait for the next beat (and with it a fresh `lag`)."""
        await self._beats.park()

    async def run(self) -> None:
        while True:
            due = self.last + PERIOD
            await trio.sleep_until(due)
            now = trio.current_time()
            self.lag = now - due
            self._beats.unpark_all()
            if now - due > GAP:
                self.spans.append((due, now))
                self.total += now - due
                log.warning(
                    "the harness did not run for %.2f s (paused, suspended or"
                    " starved of CPU); no engine is charged for it",
                    now - due,
                )
            self.last = now

    def stalled(self, start: float, end: float) -> float:
        """Seconds of [start, end] the harness spent stalled, a stall still going on
        included (the heartbeat may not have run yet after the harness woke up)."""
        total = 0.0
        for a, b in self.spans:
            if b > start and a < end:
                total += min(b, end) - max(a, start)
        due = self.last + PERIOD
        if end - due > GAP:  # the heartbeat is late right now
            total += end - max(due, start)
        return max(0.0, total)


_CURRENT: trio.lowlevel.RunVar[Heartbeat | None] = trio.lowlevel.RunVar("heartbeat", None)


class _VirtualTime(Heartbeat):
    """Under a virtual clock (trio.testing.MockClock) time only moves when told to: a
    jump is the test's way of saying an engine was slow, never a stall."""

    def stalled(self, start: float, end: float) -> float:
        return 0.0

    async def next_beat(self) -> None:
        await trio.sleep(PERIOD)  # no beats under a virtual clock, and never behind


def heartbeat() -> Heartbeat:
    """This trio run's heartbeat, started on first use as a system task that lives as long
    as the run."""
    beat = _CURRENT.get()
    if beat is None:
        # A MockClock exists only where trio.testing was imported (by a test): the harness
        # itself does not import it, which would also import pytest into every process.
        testing = sys.modules.get("trio.testing")
        if testing is not None and isinstance(trio.lowlevel.current_clock(), testing.MockClock):
            beat = _VirtualTime()
            _CURRENT.set(beat)
            return beat
        beat = Heartbeat()
        _CURRENT.set(beat)
        trio.lowlevel.spawn_system_task(beat.run, name="arbiter heartbeat")
    return beat
