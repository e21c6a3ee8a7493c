"""The files the reading commands take (a tournament or arena file, a match's store) as
what they stand for, and how a damaged store row is reported.

An arena file with `[[room]]` tables stands for one store per room. A command that reads
one store whole (`report`, an export) reads the room `--room` names, and refuses a file
of several rooms without it, naming them; the commands that summarise (`ratings` of the
file alone, the statuses) show every room in turn. Nothing silently stands for the first
room: a user who saw one room's engines would take the others' for missing."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.errors import ConfigError
from arbiter.results.gathered import watch_damage
from arbiter.results.store import Store

from .output import emit, say, warn


def results_file(
    file: str,
    store_folder: Path | None = None,
    room: str | None = None,
    reads: str = "this command reads one",
) -> Any:
    """A tournament or an arena file, as the commands that read results take it: for its
    store (its `output`), and a tournament's schedule; no engine is started or looked for.
    An arena file is its room `room` (see `arena_room`; `reads` words the refusal)."""
    from arbiter.arena.config import is_arena_file
    from arbiter.runs.tournament import load_tournament

    if is_arena_file(file):
        return arena_room(file, room, reads)
    if room is not None:
        raise no_rooms_here(file)
    return load_tournament(file, engines_here=False, store_folder=store_folder)


def arena_room(file: str, room: str | None, reads: str = "this command reads one") -> Any:
    """The room `room` of the arena file `file`, or its only arena where it has one room
    or none, to read its store; a file of several rooms without `room` is refused,
    naming them, and a room whose store the server has not made yet too."""
    from arbiter.arena.config import load_arena, pick_room
    from arbiter.arena.status import no_store

    arena = load_arena(file, engines_here=False)
    if room is None and len(arena.rooms) > 1:
        names = [r.room for r in arena.rooms]
        raise ConfigError(
            f"the arena has rooms {', '.join(names)}, each with a store of its own, and {reads}",
            where=file,
            hint=f"add --room NAME, e.g. --room {names[0]}",
        )
    spec = pick_room(arena, room)
    if not spec.output.exists():
        raise no_store(spec)
    return spec


def no_rooms_here(file: str) -> ConfigError:
    """`--room` given with a file that is not an arena file."""
    return ConfigError(
        f"{file} is not an arena file, and only an arena file has rooms",
        where="--room",
        hint="leave --room out",
    )


def arena_of_rooms(sources: Sequence[str], room: str | None) -> Any:
    """The arena whose every room a summarising command shows: SOURCES is one arena file
    with rooms and no `--room` picks one. None otherwise."""
    from arbiter.arena.config import is_arena_file, load_arena

    if room is not None or len(sources) != 1 or not sources[0].endswith(".toml"):
        return None
    if not is_arena_file(sources[0]):
        return None
    arena = load_arena(sources[0], engines_here=False)
    return arena if arena.rooms else None


@dataclass(frozen=True)
class Source:
    """One SOURCE of a command that combines them: the argument as given (its label in
    messages), the store or records file read for it, and the tournament of a
    tournament file (its schedule's order, its format's result, its tests)."""

    label: str
    path: str
    tournament: Any = None
    room: str = ""  # an arena file's room read

    @property
    def name(self) -> str:
        """The source as a page names it: its file's name, and the room read."""
        return Path(self.label).name + (f" (room {self.room})" if self.room else "")


def sources_read(sources: Sequence[str], room: str | None, reads: str) -> list[Source]:
    """What each SOURCE stands for: a tournament file its store, an arena file its room
    `room`'s store (refused where it has several and `room` is None: `reads` says why
    one is needed), anything else itself. `room` must fit an arena file among them."""
    from arbiter.arena.config import is_arena_file

    out = []
    arenas = 0
    for source in sources:
        if not source.endswith(".toml"):
            out.append(Source(source, source))
            continue
        if is_arena_file(source):
            arenas += 1
            arena = arena_room(source, room, reads)
            out.append(Source(source, str(arena.output), room=arena.room))
            continue
        t = results_file(source)
        out.append(Source(source, str(t.output), t))
    if room is not None and not arenas:
        raise ConfigError(
            "no SOURCE is an arena file, and only an arena file has rooms",
            where="--room",
            hint="leave --room out, or give the arena file",
        )
    return out


def tournament_file(file: str | None, example: str | None) -> tuple[str, Path | None]:
    """The tournament file a command reads, and where its store is when not beside it."""
    from .scaffold import EXAMPLES

    if (file is None) == (example is None):
        raise ConfigError(
            "give a tournament FILE or --example NAME"
            if file is None
            else "give either FILE or --example, not both",
            where="FILE",
            hint="e.g. arbiter tournament run --example demo",
        )
    if example is not None:
        return str(EXAMPLES / f"{example}.toml"), Path.cwd()
    assert file is not None
    return file, None


def damaged(strict: bool) -> Callable[[Store], None]:
    """What a reading command does with a store's damaged rows: `skipped` lines on
    stderr, or (--strict) a refusal."""

    def watch(store: Store) -> None:
        watch_damage(store, strict, warn)

    return watch


def show_arena_status(arena: Any, room: str | None, as_json: bool, strict: bool) -> None:
    """`arena status`, and `tournament status` of an arena file: the room `room`, or the
    arena without rooms, as ever (no store yet is an error); else every room in turn,
    headed by its name, and in JSON one object keyed by room name, where a room without
    a store yet is one line, not an error."""
    from arbiter.arena.config import pick_room
    from arbiter.arena.status import read_arena_status

    if room is not None or not arena.rooms:
        status = read_arena_status(pick_room(arena, room), damaged(strict))
        if as_json:
            emit(json.dumps(status.as_json()))
            return
        for line in status.lines():
            say(line)
        return
    rooms = [read_arena_status(r, damaged(strict), unplayed=True) for r in arena.rooms]
    if as_json:
        emit(json.dumps({s.spec.room: s.as_json() for s in rooms}))
        return
    for number, status in enumerate(rooms):
        if number:
            say("")
        for line in status.lines():
            say(line)
