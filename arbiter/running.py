"""Running trio from a synchronous entry point, with SIGTERM treated like Ctrl-C."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

T = TypeVar("T")


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; `signum` says which (exit status 128 + signum)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def run_trio(fn: Callable[[], Awaitable[T]]) -> T:
    """trio.run, where Ctrl-C and SIGTERM cancel the run instead of interrupting it.

    Engines are shut down, not orphaned, and no KeyboardInterrupt can land in the
    middle of clean-up code; KeyboardInterrupt is raised once the run has ended.
    """
    terminated = 0

    async def main() -> T:
        nonlocal terminated
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal terminated
                    async for signum in signals:
                        terminated = signum
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(watch)
                try:
                    return await fn()
                finally:
                    nursery.cancel_scope.cancel()
        raise Interrupted(terminated or signal.SIGINT)  # only reached when a signal cancelled

    try:
        result = trio.run(main)
    except Interrupted:
        raise
    except KeyboardInterrupt as exc:
        raise Interrupted(signal.SIGINT) from exc
    if terminated:
        raise Interrupted(terminated)
    return result
