"""`arbiter arena serve`: one process that holds the store, the port and the games.

The store is locked for the server's life, like a tournament's run: a second server on
the same file is refused. Stopping (Ctrl-C, SIGTERM) cancels the games in flight, which
are never stored; the next start numbers its games on from the store.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import trio

from arbiter.arena.collector import collect_rarely
from arbiter.arena.config import Arena
from arbiter.arena.frontends import open_frontends
from arbiter.arena.hall import Hall
from arbiter.arena.history import History
from arbiter.arena.names import Registry
from arbiter.arena.net import Server
from arbiter.arena.roster import Watch
from arbiter.arena.web import Broadcast, Lobby, Site
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
    """Serve every room of `arena` (the file's only one, without rooms) on one port: a
    store, a hall, pages and events per room; the players, the limits and the open
    registration's names are the server's (the first room's store keeps those names)."""
    rooms = arena.rooms or (arena,)
    for room in rooms:
        await check_engines(room)
    with contextlib.ExitStack() as stores:
        opened: list[tuple[Arena, Store]] = []
        for room in rooms:
            where = f"{room.path}: " + (
                f"room {room.room!r}.output" if room.room else "arena.output"
            )
            store, _ = Store.open_for_run(room.output, origin=where)
            stores.enter_context(store)
            stored = store.conditions()
            if stored is not None:  # a store never mixes games with and without adjudication
                refuse_changes(
                    {"adjudicate": stored_adjudication(stored)["adjudicate"]},
                    {"adjudicate": room.adjudicate.value},
                    f"{where.rsplit('.', 1)[0]}.".__add__,
                    room.output.name,
                    "give the store another output name, or restore the old value",
                )
            opened.append((room, store))
        await _serve(arena, opened, say)


async def _serve(
    arena: Arena, opened: list[tuple[Arena, Store]], say: Callable[[str], None]
) -> None:
    registry = Registry(opened[0][1], arena.registration_hours)
    roster = Watch(arena)
    # The front ends outlive the games' nursery: stopping closes the engines'
    # connections through them.
    files = arena.max_connections + 64  # each connection is a file, in one front end at worst
    async with open_frontends(arena.frontends, files) as fronts, trio.open_nursery() as nursery:
        halls: dict[str, tuple[Arena, Hall]] = {}
        sites: list[Site] = []
        routes = {}
        for room, store in opened:
            broadcast = Broadcast()
            hall = Hall(room, store, nursery, broadcast.publish)
            hall.barred = functools.partial(barred, arena, roster, registry)
            base = f"/room/{room.room}" if room.room else ""
            site = Site(room, hall, broadcast, History(store), base)
            halls[room.room] = (room, hall)
            sites.append(site)
            routes.update(site.routes())
        if arena.rooms:
            routes.update(Lobby(arena, halls).routes())
        first = halls[arena.room][1]
        server = Server(arena, first, routes, registry, roster, halls, fronts)
        try:
            port = await nursery.start(server.serve, nursery)
            host = f"[{arena.host}]" if ":" in arena.host else arena.host
            kept = "; ".join(
                f"{s.games_stored()} games stored in {r.output}"
                + (f" (room {r.room})" if r.room else "")
                for r, s in opened
            )
            say(
                f"Arena {arena.name} is listening on http://{host}:{port}/ (engines:"
                f" ws://{host}:{port}/engine); {kept}. Ctrl-C stops it."
            )
            if server.gate.capacity < arena.max_connections:
                say(
                    f"The open-file limit ({server.open_files}) allows"
                    f" {server.gate.capacity} connections at once, not max_connections ="
                    f" {arena.max_connections}; raise it (ulimit -n) for more."
                )
            for site in sites:
                nursery.start_soon(site.refresh_standings)
                nursery.start_soon(site.hall.run)
            changed = functools.partial(players_changed, [h for _, h in halls.values()])
            nursery.start_soon(roster.run, changed)
            nursery.start_soon(collect_rarely)  # no full collections in the games' time
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await server.stop()
                for site in sites:
                    await site.hall.aclose()
                    site.history.write()


def barred(arena: Arena, roster: Watch, registry: Registry, name: str) -> str | None:
    """Why `name` may not play now: banned, or no longer a player (removed from the
    players file), or None."""
    why = roster.barred(name)
    if why is not None:
        return why
    if name in arena.engines or roster.entry(name) is not None or registry.get(name):
        return None
    return f"{name} is no longer a player of this arena"


def players_changed(halls: list[Hall]) -> None:
    """The players file changed: a name that may play no more is sent off, in every
    room."""
    for hall in halls:
        for name in list(hall.identities):
            why = hall.barred(name)
            if why is not None:
                hall.send_off(name, why)
        names = [*hall.arena.engines, *hall.identities]
        barred_now = sorted(n for n in names if hall.barred(n) is not None)
        hall.publish("players", {"barred": barred_now})
        hall.changed()
