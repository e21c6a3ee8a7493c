"""The files the reading commands take (a tournament or arena file, a match's store) as
what they stand for, and how a damaged store row is reported."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.errors import ConfigError
from arbiter.results.gathered import watch_damage
from arbiter.results.store import Store

from .output import emit, say, warn


def results_file(file: str, store_folder: Path | None = None) -> Any:
    """A tournament or an arena file, as the commands that read results take it: for its
    store (its `output`), and a tournament's schedule; no engine is started or looked for."""
    from arbiter.arena.config import is_arena_file, load_arena
    from arbiter.runs.tournament import load_tournament

    if is_arena_file(file):
        return load_arena(file, engines_here=False)
    return load_tournament(file, engines_here=False, store_folder=store_folder)


def is_tournament(t: Any) -> bool:
    from arbiter.runs.tournament import Tournament

    return isinstance(t, Tournament)


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


def show_arena_status(spec: object, as_json: bool, strict: bool) -> None:
    """`arena status`, and `tournament status` of an arena file."""
    from arbiter.arena.status import read_arena_status

    status = read_arena_status(spec, damaged(strict))
    if as_json:
        emit(json.dumps(status.as_json()))
        return
    for line in status.lines():
        say(line)
