"""The connection under `Store`: opening state, the query helpers and the store's notes
(meta), shared by its checks, queries and writes."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

from arbiter.errors import ArbiterError
from arbiter.results.store.failures import DB_ERRORS, _sqlite_failure
from arbiter.results.store.rows import Damage


class StoreConnection:
    """An open store's connection and the query helpers every part of `Store` reads
    through: a damaged page or a foreign file is one clear error, never a traceback, and
    the rows found damaged are left out of every read."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self.db = connection
        self.damage: list[Damage] = []  # rows left out of every read (readers only)
        self._skip_games = "[]"  # rowids of damaged rows, as JSON arrays for SQL
        self._skip_voids = "[]"
        self._fd: int | None = None  # the locked database file (run) or the file read
        self._identity: tuple[int, int] | None = None  # its (st_dev, st_ino), for a run
        self._written = 0  # games stored by this run
        self._writer = False  # opened to write: failures get the run's hints
        self._origin = ""  # where the path came from (a tournament file's key)
        self._wal_pending = False  # switch to WAL mode before the first write
        self._digests = False  # the store keeps the digests of the games rows written
        self._kept = False  # the triggers keep the digests and `seats_played` up to date
        self._summed = False  # the triggers keep `records_seen` and `pies_seen` too
        self._all_digested = False  # every games row has a digest (as far as counts tell)
        self._trusted = False  # read: rows with a digest were not read at opening
        self.on_damage: Callable[[Damage], None] | None = None  # told of damage found later

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        # SQLite closes first: closing another descriptor of the database file while
        # SQLite holds its POSIX locks on it would drop them.
        with contextlib.suppress(sqlite3.Error):
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        self.db.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ---------------------------------------------------------------- queries

    def _failure(self, exc: sqlite3.Error | UnicodeDecodeError) -> ArbiterError:
        return _sqlite_failure(exc, self.path, run=self._writer, origin=self._origin)

    def _exec(self, sql: str) -> None:
        try:
            self.db.execute(sql)
        except DB_ERRORS as exc:
            raise self._failure(exc) from exc

    def _cursor(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, params)
        except DB_ERRORS as exc:
            raise self._failure(exc) from exc

    def _rows(self, cursor: sqlite3.Cursor) -> Iterator[Any]:
        """A query's rows as they come; a damaged page met on the way is one clear error."""
        while True:
            try:
                rows = cursor.fetchmany(256)
            except DB_ERRORS as exc:
                raise self._failure(exc) from exc
            if not rows:
                return
            yield from rows

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """A read query; a damaged or foreign file is one clear error, not a traceback."""
        return list(self._rows(self._cursor(sql, params)))

    # The rows every read may use: damaged ones are left out.
    _GAMES = "(SELECT * FROM games WHERE rowid NOT IN (SELECT value FROM json_each(?)))"
    _VOIDS = "(SELECT * FROM voids WHERE rowid NOT IN (SELECT value FROM json_each(?)))"

    def _games(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return list(self._games_iter(sql, params))

    def _games_iter(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Any]:
        """`_games` row by row: what a reader of every game uses, so that its memory
        does not follow the number of games. Where no row is left out, the table is
        read as it is: the test of every row against the list costs about half a second
        a million games, per query."""
        if self._skip_games == "[]":
            return self._rows(self._cursor(sql.replace("{games}", "games"), params))
        return self._rows(
            self._cursor(sql.replace("{games}", self._GAMES), (self._skip_games, *params))
        )

    # ------------------------------------------------------------------ meta

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key=?", (key,))
        return None if not rows else str(rows[0][0])

    def _damaged(self, table: str, rowid: int, label: str, problem: str) -> None:
        """A row found damaged after opening: noted, left out of every later read, and
        told to `on_damage` (which may raise, to stop the reader)."""
        damage = Damage(str(self.path), table, rowid, label, problem)
        self.damage.append(damage)
        skipped = json.loads(self._skip_games)
        self._skip_games = json.dumps([*skipped, rowid])
        if self.on_damage is not None:
            self.on_damage(damage)
