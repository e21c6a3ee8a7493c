"""The arena server's garbage collector, kept off its games' time.

Python's cyclic collector scans every object that has lived through two collections
each time it runs a full collection. An arena holds a lot that lives long (a session, a
link and their tasks per connected engine), so that at a thousand engines a full
collection took 0.4 to 0.6 s of the server's one event loop and found nothing to free
(18 of them in a minute, measured with `bench/arena_bench.py`): every game in flight
waited, and the referee logged each as a harness stall. So, every `FREEZE_EVERY`
seconds, what is alive is moved out of the collector's sight (`gc.freeze`): later
collections scan only what was made since, which is little. What is frozen is still
freed when nothing refers to it; only garbage in reference cycles waits, until every
`COLLECT_EVERY` seconds one full collection, of everything, frees it (one pause of
that length, not one a few seconds).
"""

from __future__ import annotations

import gc
import logging
import time

import trio

log = logging.getLogger(__name__)

FREEZE_EVERY = 5.0  # seconds between freezes of what is alive
COLLECT_EVERY = 600.0  # seconds between full collections of everything


async def collect_rarely(
    freeze_every: float = FREEZE_EVERY, collect_every: float = COLLECT_EVERY
) -> None:
    """Run beside the arena for as long as it runs (module docstring). Leaves the
    collector as it found it when cancelled."""
    next_full = trio.current_time() + collect_every
    try:
        while True:
            await trio.sleep(freeze_every)
            if trio.current_time() >= next_full:
                next_full += collect_every
                gc.unfreeze()
                start = time.perf_counter()
                freed = gc.collect()
                log.info(
                    "full garbage collection: %d objects freed in %.0f ms",
                    freed,
                    (time.perf_counter() - start) * 1000,
                )
            gc.freeze()
    finally:
        gc.unfreeze()
