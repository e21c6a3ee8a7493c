"""Whether a store can be trusted: each row checked as the records reader would check
it, and the digests that spare a reader from checking again the rows a run wrote."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from arbiter.errors import ConfigError
from arbiter.results.records import RATED, GameRecord
from arbiter.results.store.connection import StoreConnection
from arbiter.results.store.failures import RUN_HINT, _foreign_hint
from arbiter.results.store.rows import Damage
from arbiter.results.store.schema import (
    _SCANNED,
    _SUMMED_TRIGGERS,
    _TABLES,
    _TRIGGERS,
    SCHEMA_VERSION,
    _columns,
)


def _row_digest(values: tuple[object, ...], record: bytes) -> bytes:
    """What a run wrote in a games row (the `_SCANNED` columns and the record): a reader
    that finds the row as written needs not check its record again (a row changed since,
    by hand, by another program or by damage to the file, is checked in full)."""
    digest = hashlib.blake2b(repr(values).encode("utf-8", "surrogatepass"), digest_size=16)
    digest.update(b"\0")
    digest.update(record)
    return digest.digest()


def _label(key: str, value: object) -> str:
    text = repr(value)
    return f"{key} {text[:80] + '...' if len(text) > 80 else text}"


def _json(value: object, what: str) -> tuple[Any, str]:
    """A stored JSON text parsed, or what is wrong with it."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return None, f"{what} is not UTF-8 text"
    if not isinstance(value, str):
        return None, f"{what} is not JSON text (a stored {type(value).__name__})"
    try:
        return json.loads(value), ""
    except (ValueError, RecursionError):
        return None, f"{what} is not JSON"


def _record_problem(value: object, void: bool, row: Mapping[str, object]) -> str:
    """What is wrong with a stored record and its row, or "" (the records reader's rules,
    and the row's columns must say what the record says)."""
    data, problem = _json(value, "record")
    if problem:
        return problem
    try:
        record = GameRecord.from_json(data)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        return f"record is not a game record ({str(exc)[:200]})"
    if record.void != void:
        return (
            "record is a void attempt among rated games"
            if record.void
            else "record is a rated game among void attempts"
        )
    for key in ("game_id", "seat1", "seat2"):
        if row[key] != getattr(record, key):
            return f"the row's {key} is not the record's"
    if row["termination"] != record.termination.value:
        return "the row's termination is not the record's"
    if void:
        return ""
    if record.seat1 == record.seat2:
        return "both seats have the same name"
    if row["termination"] not in RATED:
        return f"termination {row['termination']!r} on a rated game"
    seat = row["winner_seat"]
    if type(seat) is not int or seat not in (1, 2):
        return "winner_seat is neither 1 nor 2"
    winner = record.seat1 if seat == 1 else record.seat2
    if record.winner != winner or row["winner"] != winner:
        return "the winner is not the seat the row names"
    if row["started"] != record.started:
        return "the row's start time is not the record's"
    if not isinstance(row["pair_key"], str):
        return "pair_key is not text"
    if type(row["number"]) is not int:
        return "number is not an integer"
    return ""


# What reading a damaged database can raise: SQLite's errors, and the UnicodeDecodeError
# Python's sqlite3 raises when a damaged file puts bytes that are not UTF-8 in an error


