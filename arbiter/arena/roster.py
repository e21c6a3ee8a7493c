"""Players managed while the arena runs: added, removed, banned, unbanned.

The arena file is the operator's and is never rewritten. What `arbiter arena player`
changes lives in a file of the server's beside its store, `NAME.players.json`: the
players added (a name, its token's hash, its games at once) and the names banned, each
with why. The command writes it whole (a new file renamed over the old, under a lock
that two commands take in turn); the running server looks at it every
`WATCH_EVERY` seconds and takes a change at once, without a restart:

- an added player may log in from then on;
- a removed or banned name logs in no more and is paired no more; a session of it that
  is playing finishes its games in play, which count as any other (nothing is voided),
  and is then closed with the reason (4001: the client stops, exit status 2); an idle
  session is closed at once. An engine of the server's own that is banned is paired no
  more. Unbanning lets the name log in again.

A file the server cannot read as one (edited by hand, say) is logged and the last good
state kept: a typo never lets a banned engine back in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from arbiter.arena.config import Arena, PlayerEntry, valid_hash
from arbiter.errors import ConfigError
from arbiter.replace import replace_whole
from arbiter.text import one_line

log = logging.getLogger(__name__)

WATCH_EVERY = 1.0  # seconds between looks at the players file
REASON_MOST = 200  # characters of a ban's reason kept
_HINT = "manage it with `arbiter arena player`, or delete it to start afresh"


def players_path(arena: Arena) -> Path:
    """The players file of `arena`: beside its store, named after it (after the arena,
    beside the file, when it has rooms: the players are every room's)."""
    return arena.players_file or arena.output.with_name(arena.output.stem + ".players.json")


@dataclass(frozen=True)
class Roster:
    """The players added and the names banned (name: why)."""

    added: Mapping[str, PlayerEntry] = field(default_factory=dict)
    banned: Mapping[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "players": {
                n: {"token_hash": e.token_hash, "games_at_once": e.games_at_once}
                for n, e in sorted(self.added.items())
            },
            "banned": dict(sorted(self.banned.items())),
        }


def read_roster(path: Path) -> Roster:
    """The roster in `path` (empty when there is no file); ConfigError naming the file
    when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Roster()
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror}", where=str(path), hint=_HINT) from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"not JSON ({exc})", where=str(path), hint=_HINT) from exc
    if not isinstance(data, dict):
        raise ConfigError("not a JSON object", where=str(path), hint=_HINT)
    players, banned = data.get("players", {}), data.get("banned", {})
    if not isinstance(players, dict) or not isinstance(banned, dict):
        raise ConfigError("players and banned must be objects", where=str(path), hint=_HINT)
    added: dict[str, PlayerEntry] = {}
    for name, entry in players.items():
        token_hash = entry.get("token_hash") if isinstance(entry, dict) else None
        at_once = entry.get("games_at_once", 1) if isinstance(entry, dict) else None
        if not (isinstance(token_hash, str) and valid_hash(token_hash)):
            raise ConfigError(
                "token_hash is missing or not a hash", where=f"{path}: {name}", hint=_HINT
            )
        if type(at_once) is not int or not 1 <= at_once <= 64:
            raise ConfigError("games_at_once must be 1 to 64", where=f"{path}: {name}", hint=_HINT)
        added[name] = PlayerEntry(name, token_hash, at_once)
    reasons = {str(n): one_line(str(why))[:REASON_MOST] for n, why in banned.items()}
    return Roster(added, reasons)


@contextlib.contextmanager
def editing(arena: Arena) -> Iterator[Callable[[Roster], None]]:
    """The roster of `arena`'s players file, read under a lock, and a function that
    writes the new one whole (the server never reads half a file)."""
    path = players_path(arena)
    lock_path = path.with_name(path.name + ".lock")
    try:
        lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ConfigError(
            f"cannot open {lock_path}: {exc.strerror}",
            where=f"{arena.path}: arena.output",
            hint="the players file lives beside the store: make that folder writable",
        ) from exc
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)

        def write(roster: Roster) -> None:
            replace_whole(path, json.dumps(roster.as_json(), indent=1) + "\n")

        yield write
    finally:
        os.close(lock)  # and with it the lock


class Watch:
    """The server's view of the players file: the players the arena file lists, those
    added, and the names banned, looked at again every `WATCH_EVERY` seconds."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.path = players_path(arena)
        self._seen: tuple[int, int, int] | None = None
        self.roster = Roster()
        self.look()

    def entry(self, name: str) -> PlayerEntry | None:
        """The entry `name` logs in with: the arena file's, else one added."""
        return self.arena.players.get(name) or self.roster.added.get(name)

    def barred(self, name: str) -> str | None:
        """Why `name` may not log in or be paired (banned, or removed), or None."""
        why = self.roster.banned.get(name)
        if why is not None:
            return f"{name} is banned from this arena" + (f": {why}" if why else "")
        return None

    def names(self) -> list[str]:
        return [*self.arena.players, *self.roster.added]

    def look(self) -> bool:
        """Read the file again if it changed; whether the roster changed."""
        try:
            st = self.path.stat()
            seen: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            seen = None
        if seen == self._seen:
            return False
        self._seen = seen
        try:
            roster = read_roster(self.path)
        except ConfigError as exc:
            log.warning("%s; the players as they were are kept", exc)
            return False
        changed = roster != self.roster
        self.roster = roster
        return changed

    async def run(self, changed: Callable[[], None]) -> None:
        """Call `changed` whenever the roster changes, for as long as the arena runs."""
        while True:
            await trio.sleep(WATCH_EVERY)
            if self.look():
                changed()


def _taken(arena: Arena, roster: Roster) -> list[str]:
    return [*arena.players, *arena.engines, *roster.added]


def add_player(arena: Arena, name: str, token_hash: str, games_at_once: int) -> str:
    """Add `name` to the players file; what was done, in a line. ConfigError when the
    name cannot be added, saying what to do instead."""
    from arbiter.arena.names import lookalike
    from arbiter.engines.config import check_name

    check_name(name, "NAME")
    if not valid_hash(token_hash):
        raise ConfigError(
            "not a token hash",
            where="--token-hash",
            hint="give the token_hash that `arbiter arena token NAME` prints, or leave"
            " --token-hash out to have a token made",
        )
    if name in arena.engines:
        raise ConfigError(
            f"{name} is one of the arena's own engines",
            where=f"{arena.path}: engines",
            hint="choose another name for the remote engine",
        )
    if name in arena.players:
        raise ConfigError(
            f"{name} is a [[player]] of the arena file already",
            where=f"{arena.path}: player {name!r}",
            hint="change its entry there and restart the server, or ban it"
            " (`arbiter arena player ban`)",
        )
    with editing(arena) as write:
        roster = read_roster(players_path(arena))
        if name in roster.added:
            raise ConfigError(
                f"{name} was added already",
                where=str(players_path(arena)),
                hint="`arbiter arena player remove` it first to give it a new token",
            )
        problem = lookalike(name, _taken(arena, roster))
        if problem is not None:
            raise ConfigError(problem, where="NAME")
        added = {**roster.added, name: PlayerEntry(name, token_hash, games_at_once)}
        write(Roster(added, roster.banned))
    banned = " (it is banned: `arbiter arena player unban` it to let it in)"
    return f"{name} may log in from now on" + (banned if name in roster.banned else "")


def remove_player(arena: Arena, name: str) -> str:
    """Remove a player that `add_player` added."""
    with editing(arena) as write:
        roster = read_roster(players_path(arena))
        if name not in roster.added:
            if name in arena.players:
                raise ConfigError(
                    f"{name} is a [[player]] of the arena file, not one added",
                    where=f"{arena.path}: player {name!r}",
                    hint="delete its entry there (read when the server starts), or ban"
                    " it now: `arbiter arena player ban`",
                )
            raise ConfigError(
                f"no player {name} was added",
                where=str(players_path(arena)),
                hint="players added: " + (", ".join(sorted(roster.added)) or "(none)"),
            )
        added = {n: e for n, e in roster.added.items() if n != name}
        write(Roster(added, roster.banned))
    return (
        f"{name} is removed: it logs in no more; a running server closes its connection"
        " once its games in play end (its games stay in the store)"
    )


def ban_player(arena: Arena, name: str, reason: str) -> str:
    """Ban `name` (any name: a player, an engine of the server's own, a name not yet
    registered), with why."""
    from arbiter.engines.config import check_name

    check_name(name, "NAME")
    with editing(arena) as write:
        roster = read_roster(players_path(arena))
        banned = {**roster.banned, name: one_line(reason)[:REASON_MOST]}
        write(Roster(roster.added, banned))
    return (
        f"{name} is banned: it logs in and is paired no more; a running server closes its"
        " connection once its games in play end (they count; its games stay in the store)"
    )


def unban_player(arena: Arena, name: str) -> str:
    with editing(arena) as write:
        roster = read_roster(players_path(arena))
        if name not in roster.banned:
            raise ConfigError(
                f"{name} is not banned",
                where=str(players_path(arena)),
                hint="banned: " + (", ".join(sorted(roster.banned)) or "(none)"),
            )
        write(Roster(roster.added, {n: w for n, w in roster.banned.items() if n != name}))
    return f"{name} is no longer banned: it may log in again"
