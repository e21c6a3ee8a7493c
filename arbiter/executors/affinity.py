"""Which cores each slot's engines run on (`affinity = true`), as fastchess pins them.

Each slot plays one game at a time, and of its two engines only the one on move
computes, so a slot needs as many cores as its most threaded engine (`threads`). Slots
get cores of their own, in order; where one core is left over, the harness gets it, so
that its own work (the referee, the store, the workers' messages) never takes an
engine's core. Where the cores are too few, slots share them, and the assignment says
so. Engines inherit nothing from this process: each is pinned between fork and exec
(arbiter.engines.process), so its children and threads stay on its cores.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CoreAssignment:
    """Cores per slot, the harness's own (empty: not pinned), and the cores there were."""

    slots: tuple[tuple[int, ...], ...]
    harness: tuple[int, ...]
    cpus: tuple[int, ...]
    threads: int

    @property
    def oversubscribed(self) -> bool:
        return len(self.slots) * self.threads > len(self.cpus)

    def lines(self) -> list[str]:
        """How the cores were assigned, in words, then a warning if slots share cores."""
        slots = "; ".join(f"slot {i} on {_cores(cores)}" for i, cores in enumerate(self.slots, 1))
        harness = (
            f"the harness on {_cores(self.harness)}"
            if self.harness
            else "the harness on no core of its own"
        )
        out = [f"affinity: {slots}; {harness} ({len(self.cpus)} cores usable)"]
        if self.oversubscribed:
            fit = max(1, len(self.cpus) // self.threads)
            out.append(
                f"warning: affinity: {len(self.slots)} slots of {self.threads} core(s) each"
                f" need {len(self.slots) * self.threads} cores but {len(self.cpus)} are"
                f" usable, so slots share cores and their engines slow each other down;"
                f" lower concurrency to {fit}, or the engines' threads"
            )
        return out


def _cores(cores: Sequence[int]) -> str:
    return ("core " if len(cores) == 1 else "cores ") + ",".join(map(str, cores))


def usable_cpus() -> tuple[int, ...]:
    """The cores this process may run on (its own affinity, as a container limits it)."""
    return tuple(sorted(os.sched_getaffinity(0)))


def assign_cores(slots: int, threads: int, cpus: Sequence[int]) -> CoreAssignment:
    """Cores for `slots` slots whose engines use at most `threads` each (pure: the
    cores usable are given)."""
    cpus = tuple(cpus)
    slots, threads = max(1, slots), max(1, threads)
    need = slots * threads
    harness: tuple[int, ...] = ()
    pool = cpus
    if need < len(cpus):
        harness, pool = (cpus[-1],), cpus[:-1]
    assigned = tuple(
        tuple(pool[(i * threads + j) % len(pool)] for j in range(threads)) for i in range(slots)
    )
    return CoreAssignment(assigned, harness, cpus, threads)
