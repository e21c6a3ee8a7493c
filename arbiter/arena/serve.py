"""`arbiter arena serve`: one process that holds the store, the port and the games.

The store is locked for the server's life, like a tournament's run: a second server on
the same file is refused. Stopping (Ctrl-C, SIGTERM) cancels the games in flight, which
are never stored; the next start numbers its games on from the store.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from arbiter.arena.collector import collect_rarely
from arbiter.arena.config import Arena
from arbiter.arena.hall import Hall
from arbiter.arena.history import History
from arbiter.arena.names import Registry
from arbiter.arena.net import Server
from arbiter.arena.web import Broadcast, Site
from arbiter.errors import ArbiterError, ConfigError
from arbiter.executors.jobs import ExecutorSettings
from arbiter.executors.preflight import preflight
from arbiter.games.adjudication import stored_adjudication
from arbiter.results.store import Store
from arbiter.runs.run import refuse_changes


async def check_engines(arena: Arena) -> None:
    """Before the port opens: each of the server's own engines starts and can play the
    arena's variant, or the server does not start (the operator's to fix)."""
    if not arena.engines:
        return
    settings = ExecutorSettings(arena.engines)
    checked = await preflight(
        settings, list(arena.engines), arena.variant, {key: arena.tc for key in arena.engines}
    )
    if checked.problem:
        where = f"{arena.path}: engine"
        if checked.config_error:
            raise ConfigError(
                checked.problem, where=where, hint="fix its definition or the arena's variant"
            )
        raise ArbiterError(
            f"{checked.problem} (the arena's own engine; fix it or remove it from {arena.path})"
        )


async def serve(arena: Arena, say: Callable[[str], None]) -> None:
    await check_engines(arena)
    store, _ = Store.open_for_run(arena.output, origin=f"{arena.path}: arena.output")
    with store:
        stored = store.conditions()
        if stored is not None:  # a store never mixes games with and without adjudication
            refuse_changes(
                {"adjudicate": stored_adjudication(stored)["adjudicate"]},
                {"adjudicate": arena.adjudicate.value},
                f"{arena.path}: arena.".__add__,
                arena.output.name,
                "give the store another output name, or restore the old value",
            )
        broadcast = Broadcast()
        registry = Registry(store, arena.registration_hours)
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery, broadcast.publish)
            site = Site(arena, hall, broadcast, History(store))
            server = Server(arena, hall, site.routes(), registry)
            try:
                port = await nursery.start(server.serve, nursery)
                host = f"[{arena.host}]" if ":" in arena.host else arena.host
                say(
                    f"Arena {arena.name} is listening on http://{host}:{port}/ (engines:"
                    f" ws://{host}:{port}/engine); {store.games_stored()} games stored in"
                    f" {arena.output}. Ctrl-C stops it."
                )
                if server.gate.capacity < arena.max_connections:
                    say(
                        f"The open-file limit ({server.open_files}) allows"
                        f" {server.gate.capacity} connections at once, not max_connections ="
                        f" {arena.max_connections}; raise it (ulimit -n) for more."
                    )
                nursery.start_soon(site.refresh_standings)
                nursery.start_soon(collect_rarely)  # no full collections in the games' time
                await hall.run()
            finally:
                with trio.CancelScope(shield=True):
                    await server.stop()
                    await hall.aclose()
                    site.history.write()
