"""An arena's status from its store: games stored, void attempts, the ratings with the
anchors held at theirs. It reads the store only, so it works while the server runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arbiter.errors import ConfigError
from arbiter.results.standings import Standings
from arbiter.results.store import Store
from arbiter.views.standings_text import table, to_json


@dataclass(frozen=True)
class ArenaStatus:
    spec: Any  # the arena file's ArenaSpec
    stored: int
    voids: int
    board: Standings | None
    unplayed: bool = False  # a room whose store the server has not made yet

    def as_json(self) -> dict[str, Any]:
        spec = self.spec
        data: dict[str, Any] = {
            "arena": spec.name,
            "room": spec.room or None,
            "store": str(spec.output),
            "games": self.stored,
            "void_attempts": self.voids,
            "anchors": dict(spec.anchors),
        }
        if self.board is not None:
            data["standings"] = to_json(self.board)
        if self.unplayed:
            data["note"] = self.note()
        return data

    def note(self) -> str:
        return unplayed_note(self.spec)

    def lines(self) -> list[str]:
        spec = self.spec
        if self.unplayed:
            return [f"Arena {spec.title}: {self.note()}."]
        out = [
            f"Arena {spec.title}: {self.stored} games stored, {self.voids} void attempts,"
            f" in {spec.output}."
        ]
        if self.board is not None:
            out.append(table(self.board))
        return out


def read_arena_status(
    spec: Any, damaged: Callable[[Store], None], *, unplayed: bool = False
) -> ArenaStatus:
    """The status of the arena `spec`; `damaged` is called with its store first, to say
    or refuse its damaged rows. Where the server has not made a store yet: a status that
    says so with `unplayed` (one room among others), else ConfigError."""
    from arbiter.arena.fit_process import arena_standings

    if not spec.output.exists() and unplayed:
        return ArenaStatus(spec, 0, 0, None, unplayed=True)
    if not spec.output.exists():
        raise no_store(spec)
    with Store.open_read(spec.output) as store:
        damaged(store)
        stored, voids = store.games_stored(), store.void_count()
    board = arena_standings(spec.output, spec.anchors) if stored else None
    return ArenaStatus(spec, stored, voids, board)


def no_store(spec: Any) -> ConfigError:
    """The error of a reader given an arena (or room) whose store the server has not
    made yet: nobody has played there."""
    return ConfigError(
        f"no store yet at {spec.output}",
        where=str(spec.path),
        hint=f"start the server: arbiter arena serve {spec.path}",
    )


def unplayed_note(spec: Any) -> str:
    """What a summary says, in its place, of a room whose store does not exist yet."""
    return f"no store yet at {spec.output} (the server makes it when it starts)"
