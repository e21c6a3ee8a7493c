"""Running trio from a synchronous entry point, with SIGTERM treated like Ctrl-C."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

T = TypeVar("T")


def run_trio(fn: Callable[[], Awaitable[T]]) -> T:
    """trio.run, where Ctrl-C and SIGTERM cancel the run instead of interrupting it.

    Engines are shut down, not orphaned, and no KeyboardInterrupt can land in the
    middle of clean-up code; KeyboardInterrupt is raised once the run has ended.
    """
    terminated = False

    async def main() -> T:
        nonlocal terminated
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal terminated
                    async for _ in signals:
                        terminated = True
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(watch)
                try:
                    return await fn()
                finally:
                    nursery.cancel_scope.cancel()
        raise KeyboardInterrupt  # only reached when SIGTERM cancelled the run

    result = trio.run(main)
    if terminated:
        raise KeyboardInterrupt
    return result
