"""The store's writes, each one transaction: a game committed is a game kept, whatever
happens to the process next."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from typing import Any

from arbiter.errors import ConfigError, StoreError
from arbiter.results.records import GameRecord
from arbiter.results.store.failures import DB_ERRORS
from arbiter.results.store.files import _dated
from arbiter.results.store.integrity import _row_digest
from arbiter.results.store.queries import StoreQueries
from arbiter.results.store.rows import EngineEntry, Scheduled
from arbiter.results.store.schema import (
    _KEPT,
    _PLAYED_KEY,
    _READ_AIDS,
    _SUMMED,
    _SUMMED_FILL,
    _SUMMED_TRIGGERS,
    _TRIGGERS,
    TEXT_CAP,
    _played,
)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class StoreWrites(StoreQueries):
    """What a run writes: its conditions and engines, each finished attempt in one
    transaction, and its own notes; after every write, that the file is still the one
    it locked."""

    def begin(
        self,
        name: str,
        conditions: Mapping[str, Any],
        definition: Mapping[str, Any],
        engines: Mapping[str, EngineEntry],
    ) -> None:
        """Record the tournament's conditions and engines (new engines are added). Only
        the names given are looked up: an arena registers each engine when it first
        plays, and reading every stored definition each time made a ramp of N engines
        cost N² (10,000 engines: minutes of its event loop)."""
        names = list(engines)
        known = {
            str(name)
            for (name,) in self._q(
                "SELECT name FROM engines WHERE name IN (SELECT value FROM json_each(?))",
                (json.dumps(names),),
            )
        }
        with self._transaction():
            if self.meta("conditions") is None:
                self._set_meta("tournament", name)
                self._set_meta("conditions", json.dumps(dict(conditions), sort_keys=True))
                self._set_meta("created", _now())
            self._set_meta("definition", json.dumps(dict(definition), sort_keys=True))
            for engine_name, entry in engines.items():
                if engine_name in known:
                    continue
                self.db.execute(
                    "INSERT INTO engines (name, definition, command, program_sha256,"
                    " script_sha256, first_seen) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        engine_name,
                        json.dumps(dict(entry.definition), sort_keys=True),
                        json.dumps(list(entry.command)),
                        entry.program_sha256,
                        entry.script_sha256,
                        _now(),
                    ),
                )

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        """What the engine answered to `name` and `version` (labels, capped)."""
        with self._transaction():
            self.db.execute(
                "UPDATE engines SET reply_name=?, reply_version=? WHERE name=?",
                (reply_name[:TEXT_CAP], reply_version[:TEXT_CAP], name),
            )

    # ----------------------------------------------------------------- games

    def _use_wal(self, *, indexes: bool = True) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        if indexes:  # an older store gets the readers' indexes with its first write
            self.db.executescript(_READ_AIDS)
            self._keep_up()
        self._wal_pending = False

    def _keep_up(self) -> None:
        """Give an older store the triggers and the `seats_played` counts of its games,
        in one transaction. Its digests were all checked when this run opened it, so from
        now on a digest found is one the triggers would have removed had its row changed."""
        names = {
            str(n)
            for (n,) in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'table')"
            )
        }
        self._keep_summed(names)
        if {*_TRIGGERS, "seats_played"} <= names and self.db.execute(
            "SELECT (SELECT TOTAL(games) FROM seats_played) = 2 * (SELECT COUNT(*) FROM games)"
        ).fetchone()[0]:
            return  # (counted anew when the totals disagree, or the table is gone)
        seats = " UNION ALL ".join(
            f"SELECT seat{n} AS engine, {_played('record', n)} FROM games" for n in (1, 2)
        )
        self._rebuild(
            "".join(f"DROP TRIGGER IF EXISTS {name};" for name in _TRIGGERS)
            + "DROP TABLE IF EXISTS seats_played;"
            + _KEPT
            + "INSERT INTO seats_played (key, engine, tc, variant, versions, command,"
            f" games) SELECT {_PLAYED_KEY}, engine, tc, variant, versions, command,"
            f" COUNT(*) FROM ({seats}) GROUP BY 1;"
        )

    def _keep_summed(self, names: set[str]) -> None:
        """Give an older store `records_seen`, `pies_seen` and their triggers, its games
        counted into them, in one transaction (once: a store's first write by a run of
        this version reads every record once, so that no report has to)."""
        if {*_SUMMED_TRIGGERS, "records_seen", "pies_seen"} <= names and self.db.execute(
            "SELECT (SELECT TOTAL(games) FROM records_seen) = (SELECT COUNT(*) FROM games)"
            " AND (SELECT TOTAL(games) FROM pies_seen) = (SELECT COUNT(*) FROM games)"
        ).fetchone()[0]:
            return
        self._rebuild(
            "".join(f"DROP TRIGGER IF EXISTS {name};" for name in _SUMMED_TRIGGERS)
            + "DROP TABLE IF EXISTS records_seen; DROP TABLE IF EXISTS pies_seen;"
            + _SUMMED
            + _SUMMED_FILL
        )

    def _rebuild(self, script: str) -> None:
        """Run `script` (tables and triggers made again) as one transaction: all of it
        or, on any failure, none. A script, not `_transaction`: `executescript` commits
        whatever transaction is open before it runs."""
        try:
            self.db.executescript("BEGIN IMMEDIATE;" + script + "COMMIT;")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            if self._wal_pending:
                self._use_wal()
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except DB_ERRORS as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            cause = "no space left on device; " if code == sqlite3.SQLITE_FULL else ""
            raise StoreError(
                f"cannot write the results store {self.path}: {cause}{exc}; the games stored"
                " so far are intact, fix the problem (disk space, permissions) and run again"
                " to resume"
            ) from exc
        self.verify()

    def verify(self) -> None:
        """Raise StoreError if the store this run locked is no longer the file at its
        path (removed, or replaced by another file): what it held is saved beside it.

        Called after every write and before a run reports success, so a run never calls
        games stored that nobody will find.
        """
        if self._identity is None:
            return
        try:
            st = os.stat(self.path)
            here = (st.st_dev, st.st_ino) == self._identity
        except OSError:
            here = False
        if not here:
            raise self._lost()

    def _lost(self) -> StoreError:
        """Say what a run's store held when it vanished from its path, and keep a copy:
        the file is still readable through the open connection."""
        try:
            held = int(self.db.execute("SELECT COUNT(*) FROM games").fetchone()[0])
        except DB_ERRORS:
            held = -1
        saved = None
        if held > 0:
            target = _dated(self.path, "lost")
            try:
                with contextlib.closing(sqlite3.connect(target)) as copy:
                    self.db.backup(copy)
                saved = target
            except (sqlite3.Error, OSError):
                with contextlib.suppress(OSError):
                    target.unlink()
        what = (
            ""
            if held < 0
            else (f"; it held {held} games ({self._written} of them stored by this run)")
        )
        if saved is not None:
            then = f", saved to {saved}: move that file back to {self.path} and run again to resume"
        elif held > 0:
            then = ", and they could not be saved: they are lost with the file"
        else:
            then = ""
        return StoreError(
            f"the results store {self.path} was removed or replaced during the"
            f" run, which stopped{what}{then}"
        )

    def write(self, game: Scheduled, record: GameRecord) -> None:
        """Store a finished attempt: a rated game once by id, or a void attempt.

        The row names the seats as the record does (the engines' names, fixed for the
        run), whatever keys the schedule used for them (a match's are "0" and "1")."""
        data = record.dumps()
        with self._transaction():
            if record.void:
                self.db.execute(
                    "INSERT INTO voids (game_id, seat1, seat2, termination, reason, finished,"
                    " record) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        game.game_id,
                        record.seat1,
                        record.seat2,
                        record.termination.value,
                        record.reason[:TEXT_CAP],
                        record.finished,
                        data,
                    ),
                )
                return
            winner_seat = 1 if record.winner == record.seat1 else 2
            cursor = self.db.execute(
                "INSERT OR IGNORE INTO games (game_id, number, round, pair_key, seat1, seat2,"
                " opening, winner, winner_seat, termination, plies, started, finished, record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    game.game_id,
                    game.number,
                    game.round,
                    game.pair_key,
                    record.seat1,
                    record.seat2,
                    " ".join(game.opening),
                    record.winner,
                    winner_seat,
                    record.termination.value,
                    record.plies,
                    record.started,
                    record.finished,
                    data,
                ),
            )
            inserted = cursor.rowcount
            self._written += max(inserted, 0)
            if inserted == 1:
                values = (
                    game.game_id,
                    record.seat1,
                    record.seat2,
                    record.winner,
                    winner_seat,
                    record.termination.value,
                    record.started,
                    game.pair_key,
                    game.number,
                )
                self.db.execute(
                    "INSERT OR REPLACE INTO games_checked (game_rowid, digest) VALUES (?, ?)",
                    (cursor.lastrowid, _row_digest(values, data.encode())),
                )

    def remember(self, key: str, value: str) -> None:
        """Keep a note of the run's own in the store (an arena's registered names)."""
        with self._transaction():
            self._set_meta(key, value)

    def engine_started(self, seconds: float) -> None:
        """Count an engine start and its cost (launch to handshake) over the store's life,
        so that an organiser sees what restarting engines costs (`status`)."""
        count, total = self.engine_starts()
        with self._transaction():
            self._set_meta(
                "engine_starts",
                json.dumps({"count": count + 1, "seconds": round(total + seconds, 3)}),
            )

    def accept_rebuild(self, name: str, program: str | None, script: str | None) -> None:
        """Take an engine's new build (its program's and script's hashes) as the same
        engine from now on, and say so in the store: `meta.rebuilds` lists every accepted
        change with its time and hashes."""
        rows = self._q("SELECT program_sha256, script_sha256 FROM engines WHERE name=?", (name,))
        if not rows:
            return
        try:
            changes = json.loads(self.meta("rebuilds") or "[]")
        except ValueError:
            changes = None
        if not isinstance(changes, list):
            raise ConfigError(
                "the store's meta row 'rebuilds' is damaged (not a JSON list)",
                where=str(self.path),
                hint="restore the store from a copy, or start over with --fresh",
            )
        changes.append(
            {
                "engine": name,
                "at": _now(),
                "program_sha256": [rows[0][0], program],
                "script_sha256": [rows[0][1], script],
            }
        )
        with self._transaction():
            self.db.execute(
                "UPDATE engines SET program_sha256=?, script_sha256=? WHERE name=?",
                (program, script, name),
            )
            self._set_meta("rebuilds", json.dumps(changes))
