"""Running trio from a synchronous entry point, with SIGTERM treated like Ctrl-C."""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

T = TypeVar("T")
log = logging.getLogger(__name__)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; `signum` says which (exit status 128 + signum)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_stopping = 0  # the signal that started the shutdown, once one has


def _outside_trio(signum: int, frame: object) -> None:
    """Outside a trio run: the first stop signal interrupts the command; any later one
    (trio re-delivers those that arrived during its shutdown) is ignored, so the final
    lines are always written and no write is cut in half."""
    global _stopping
    if _stopping:
        return
    _stopping = signum
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """For the `arbiter` program: SIGTERM and SIGHUP (a closed terminal) stop it like
    Ctrl-C, with engines shut down and the final lines written."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _outside_trio)


def run_trio(fn: Callable[[], Awaitable[T]]) -> T:
    """trio.run, where Ctrl-C, SIGTERM and SIGHUP cancel the run instead of interrupting it.

    Engines are shut down, not orphaned, and no KeyboardInterrupt can land in the
    middle of clean-up code; KeyboardInterrupt is raised once the run has ended.
    """
    terminated = 0

    async def main() -> T:
        nonlocal terminated
        with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal terminated
                    global _stopping
                    async for signum in signals:
                        terminated = signum
                        _stopping = _stopping or signum
                        log.warning(
                            "%s received: stopping, engines are shut down",
                            signal.Signals(signum).name,
                        )
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
