"""The preflight: before any game, can each engine start and play the variant at all?"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

import trio

from arbiter.engines.player import Fault, Player
from arbiter.engines.process import Engine, open_engine
from arbiter.errors import EngineError, EngineFailure
from arbiter.executors.jobs import ExecutorSettings, Preflight, start_failure
from arbiter.results.records import Termination
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl

Opener = Callable[[str], AbstractAsyncContextManager[Engine]]  # an engine by its key


async def preflight(
    settings: ExecutorSettings,
    keys: Sequence[str],
    variant: Variant,
    tcs: Mapping[str, TimeControl],
    limit: int = 2,
    *,
    opener: Opener | None = None,
) -> Preflight:
    """Before any game: can each engine start and play this variant at all?

    Each engine is started once (at most `limit` at a time) and given a game's whole
    set-up, its options, board and clock included: a variant it does not list or declare,
    or a `?` to any of it, is a configuration error for the operator, never a string of
    void games; an engine that cannot start stops the run with its evidence. Its answer
    to `name` is kept, so that every worker names it the same way.

    `opener` brings an engine up for its check: by default a process started and shut
    down again; a game worker's keeps it warm for the games that follow.
    """
    result = Preflight()
    gate = trio.CapacityLimiter(max(1, limit))
    # Short goodbyes: an engine that ignores quit should not hold up the first game.
    deadlines = replace(settings.deadlines, quit=0.3, term=0.5)
    if opener is None:

        def opener(key: str) -> AbstractAsyncContextManager[Engine]:
            return open_engine(settings.engines[key], deadlines)

    def fail(problem: str, config_error: bool) -> None:
        # The operator's mistake wins over an engine that merely failed to start: the
        # run may leave out the one, never the other.
        if not result.problem or (config_error and not result.config_error):
            result.problem, result.config_error = problem, config_error

    async def probe(key: str) -> None:
        spec = settings.engines[key]
        async with gate:
            try:
                async with opener(key) as engine:
                    result.info[key] = engine.info
                    player = Player.of(engine)
                    try:
                        await player.new_game(variant, tcs[key])
                    except Fault as fault:
                        if fault.kind is Termination.SETUP:  # a variant it cannot play
                            fail(fault.detail, True)
                        elif fault.command is not None:
                            fail(
                                f"{player.name} cannot play {variant} at {tcs[key]}: it"
                                f" answered {' '.join(fault.command)!r} with"
                                f" ? {fault.answer[:200]}; declare what it plays (sizes,"
                                " islands, time) in its definition, or choose another"
                                " variant",
                                True,
                            )
                        else:
                            await engine.settle_stderr(deadlines.term)
                            result.failures[key] = start_failure(
                                spec.label, fault.detail, engine.stderr.tail()
                            )
                            fail(result.failures[key], False)
            except EngineFailure as exc:  # an option it refused
                fail(f"{spec.label}: {exc.detail}; fix or remove that option", True)
            except EngineError as exc:
                result.failures[key] = start_failure(spec.label, exc.detail, exc.stderr_tail)
                fail(result.failures[key], False)

    async with trio.open_nursery() as nursery:
        for key in dict.fromkeys(keys):
            nursery.start_soon(probe, key)
    return result
