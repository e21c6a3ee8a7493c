"""Engine-aware dispatch: a free slot takes the pending game its warm engines suit best.

Real engines are slow to start (tables, network weights), and a schedule's order changes
engines almost every game. The dispatcher reads a bounded window of jobs ahead of the
slots (the schedule is still read lazily) and gives a slot that asks for work the pending
game that uses the most of the engines it already holds: the other game of its pair, or
another pairing of the same engines, then one that needs a single new engine. Among
equals the schedule's order decides; and a game passed over for as many games as the
window holds goes to the next slot that asks, whatever it holds, so no game waits for
ever behind better-fitting ones. The games themselves (ids, pairs, openings) are the
schedule's, whatever order they are played in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping

import trio

from arbiter.executors.jobs import Emit, GameJob, Keep, Withdrawn

LOOKAHEAD = 64  # jobs read ahead of the slots, at least (a round of an 8-engine pool)


class Dispatcher:
    """Jobs from the run's channel, handed out by engine affinity."""

    def __init__(
        self,
        jobs: trio.MemoryReceiveChannel[GameJob],
        slots: int,
        keep: Keep | None = None,
        emit: Emit | None = None,
    ) -> None:
        self._jobs = jobs
        self._keep = keep  # asked as a job is taken: the run may no longer want it
        self._emit = emit
        self.lookahead = max(LOOKAHEAD, 4 * slots)
        self._pending: list[tuple[int, GameJob]] = []  # with when it came, in jobs handed out
        self._taken = 0  # jobs handed out so far
        self._demand: Counter[str] = Counter()  # pending games per engine key
        self._closed = False
        self._changed = trio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def fill(self) -> None:
        """Read jobs while the window has room, until the run's channel is closed."""
        try:
            async with self._jobs:
                while True:
                    while len(self._pending) >= self.lookahead:
                        await self._changed.wait()
                    try:
                        job = await self._jobs.receive()
                    except trio.EndOfChannel:
                        return
                    self._pending.append((self._taken, job))
                    self._demand.update(job.engines)
                    self._notify()
        finally:
            self._closed = True
            self._notify()

    async def take(self, warm: Collection[str] = ()) -> GameJob | None:
        """The next game for a slot holding `warm` engines; None once there are no more."""
        while True:
            while not self._pending:
                if self._closed:
                    return None
                await self._changed.wait()
            job = self._choose(warm)
            if self._keep is None or self._keep(job):
                return job
            if self._emit is not None:
                self._emit(Withdrawn(job.number))

    def _choose(self, warm: Collection[str]) -> GameJob:
        pending = self._pending
        best = 0
        overdue = self._taken - pending[0][0] >= self.lookahead
        if warm and not overdue:
            score = -1
            for index, (_, job) in enumerate(pending):
                a, b = job.engines
                fit = (a in warm) + (b in warm)
                if fit > score:
                    best, score = index, fit
                    if fit == 2:
                        break
        _, job = pending.pop(best)
        self._taken += 1
        self._demand.subtract(job.engines)
        self._notify()
        return job

    @property
    def demand(self) -> Mapping[str, int]:
        """How many pending games use each engine: what keeping it warm is worth."""
        return self._demand