class CheckedStore(StoreConnection):
    """Every row checked before anyone relies on it: a reader notes damaged rows, a run
    refuses them."""

    def _check(self, *, run: bool, origin: str = "") -> bool:
        """Read what the store holds before anyone relies on it; True if it is new
        (no tables yet). A reader notes damaged rows; a run refuses them."""
        entries = self._q("SELECT type, name FROM sqlite_master")
        if not entries:
            return True
        tables = {str(name) for kind, name in entries if kind == "table"}
        self._digests = "games_checked" in tables
        triggers = {str(name) for kind, name in entries if kind == "trigger"}
        self._kept = self._digests and "seats_played" in tables and set(_TRIGGERS) <= triggers
        if self._kept:
            # A row replaced by hand (INSERT OR REPLACE fires no delete trigger) leaves its
            # seats counted twice and its digest behind: the totals tell, and then the
            # counts are not used and the rows without a digest are looked for one by one.
            rows, digested, seats = self._q(
                "SELECT (SELECT COUNT(*) FROM games), (SELECT COUNT(*) FROM games_checked),"
                " (SELECT TOTAL(games) FROM seats_played)"
            )[0]
            self._kept = seats == 2 * rows
            self._all_digested = self._kept and digested == rows
            self._summed = (
                self._kept
                and {"records_seen", "pies_seen"} <= tables
                and set(_SUMMED_TRIGGERS) <= triggers
                and self._q(
                    "SELECT (SELECT TOTAL(games) FROM records_seen),"
                    " (SELECT TOTAL(games) FROM pies_seen)"
                )[0]
                == (rows, rows)
            )
        where = str(self.path)
        hint = RUN_HINT if run else "restore it from a copy"
        if "meta" not in tables:
            raise ConfigError(
                "an SQLite database, but not a results store (no meta table)",
                where=where,
                hint=_foreign_hint(run, origin),
            )
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise ConfigError(
                f"a results store without its {', '.join(missing)} table", where=where, hint=hint
            )
        for table in _TABLES:
            have = {str(c) for (c,) in self._q("SELECT name FROM pragma_table_info(?)", (table,))}
            lacking = [c for c in _columns()[table] if c not in have]
            if lacking:
                raise ConfigError(
                    f"the store's {table} table lacks column(s) {', '.join(lacking)}",
                    where=where,
                    hint=hint,
                )
        if run:
            # A run writes: every page of the file, indexes too, must be sound first.
            verdict = [str(v) for (v,) in self._q("PRAGMA quick_check(5)")]
            if verdict != ["ok"]:
                raise ConfigError(
                    f"the database file is damaged ({'; '.join(verdict)[:300]})",
                    where=where,
                    hint=hint,
                )
        version = self._q("SELECT value FROM meta WHERE key='schema'")
        if not version:
            raise ConfigError("a results store without its schema version", where=where, hint=hint)
        if str(version[0][0]) != str(SCHEMA_VERSION):
            raise ConfigError(
                f"store schema {str(version[0][0])[:40]!r} is not supported by"
                f" this version (expects {SCHEMA_VERSION})",
                where=where,
                hint="use the version of arbiter that wrote it",
            )
        self.damage = self._scan(trust=not run and self._kept)
        if run and self.damage:
            more = len(self.damage) - 1
            raise ConfigError(
                str(self.damage[0]) + (f" (and {more} more damaged rows)" if more else ""),
                hint=RUN_HINT,
            )
        return False

    def _scan(self, *, trust: bool = False) -> list[Damage]:
        """Every row checked as its readers will use it; the damaged ones, in table order.

        With `trust` (a reader of a store whose triggers drop the digest of a games row
        changed since a run wrote it), only the games rows without a digest are read
        here; a reader that reads a record checks its digest then (`record_texts`), so
        that damage to the file itself is still found where it matters."""
        name = str(self.path)
        found: list[Damage] = []
        # JSON columns are read as bytes: `_json` says when they are not UTF-8 text.
        for rowid, key, value, kind in self._q(
            "SELECT rowid, key, CAST(value AS BLOB), typeof(value) FROM meta ORDER BY rowid"
        ):
            if key in ("conditions", "definition"):
                data, problem = _json(value, "value")
                if not problem and not isinstance(data, dict):
                    problem = "value is not a JSON object"
                if problem:
                    found.append(Damage(name, "meta", int(rowid), _label("key", key), problem))
            elif key == "tournament" and (
                kind != "text" or _json(value, "value")[1] == "value is not UTF-8 text"
            ):
                found.append(
                    Damage(name, "meta", int(rowid), _label("key", key), "value is not text")
                )
        for rowid, engine, definition, command in self._q(
            "SELECT rowid, name, CAST(definition AS BLOB), CAST(command AS BLOB)"
            " FROM engines ORDER BY rowid"
        ):
            data, problem = _json(definition, "definition")
            if not problem and not isinstance(data, dict):
                problem = "definition is not a JSON object"
            if not problem:
                data, problem = _json(command, "command")
                if not problem and not (
                    isinstance(data, list) and all(isinstance(w, str) for w in data)
                ):
                    problem = "command is not a JSON list of strings"
            if not problem and not isinstance(engine, str):
                problem = "name is not text"
            if problem:
                found.append(Damage(name, "engines", int(rowid), _label("name", engine), problem))
        bad_games: list[int] = []
        columns = _SCANNED
        if trust:
            self._trusted = True
            unchecked = (
                iter(())
                if self._all_digested
                else self._rows(
                    self._cursor(
                        "SELECT g.rowid FROM games AS g WHERE NOT EXISTS"
                        " (SELECT 1 FROM games_checked AS c WHERE c.game_rowid = g.rowid)"
                        " ORDER BY g.rowid"
                    )
                )
            )
            one = f"SELECT rowid, CAST(record AS BLOB), {', '.join(columns)}, NULL FROM games"
            rows: Iterator[Any] = (
                row for (rowid,) in unchecked for row in self._q(one + " WHERE rowid = ?", (rowid,))
            )
        elif self._digests:
            rows = self._rows(
                self._cursor(
                    "SELECT g.rowid, CAST(g.record AS BLOB),"
                    f" {', '.join('g.' + c for c in columns)}, c.digest FROM games AS g"
                    " LEFT JOIN games_checked AS c ON c.game_rowid = g.rowid"
                    " ORDER BY g.rowid"
                )
            )
        else:
            rows = self._rows(
                self._cursor(
                    f"SELECT rowid, CAST(record AS BLOB),"
                    f" {', '.join(columns)}, NULL FROM games"
                    " ORDER BY rowid"
                )
            )
        for rowid, record, *values, digest in rows:
            if (
                digest is not None
                and isinstance(record, bytes)
                and digest == _row_digest(tuple(values), record)
            ):
                continue  # as the run wrote it, and checked it then
            problem = _record_problem(record, False, dict(zip(columns, values, strict=True)))
            if problem:
                bad_games.append(int(rowid))
                found.append(
                    Damage(name, "games", int(rowid), _label("game_id", values[0]), problem)
                )
        bad_voids: list[int] = []
        cursor = self._cursor(
            "SELECT rowid, CAST(record AS BLOB), game_id, seat1, seat2,"
            " termination FROM voids ORDER BY rowid"
        )
        for rowid, record, game_id, seat1, seat2, termination in self._rows(cursor):
            row = {"game_id": game_id, "seat1": seat1, "seat2": seat2, "termination": termination}
            problem = _record_problem(record, True, row)
            if problem:
                bad_voids.append(int(rowid))
                found.append(Damage(name, "voids", int(rowid), _label("game_id", game_id), problem))
        self._skip_games = json.dumps(bad_games)
        self._skip_voids = json.dumps(bad_voids)
        return found

    def integrity(self) -> list[str]:
        """SQLite's own check of the whole file (pages, indexes): the problems it finds,
        none for a sound file. What a crash (kill -9, a power loss) must never leave."""
        found = [str(row[0]) for row in self._q("PRAGMA integrity_check")]
        return [] if found == ["ok"] else found
