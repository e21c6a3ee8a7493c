"""The arena server's garbage collector: what lives long is out of its sight."""

from __future__ import annotations

import gc
import weakref

import trio
import trio.testing

from arbiter.arena.collector import collect_rarely


class Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_what_lives_long_is_frozen_and_cycles_are_freed_at_the_full_collection() -> None:
    seen: dict[str, int] = {}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect_rarely, 5.0, 60.0)
            kept = [Cycle() for _ in range(1000)]
            refs = [weakref.ref(c) for c in kept]
            await trio.sleep(6.0)  # one freeze: the collections no longer scan these
            seen["frozen"] = gc.get_freeze_count()
            del kept
            gc.collect()  # a full collection does not see them: their cycles wait
            seen["waiting"] = sum(r() is not None for r in refs)
            await trio.sleep(60.0)  # until the full collection of everything
            seen["after"] = sum(r() is not None for r in refs)
            nursery.cancel_scope.cancel()
        seen["left"] = gc.get_freeze_count()

    try:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        gc.unfreeze()
    assert seen["frozen"] >= 1000 and seen["waiting"] == 1000
    assert seen["after"] == 0
    assert seen["left"] == 0  # cancelled, it leaves the collector as it found it
