"""The results store of a tournament or a match: one SQLite file in WAL mode, the only
module that knows SQL.

The store is the truth. A game is committed before anyone is told about it, and it is
keyed by its schedule id, so a game that comes back twice is stored once and a resumed
run skips it. Each commit is a single transaction: after `kill -9` at any moment the file
holds every finished game and nothing half-written; in-flight games were never stored and
are replayed. Only the driver writes; games in play never touch the file.

One run at a time: a run holds an exclusive `flock` on the database file itself for as
long as it runs. The kernel releases it when the holder dies however it dies, and unlike a
lock file beside the store it cannot be deleted from under the run (a deleted lock file
let a second run make a new one and play the same games). Because the lock is on the
file, not on its name, a run can also tell when its store is no longer the file at its
path (removed, or replaced by another file): after every write it compares the path's
device and inode with the file it locked, and stops, keeping a copy of what the lost file
held. On Linux `flock` and SQLite's own POSIX record locks are independent, so neither
disturbs the other (on NFS flock is emulated with record locks; SQLite in WAL mode is not
for network filesystems anyway).

Readers (status, ratings, report, export) change nothing: they open the database
read-only and read one snapshot, one read transaction for everything they show. A WAL
database opened read-only still needs its -wal and -shm files, which SQLite would create;
so a reader first takes a shared `flock`, which keeps a run from starting while it reads
(a run waits for readers, and refuses only another run), and when no run holds the store
and there is no write-ahead log to read, it reads the file as immutable. Otherwise (a run
in progress, or the log of a run that died) it reads through the files that are there;
the only file it can then touch is -shm, SQLite's shared-memory index of the log, which
every reader of a live WAL database updates (and which SQLite makes anew if a log has
outlived it: without it the log cannot be read).

Every row a reader or a run relies on is checked before use: a stored record means what a
records line means (`GameRecord.from_json`) and must agree with its row. A row that does
not is a `Damage`: readers report it and leave it out, and a run refuses to build on it.
A run checks every row when it opens a store (a row as the run wrote it, by its digest).
A reader of a store whose triggers are in place reads no record to open it: the triggers
drop the digest of any games row inserted, changed or deleted by anyone, so only the
rows without one are checked then, and each record the reader goes on to read (export,
report, the games of `show`) is checked against its digest as it is read. What a reader
of the columns alone (status, ratings) does not see is damage to the file that changed a
record behind SQLite's back (no trigger ran); the next run's opening does.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import itertools
import json
import operator
import os
import sqlite3
import stat
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from arbiter.errors import ArbiterError, ConfigError, StoreError
from arbiter.results.records import FAULTS, RATED, GameRecord

SCHEMA_VERSION = 1
_T = TypeVar("_T")
TEXT_CAP = 4096  # engine-originated labels (name, version) are stored up to this length

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS engines (
    name TEXT PRIMARY KEY,          -- the identity from the tournament file
    definition TEXT NOT NULL,       -- the engine's conditions of play, as JSON
    command TEXT NOT NULL,          -- argv as started, as JSON
    program_sha256 TEXT,
    script_sha256 TEXT,
    reply_name TEXT,                -- what it answered to `name`: a label only
    reply_version TEXT,
    first_seen TEXT
);
CREATE TABLE IF NOT EXISTS games (
    game_id TEXT PRIMARY KEY,
    number INTEGER NOT NULL,
    round INTEGER NOT NULL,
    pair_key TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    seat2 TEXT NOT NULL,
    opening TEXT NOT NULL,          -- space-separated plies
    winner TEXT NOT NULL,
    winner_seat INTEGER NOT NULL,   -- 1 or 2
    termination TEXT NOT NULL,
    plies INTEGER NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    record TEXT NOT NULL            -- the full JSON record
);
CREATE TABLE IF NOT EXISTS voids (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    game_id TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    seat2 TEXT NOT NULL,
    termination TEXT NOT NULL,
    reason TEXT NOT NULL,
    finished TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_by_number ON games (number);
"""

# What the readers' queries read instead of the games table, whose rows carry whole
# records: each index holds the columns of its queries, so that status, ratings, report
# and resume read a few bytes a game, not its record; and the digest of each games row a
# run wrote, so that opening a store does not replay every stored game again (a new
# store has them; a run adds them to an older one with its first write).
_READ_AIDS = """
CREATE INDEX IF NOT EXISTS games_by_seats ON games (seat1, seat2, winner_seat, termination,
                                                 plies);
CREATE INDEX IF NOT EXISTS games_by_pair ON games (pair_key, number, seat1, seat2, winner);
CREATE INDEX IF NOT EXISTS games_by_start ON games (game_id, started);
CREATE INDEX IF NOT EXISTS voids_by_game ON voids (game_id);
CREATE TABLE IF NOT EXISTS games_checked (
    game_rowid INTEGER PRIMARY KEY, -- a games row written by a run
    digest BLOB NOT NULL            -- _row_digest of its columns and record, as written
);
"""

# What a seat's engine played under, as its record says: its time control, the board,
# the versions the engines answered and its command (JSON text, or NULL); a record that
# is not JSON gives NULLs (it is damaged: readers leave it out, writes do not fail on it).
_PLAYED_FIELDS = {"tc": "$.tc.seat{n}", "variant": "$.variant", "versions": "$.versions",
                  "command": "$.commands.seat{n}"}  # fmt: skip


def _played(record: str, n: int) -> str:
    """The SQL of `SeatPlayed`'s four values for seat `n` of `record` (a column)."""
    return ", ".join(
        f"CASE WHEN json_valid({record}) THEN json_extract({record}, '{path.format(n=n)}')"
        f" END AS {name}"
        for name, path in _PLAYED_FIELDS.items()
    )


# Kept by the database itself, whoever writes the games table (a run, another program,
# a hand with the sqlite3 shell): a games row inserted, changed or deleted loses its
# digest, so a reader can trust the digests it finds and check in full only the rows
# without one; and `seats_played` counts each engine's games by what it played under,
# so that no reader decodes every record to tell conditions apart. A reader relies on
# them only when all the triggers are there (`_TRIGGERS`): a store made before them, or
# one whose triggers were dropped, is checked row by row as before.
_TRIGGERS = ("games_inserted", "games_updated", "games_deleted")
_PLAYED_KEY = ("quote(engine) || ',' || quote(tc) || ',' || quote(variant) || ',' ||"
               " quote(versions) || ',' || quote(command)")  # fmt: skip


def _count_seats(row: str, step: str) -> str:
    """SQL that adds `step` to the `seats_played` count of both seats of `row`."""
    seats = " UNION ALL ".join(
        f"SELECT {row}.seat{n} AS engine, {_played(f'{row}.record', n)}" for n in (1, 2)
    )
    return (
        "INSERT INTO seats_played (key, engine, tc, variant, versions, command, games)"
        f" SELECT {_PLAYED_KEY}, engine, tc, variant, versions, command, {step}"
        f" FROM ({seats}) WHERE true ON CONFLICT (key) DO UPDATE SET games = games + {step};"
    )


_KEPT = f"""
CREATE TABLE IF NOT EXISTS seats_played (
    key TEXT PRIMARY KEY,           -- the five below, quoted, comma-separated
    engine TEXT NOT NULL,
    tc, variant, versions, command, -- as SeatPlayed reads them from the records
    games INTEGER NOT NULL          -- stored games of this engine under them
);
CREATE TRIGGER IF NOT EXISTS games_inserted AFTER INSERT ON games BEGIN
    DELETE FROM games_checked WHERE game_rowid = NEW.rowid;
    {_count_seats("NEW", "1")}
END;
CREATE TRIGGER IF NOT EXISTS games_updated AFTER UPDATE ON games BEGIN
    DELETE FROM games_checked WHERE game_rowid IN (OLD.rowid, NEW.rowid);
    {_count_seats("OLD", "-1")}
    {_count_seats("NEW", "1")}
END;
CREATE TRIGGER IF NOT EXISTS games_deleted AFTER DELETE ON games BEGIN
    DELETE FROM games_checked WHERE game_rowid = OLD.rowid;
    {_count_seats("OLD", "-1")}
END;
"""
_SCANNED = (
    "game_id",
    "seat1",
    "seat2",
    "winner",
    "winner_seat",
    "termination",
    "started",
    "pair_key",
    "number",
)  # the games columns a reader checks against the record


def _row_digest(values: tuple[object, ...], record: bytes) -> bytes:
    """What a run wrote in a games row (the `_SCANNED` columns and the record): a reader
    that finds the row as written needs not check its record again (a row changed since,
    by hand, by another program or by damage to the file, is checked in full)."""
    digest = hashlib.blake2b(repr(values).encode("utf-8", "surrogatepass"), digest_size=16)
    digest.update(b"\0")
    digest.update(record)
    return digest.digest()


_TABLES = ("meta", "engines", "games", "voids")
READERS_WAIT = 30.0  # seconds a starting run waits for readers of its store to finish
RUN_HINT = ("the run does not build on a damaged store: restore it from a copy, or start a"
            " new store with --fresh (the old one is kept under a dated name)")  # fmt: skip
READ_HINT = "restore the store from a copy, or leave out --strict to skip damaged rows"


_COLUMNS: dict[str, list[str]] = {}


def _columns() -> dict[str, list[str]]:
    """Each table's columns, as the schema above makes them."""
    if not _COLUMNS:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.executescript(_SCHEMA)
            for table in _TABLES:
                _COLUMNS[table] = [str(r[1]) for r in db.execute(f"PRAGMA table_info({table})")]
    return _COLUMNS


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Scheduled(Protocol):
    """What a scheduled game tells those who file its result (`engines`: the seats'
    engine keys, seat 1 first)."""

    @property
    def game_id(self) -> str: ...
    @property
    def number(self) -> int: ...
    @property
    def round(self) -> int: ...
    @property
    def pair_key(self) -> str: ...
    @property
    def engines(self) -> tuple[str, str]: ...
    @property
    def opening(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class EngineEntry:
    """An engine as a tournament first stores it: its conditions of play, its command,
    and the hashes of what that command runs (`None`: not readable here)."""

    definition: Mapping[str, Any]
    command: tuple[str, ...]
    program_sha256: str | None = None
    script_sha256: str | None = None


@dataclass(frozen=True)
class CountRow:
    """Games between two engines in these seats, from seat 1's point of view."""

    seat1: str
    seat2: str
    seat1_wins: int
    seat2_wins: int


@dataclass(frozen=True)
class GameRow:
    game_id: str
    started: str
    seat1: str
    seat2: str
    winner_seat: int
    termination: str
    pair_key: str


@dataclass(frozen=True)
class SeatPlayed:
    """What one seat's engine played a stored game under, as JSON text from its record
    (None where the record has no such field): the store keeps it, readers judge it."""

    tc: str | None
    variant: str | None
    versions: str | None
    command: str | None


@dataclass(frozen=True)
class ResultRow:
    game_id: str
    round: int
    seat1: str
    seat2: str
    winner_seat: int  # 1 or 2


@dataclass(frozen=True)
class Damage:
    """A stored row that cannot be trusted: where it is and what is wrong with it."""

    store: str
    table: str
    row: int
    label: str  # what names the row: its game id, meta key or engine name
    problem: str

    def __str__(self) -> str:
        return f"{self.store}: {self.table} row {self.row} ({self.label}): {self.problem}"


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
        return "record is a void attempt among rated games" if record.void else \
            "record is a rated game among void attempts"  # fmt: skip
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
# message or a column it decodes.
DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def _text(data: bytes) -> str:
    """Stored text as Python reads it: damaged bytes become U+FFFD, never an exception
    (the columns checked against their record then differ and the row is damaged)."""
    return data.decode("utf-8", "replace")


def _sqlite_failure(exc: sqlite3.Error | UnicodeDecodeError, path: Path, *, run: bool,
                    origin: str = "") -> ArbiterError:  # fmt: skip
    """The error to report for an SQLite failure on a store, by its real cause."""
    if isinstance(exc, UnicodeDecodeError):
        said = bytes(exc.object).decode("utf-8", "replace")[:200]
        return ConfigError(f"not a usable results store (damaged: {said})", where=str(path),
                           hint=_foreign_hint(run, origin))  # fmt: skip
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == sqlite3.SQLITE_FULL or (primary == sqlite3.SQLITE_IOERR and _no_space(path)):
        # SQLite reports some writes that found the disk full (growing -shm, say) as
        # an I/O error: a disk with next to nothing free is the cause to name then.
        return StoreError(f"{path}: no space left on device ({exc}); free some space and run"
                          " again (the games stored so far are intact)")  # fmt: skip
    if primary == sqlite3.SQLITE_IOERR:
        return StoreError(f"{path}: the disk failed a read or write ({exc}); check the disk"
                          " and run again")  # fmt: skip
    if primary in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY,
                   sqlite3.SQLITE_AUTH):  # fmt: skip
        return ConfigError(f"cannot {'write' if run else 'read'} the results store ({exc})",
                           where=str(path), hint="choose a writable output path" if run else
                           "check the file and its folder's permissions")  # fmt: skip
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(f"{path}: the results store stayed busy ({exc}); try again")
    if primary in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FORMAT,
                   sqlite3.SQLITE_SCHEMA, sqlite3.SQLITE_ERROR, sqlite3.SQLITE_MISMATCH,
                   sqlite3.SQLITE_RANGE, sqlite3.SQLITE_TOOBIG):  # fmt: skip
        return ConfigError(f"not a usable results store ({exc})", where=str(path),
                           hint=_foreign_hint(run, origin))  # fmt: skip
    return StoreError(f"{path}: the results store failed ({exc})")


def _no_space(path: Path) -> bool:
    """True if the filesystem holding `path` has (next to) no space left."""
    try:
        fs = os.statvfs(path.parent)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < 1 << 20


def _foreign_hint(run: bool, origin: str) -> str:
    if run:
        return (
            f"move it away or set {origin or 'the output'} to a new file; if it is a"
            " damaged store, restore it from a copy or start over with --fresh"
        )
    return "give a store written by 'arbiter tournament run'; if it is damaged, restore it" \
           " from a copy"  # fmt: skip


def _os_failure(exc: OSError, path: Path, doing: str, *, run: bool) -> ArbiterError:
    """The error to report when the system refuses a file operation, by its cause."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"cannot {doing} {path}: {exc.strerror}; free some space and run"
                          " again")  # fmt: skip
    if exc.errno == errno.ELOOP:
        return ConfigError("is a symbolic link that leads back to itself", where=str(path),
                           hint="remove the link or name another file")  # fmt: skip
    if exc.errno == errno.ENOENT and not run:
        return ConfigError("no results store here yet", where=str(path),
                           hint="run 'arbiter tournament run FILE' first")  # fmt: skip
    return ConfigError(f"cannot {doing}: {exc.strerror}", where=str(path),
                       hint="choose a writable output path" if run else
                       "check the path and its permissions")  # fmt: skip


class Store:
    """An open tournament store: `open_for_run` to play, `open_read` to look at it.

    Close it (or use `with`); a store opened to read is one snapshot until then.
    """

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
        self._all_digested = False  # every games row has a digest (as far as counts tell)
        self._trusted = False  # read: rows with a digest were not read at opening
        self.on_damage: Callable[[Damage], None] | None = None  # told of damage found later

    # ----------------------------------------------------------------- opening

    @classmethod
    def open_for_run(cls, path: str | os.PathLike[str], *, fresh: bool = False,
                     origin: str = "") -> tuple[Store, Path | None]:  # fmt: skip
        """Lock the store for this run, set the old one aside if `fresh`, then open it.

        Nothing is written to an existing store before it has been read and found sound:
        a foreign or damaged file is refused (ConfigError) exactly as it was. `origin`
        names where the path came from (the tournament file's key), for the hints.
        Returns the store and, with `fresh`, where the old store went (None if none).
        """
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _os_failure(exc, file.parent, "create the folder for the results store",
                              run=True) from exc  # fmt: skip
        fd, created = _lock(file)
        kept = None
        try:
            if fresh and not created:
                kept = set_aside(file)  # moved away while we hold it: no run is on it
                os.close(fd)
                fd = -1
                fd, created = _lock(file)
            store = cls._open_rw(file, run=True, origin=origin)
        except BaseException:
            if fd >= 0:
                identity = os.fstat(fd)
                os.close(fd)
                if created:
                    _remove_unused(file, (identity.st_dev, identity.st_ino))
            raise
        store._fd = fd
        st = os.fstat(fd)
        store._identity = (st.st_dev, st.st_ino)
        return store, kept

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = True) -> Store:
        """Without `create`, `open_read`; with it, a writable store and no run lock (for
        tools and tests that build a store themselves)."""
        if not create:
            return cls.open_read(path)
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _os_failure(exc, file.parent, "create the folder for the results store",
                              run=True) from exc  # fmt: skip
        return cls._open_rw(file, run=True)

    @classmethod
    def _open_rw(cls, file: Path, *, run: bool, origin: str = "") -> Store:
        try:
            db = sqlite3.connect(file, isolation_level=None, timeout=10.0)
        except DB_ERRORS as exc:
            raise _sqlite_failure(exc, file, run=run, origin=origin) from exc
        db.text_factory = _text
        store = cls(file, db)
        store._writer, store._origin = True, origin
        try:
            new = store._check(run=True, origin=origin)
            # NORMAL in WAL mode: a committed game survives any crash of this process;
            # only a power loss can take back the last commits, never corrupt the file.
            db.execute("PRAGMA synchronous=NORMAL")
            if new:
                store._use_wal(indexes=False)
                db.executescript(_SCHEMA + _READ_AIDS + _KEPT)
                store._set_meta("schema", str(SCHEMA_VERSION))
            else:
                # An existing store is switched to WAL by the first write, not before: a
                # run refused after opening it (changed conditions) leaves it as it was.
                store._wal_pending = True
        except DB_ERRORS as exc:
            db.close()
            raise _sqlite_failure(exc, file, run=run, origin=origin) from exc
        except BaseException:
            db.close()
            raise
        return store

    @classmethod
    def open_read(cls, path: str | os.PathLike[str]) -> Store:
        """Open a store to read: read-only, one snapshot, not a byte of it changed.

        `damage` lists the rows that were found damaged; every read leaves them out.
        """
        file = Path(path)
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise _os_failure(exc, file, "read the results store", run=False) from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ConfigError("not a results store (not a regular file)", where=str(file),
                                  hint=_foreign_hint(False, ""))  # fmt: skip
            header = os.pread(fd, 100, 0)
            if header and not header.startswith(b"SQLite format 3\x00"):
                raise ConfigError("not a results store (not an SQLite database)",
                                  where=str(file), hint=_foreign_hint(False, ""))  # fmt: skip
            query = _read_mode(file, fd, header)
            uri = f"file:{urllib.parse.quote(str(file.absolute()))}?{query}"
            try:
                db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=10.0)
            except DB_ERRORS as exc:
                raise _sqlite_failure(exc, file, run=False) from exc
            db.text_factory = _text
        except BaseException:
            os.close(fd)
            raise
        store = cls(file, db)
        store._fd = fd
        try:
            store._exec("BEGIN")  # one snapshot for everything this reader shows
            if store._check(run=False):
                # No tables yet (an empty file): read it as an empty store, through
                # temporary tables that live in memory, not in the file.
                store._exec("ROLLBACK")
                db.executescript(_SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE")
                                 .replace("CREATE INDEX IF NOT EXISTS ",
                                          "CREATE INDEX IF NOT EXISTS temp."))  # fmt: skip
                store._exec("BEGIN")
        except BaseException:
            store.close()
            raise
        return store

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
        where = str(self.path)
        hint = RUN_HINT if run else "restore it from a copy"
        if "meta" not in tables:
            raise ConfigError("an SQLite database, but not a results store (no meta table)",
                              where=where, hint=_foreign_hint(run, origin))  # fmt: skip
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise ConfigError(f"a results store without its {', '.join(missing)} table",
                              where=where, hint=hint)  # fmt: skip
        for table in _TABLES:
            have = {str(c) for (c,) in self._q("SELECT name FROM pragma_table_info(?)",
                                               (table,))}  # fmt: skip
            lacking = [c for c in _columns()[table] if c not in have]
            if lacking:
                raise ConfigError(f"the store's {table} table lacks column(s)"
                                  f" {', '.join(lacking)}", where=where, hint=hint)  # fmt: skip
        if run:
            # A run writes: every page of the file, indexes too, must be sound first.
            verdict = [str(v) for (v,) in self._q("PRAGMA quick_check(5)")]
            if verdict != ["ok"]:
                raise ConfigError(f"the database file is damaged ({'; '.join(verdict)[:300]})",
                                  where=where, hint=hint)  # fmt: skip
        version = self._q("SELECT value FROM meta WHERE key='schema'")
        if not version:
            raise ConfigError("a results store without its schema version", where=where,
                              hint=hint)  # fmt: skip
        if str(version[0][0]) != str(SCHEMA_VERSION):
            raise ConfigError(f"store schema {str(version[0][0])[:40]!r} is not supported by"
                              f" this version (expects {SCHEMA_VERSION})", where=where,
                              hint="use the version of arbiter that wrote it")  # fmt: skip
        self.damage = self._scan(trust=not run and self._kept)
        if run and self.damage:
            more = len(self.damage) - 1
            raise ConfigError(str(self.damage[0]) + (f" (and {more} more damaged rows)"
                                                     if more else ""), hint=RUN_HINT)  # fmt: skip
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
            elif key == "tournament" and (kind != "text" or _json(value, "value")[1]
                                          == "value is not UTF-8 text"):  # fmt: skip
                found.append(Damage(name, "meta", int(rowid), _label("key", key),
                                    "value is not text"))  # fmt: skip
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
                found.append(Damage(name, "engines", int(rowid), _label("name", engine),
                                    problem))  # fmt: skip
        bad_games: list[int] = []
        columns = _SCANNED
        if trust:
            self._trusted = True
            unchecked = iter(()) if self._all_digested else self._rows(self._cursor(
                "SELECT g.rowid FROM games AS g WHERE NOT EXISTS (SELECT 1 FROM games_checked"
                " AS c WHERE c.game_rowid = g.rowid) ORDER BY g.rowid"
            ))  # fmt: skip
            one = f"SELECT rowid, CAST(record AS BLOB), {', '.join(columns)}, NULL FROM games"
            rows: Iterator[Any] = (
                row for (rowid,) in unchecked for row in self._q(one + " WHERE rowid = ?", (rowid,))
            )
        elif self._digests:
            rows = self._rows(self._cursor(
                f"SELECT g.rowid, CAST(g.record AS BLOB), {', '.join('g.' + c for c in columns)},"
                " c.digest FROM games AS g LEFT JOIN games_checked AS c ON c.game_rowid = g.rowid"
                " ORDER BY g.rowid"
            ))  # fmt: skip
        else:
            rows = self._rows(self._cursor(f"SELECT rowid, CAST(record AS BLOB),"
                                           f" {', '.join(columns)}, NULL FROM games"
                                           " ORDER BY rowid"))  # fmt: skip
        for rowid, record, *values, digest in rows:
            if (digest is not None and isinstance(record, bytes)
                    and digest == _row_digest(tuple(values), record)):  # fmt: skip
                continue  # as the run wrote it, and checked it then
            problem = _record_problem(record, False, dict(zip(columns, values, strict=True)))
            if problem:
                bad_games.append(int(rowid))
                found.append(Damage(name, "games", int(rowid), _label("game_id", values[0]),
                                    problem))  # fmt: skip
        bad_voids: list[int] = []
        cursor = self._cursor("SELECT rowid, CAST(record AS BLOB), game_id, seat1, seat2,"
                              " termination FROM voids ORDER BY rowid")  # fmt: skip
        for rowid, record, game_id, seat1, seat2, termination in self._rows(cursor):
            row = {"game_id": game_id, "seat1": seat1, "seat2": seat2,
                   "termination": termination}  # fmt: skip
            problem = _record_problem(record, True, row)
            if problem:
                bad_voids.append(int(rowid))
                found.append(Damage(name, "voids", int(rowid), _label("game_id", game_id),
                                    problem))  # fmt: skip
        self._skip_games = json.dumps(bad_games)
        self._skip_voids = json.dumps(bad_voids)
        return found

    def __enter__(self) -> Store:
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
        does not follow the number of games."""
        return self._rows(self._cursor(sql.replace("{games}", self._GAMES),
                                       (self._skip_games, *params)))  # fmt: skip

    # ------------------------------------------------------------------ meta

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key=?", (key,))
        return None if not rows else str(rows[0][0])

    def conditions(self) -> dict[str, Any] | None:
        text = self.meta("conditions")
        data = None if text is None else _json(text, "")[0]
        return dict(data) if isinstance(data, dict) else None

    def definition(self) -> dict[str, Any] | None:
        """The whole definition the last run was given (a tournament's, a match's)."""
        text = self.meta("definition")
        data = None if text is None else _json(text, "")[0]
        return dict(data) if isinstance(data, dict) else None

    def engine_definitions(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, definition in self._q("SELECT name, definition FROM engines"):
            data = _json(definition, "")[0]
            if isinstance(data, dict):
                out[str(name)] = data
        return out

    def begin(self, name: str, conditions: Mapping[str, Any], definition: Mapping[str, Any],
              engines: Mapping[str, EngineEntry]) -> None:  # fmt: skip
        """Record the tournament's conditions and engines (new engines are added)."""
        known = self.engine_definitions()
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
                    (engine_name, json.dumps(dict(entry.definition), sort_keys=True),
                     json.dumps(list(entry.command)), entry.program_sha256,
                     entry.script_sha256, _now()),
                )  # fmt: skip

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
        names = {str(n) for (n,) in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'table')")}  # fmt: skip
        if {*_TRIGGERS, "seats_played"} <= names and self.db.execute(
            "SELECT (SELECT TOTAL(games) FROM seats_played) = 2 * (SELECT COUNT(*) FROM games)"
        ).fetchone()[0]:  # fmt: skip
            return  # (counted anew when the totals disagree, or the table is gone)
        seats = " UNION ALL ".join(f"SELECT seat{n} AS engine, {_played('record', n)}"
                                   " FROM games" for n in (1, 2))  # fmt: skip
        try:
            self.db.executescript(
                "BEGIN IMMEDIATE;"
                + "".join(f"DROP TRIGGER IF EXISTS {name};" for name in _TRIGGERS)
                + "DROP TABLE IF EXISTS seats_played;"
                + _KEPT
                + "INSERT INTO seats_played (key, engine, tc, variant, versions, command,"
                f" games) SELECT {_PLAYED_KEY}, engine, tc, variant, versions, command,"
                f" COUNT(*) FROM ({seats}) GROUP BY 1;"
                "COMMIT;"
            )
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
        what = "" if held < 0 else (f"; it held {held} games ({self._written} of them stored"
                                    " by this run)")  # fmt: skip
        if saved is not None:
            then = (f", saved to {saved}: move that file back to {self.path} and run again to"
                    " resume")  # fmt: skip
        elif held > 0:
            then = ", and they could not be saved: they are lost with the file"
        else:
            then = ""
        return StoreError(f"the results store {self.path} was removed or replaced during the"
                          f" run, which stopped{what}{then}")  # fmt: skip

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
                    (game.game_id, record.seat1, record.seat2, record.termination.value,
                     record.reason[:TEXT_CAP], record.finished, data),
                )  # fmt: skip
                return
            winner_seat = 1 if record.winner == record.seat1 else 2
            cursor = self.db.execute(
                "INSERT OR IGNORE INTO games (game_id, number, round, pair_key, seat1, seat2,"
                " opening, winner, winner_seat, termination, plies, started, finished, record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (game.game_id, game.number, game.round, game.pair_key, record.seat1,
                 record.seat2, " ".join(game.opening), record.winner, winner_seat,
                 record.termination.value, record.plies, record.started, record.finished,
                 data),
            )  # fmt: skip
            inserted = cursor.rowcount
            self._written += max(inserted, 0)
            if inserted == 1:
                values = (game.game_id, record.seat1, record.seat2, record.winner, winner_seat,
                          record.termination.value, record.started, game.pair_key,
                          game.number)  # fmt: skip
                self.db.execute(
                    "INSERT OR REPLACE INTO games_checked (game_rowid, digest) VALUES (?, ?)",
                    (cursor.lastrowid, _row_digest(values, data.encode())),
                )

    def last_number(self) -> int:
        """The highest game number stored (0 if none): an arena numbers its games on."""
        rows = self._q("SELECT MAX(number) FROM games")
        return int(rows[0][0] or 0) if rows else 0

    def recent_games(self, limit: int, before: int | None = None
                     ) -> list[tuple[int, GameRecord]]:  # fmt: skip
        """The last `limit` games stored (number and record), newest first, those
        numbered below `before` if given: a page of a long history, read by the number
        index. A damaged row is left out (the readers that name damage report it)."""
        sql = ("SELECT number, record FROM {games} WHERE number < ? ORDER BY number DESC"
               " LIMIT ?" if before is not None else
               "SELECT number, record FROM {games} ORDER BY number DESC LIMIT ?")  # fmt: skip
        params: tuple[Any, ...] = (before, limit) if before is not None else (limit,)
        out = []
        for number, text in self._games(sql, params):
            try:
                out.append((int(number), GameRecord.from_json(json.loads(text))))
            except (TypeError, ValueError):
                continue
        return out

    def remember(self, key: str, value: str) -> None:
        """Keep a note of the run's own in the store (an arena's registered names)."""
        with self._transaction():
            self._set_meta(key, value)

    def game_keys(self) -> Iterator[tuple[str, str]]:
        """(game id, start time) of every stored game, row by row: what tells one play
        of a game from another when sources are combined."""
        for a, b in self._games_iter("SELECT game_id, started FROM {games}"):
            yield str(a), str(b)

    def stored_rows(self) -> Iterator[tuple[str, str, str, int]]:
        """(pair key, seat 1, seat 2, winning seat) of every stored game in the order it
        was stored, which is the order the run counted it in: a sequential test read
        again from the store decides where it decided during the run. Row by row."""
        rows = self._rows(self._cursor(
            "SELECT pair_key, seat1, seat2, winner_seat FROM games WHERE rowid NOT IN"
            " (SELECT value FROM json_each(?)) ORDER BY rowid",  # damaged rows skipped
            (self._skip_games,),
        ))  # fmt: skip
        for pair_key, seat1, seat2, winner_seat in rows:
            yield str(pair_key), str(seat1), str(seat2), int(winner_seat)

    def game_rows(self) -> Iterator[GameRow]:
        rows = self._games_iter(
            "SELECT game_id, started, seat1, seat2, winner_seat, termination, pair_key FROM {games}"
        )
        for row in rows:
            yield GameRow(*row)

    # What a seat's engine played under, as its record says: its time control, the
    # board, the versions the engines answered and its command (JSON text, or NULL).
    _SEAT_PLAYED = ("json_extract(record, '$.tc.seat{n}'), json_extract(record, '$.variant'),"
                    " json_extract(record, '$.versions'),"
                    " json_extract(record, '$.commands.seat{n}')")  # fmt: skip

    def played_rows(self) -> Iterator[tuple[GameRow, SeatPlayed, SeatPlayed]]:
        """Every stored game with what each seat played under (`SeatPlayed`), for readers
        that tell an engine's games under different conditions apart."""
        rows = self._games_iter(
            "SELECT game_id, started, seat1, seat2, winner_seat, termination, pair_key, "
            + self._SEAT_PLAYED.format(n=1)
            + ", "
            + self._SEAT_PLAYED.format(n=2)
            + " FROM {games}"
        )
        for row in rows:
            yield GameRow(*row[:7]), SeatPlayed(*row[7:11]), SeatPlayed(*row[11:15])

    def conditions_played(self) -> list[tuple[str, SeatPlayed, int]]:
        """(engine, what it played under, games) for every distinct set of conditions an
        engine's stored games were played under (aggregated in SQL)."""
        if self._kept:
            # Counted by the triggers as games were stored: read, less the damaged rows.
            counts = {(str(name), SeatPlayed(*played)): int(n) for name, *played, n in self._q(
                "SELECT engine, tc, variant, versions, command, games FROM seats_played"
                " ORDER BY engine, tc, variant, versions, command")}  # fmt: skip
            seats = " UNION ALL ".join(
                f"SELECT seat{n} AS engine, {_played('record', n)} FROM games WHERE rowid IN"
                " (SELECT value FROM json_each(?1))"
                for n in (1, 2)
            )
            for name, *played in self._q(seats, (self._skip_games,)):
                key = (str(name), SeatPlayed(*played))
                counts[key] = counts.get(key, 0) - 1
            return [(name, played, n) for (name, played), n in counts.items() if n > 0]
        rows = self._games(
            "WITH g AS (SELECT seat1, seat2, record FROM {games})"
            " SELECT *, COUNT(*) FROM ("
            f"SELECT seat1, {self._SEAT_PLAYED.format(n=1)} FROM g UNION ALL"
            f" SELECT seat2, {self._SEAT_PLAYED.format(n=2)} FROM g) GROUP BY 1, 2, 3, 4, 5"
        )
        return [(str(name), SeatPlayed(*played), int(n)) for name, *played, n in rows]

    def host_rows(self) -> Iterator[tuple[str, str, GameRow, list[float]]]:
        """Every stored game with the host and CPU that played it and its move times."""
        rows = self._games_iter(
            "SELECT json_extract(record, '$.host'), json_extract(record, '$.cpu'), game_id,"
            " started, seat1, seat2, winner_seat, termination, pair_key,"
            " json_extract(record, '$.move_ms') FROM {games} ORDER BY number"
        )
        for host, cpu, *row, move_ms in rows:
            times = json.loads(move_ms) if move_ms else []
            yield str(host or ""), str(cpu or ""), GameRow(*row), times

    def results(self) -> list[ResultRow]:
        """Every rated game's id, round and winning seat, in play order: what a schedule
        made from results (Swiss, adaptive) is rebuilt from."""
        rows = self._games("SELECT game_id, round, seat1, seat2, winner_seat FROM {games}"
                           " ORDER BY number, game_id")  # fmt: skip
        return [ResultRow(str(g), int(r), str(a), str(b), int(w)) for g, r, a, b, w in rows]

    def done_ids(self) -> set[str]:
        return set(self.game_ids())

    def game_ids(self) -> Iterator[str]:
        """The id of every stored game, row by row (`done_ids` without holding them)."""
        for (game_id,) in self._games_iter("SELECT game_id FROM {games}"):
            yield str(game_id)

    def stored_of(self, items: Iterable[_T], key: Callable[[_T], str]
                  ) -> Iterator[tuple[_T, bool]]:  # fmt: skip
        """Each item with whether the game whose id `key` gives is stored, looked up a few
        hundred at a time in the index of ids: a schedule is checked against the store
        without holding either."""
        chunk: list[_T] = []
        for item in items:
            chunk.append(item)
            if len(chunk) == 512:
                yield from self._stored_chunk(chunk, key)
                chunk = []
        yield from self._stored_chunk(chunk, key)

    def _stored_chunk(self, chunk: list[_T], key: Callable[[_T], str]
                      ) -> Iterator[tuple[_T, bool]]:  # fmt: skip
        if not chunk:
            return
        ids = [key(item) for item in chunk]
        found = {str(g) for (g,) in self._games(
            "SELECT game_id FROM {games} WHERE game_id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),))}  # fmt: skip
        for item, game_id in zip(chunk, ids, strict=True):
            yield item, game_id in found

    def games_stored(self) -> int:
        return int(self._games("SELECT COUNT(*) FROM {games}")[0][0])

    def counts(self) -> list[CountRow]:
        """Per ordered seat pairing: games won by each seat (aggregated in SQL)."""
        rows = self._games(
            "SELECT seat1, seat2, SUM(winner_seat = 1), SUM(winner_seat = 2) FROM {games}"
            " GROUP BY seat1, seat2"
        )
        return [CountRow(a, b, int(w), int(lost)) for a, b, w, lost in rows]

    def faults(self) -> list[tuple[str, str, int]]:
        """(engine at fault, termination, count) for every forfeit."""
        marks = ",".join("?" * len(FAULTS))
        rows = self._games(
            "SELECT CASE winner_seat WHEN 1 THEN seat2 ELSE seat1 END, termination, COUNT(*)"
            f" FROM {{games}} WHERE termination IN ({marks}) GROUP BY 1, 2",
            FAULTS,
        )
        return [(str(e), str(t), int(n)) for e, t, n in rows]

    def pair_results(self) -> list[tuple[str, str, str]]:
        """For each complete seat-swapped pair: (A, B, wins of A), A sorting before B."""
        return list(self.each_pair())

    def each_pair(self) -> Iterator[tuple[str, str, str]]:
        """`pair_results` one by one (the first two games of each pair key, by number),
        read from the index on pair keys: memory does not follow the pairs."""
        # Read as bytes, decoded only where a pair is complete: a million games are
        # not four million calls of the text decoder.
        rows = self._games_iter(
            "SELECT CAST(pair_key AS BLOB), CAST(seat1 AS BLOB), CAST(seat2 AS BLOB),"
            " CAST(winner AS BLOB) FROM {games} ORDER BY pair_key, number"
        )
        first: tuple[bytes, bytes, bytes] | None = None
        key = None
        count = 0
        for pair_key, seat1, seat2, winner in rows:
            if pair_key != key:
                first, key, count = (seat1, seat2, winner), pair_key, 0
            count += 1
            if count == 2 and first is not None:
                a, b = sorted((_text(first[0]), _text(first[1])))
                yield a, b, str((_text(first[2]) == a) + (_text(winner) == a))

    def numbered_stored(self, prefix: str, last: int) -> int:
        """How many stored games have the id PREFIX + N, N a whole number from 1 to
        `last` written without leading zeros (a match's games: `match_game_number`; N
        beyond SQLite's integers is not counted), counted in SQL over the range of ids
        that start with PREFIX."""
        if not prefix:
            return 0
        above = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # the first id past the range
        rows = self._games(
            "SELECT COUNT(*) FROM {games} AS g, (SELECT ? AS head, ? AS above, ? AS last) AS r"
            " WHERE g.game_id >= r.head AND g.game_id < r.above"
            " AND g.game_id = r.head || CAST(substr(g.game_id, length(r.head) + 1) AS INTEGER)"
            " AND CAST(substr(g.game_id, length(r.head) + 1) AS INTEGER) BETWEEN 1 AND r.last",
            (prefix, above, min(last, 2**63 - 1)),
        )
        return int(rows[0][0])

    def pair_counts(self) -> list[tuple[str, str, int, int]]:
        """`each_pair` counted: (A, B, wins of A, pairs) for each outcome of a pairing,
        A sorting before B. Each pair key's first two games are counted as bytes, and
        decoded once per distinct outcome: a million games read in a few seconds."""
        rows = self._games_iter(
            "SELECT CAST(pair_key AS BLOB), CAST(seat1 AS BLOB), CAST(seat2 AS BLOB),"
            " CAST(winner AS BLOB) FROM {games} ORDER BY pair_key, number"
        )
        seen: Counter[tuple[bytes, bytes, bytes, bytes]] = Counter()
        for _, games in itertools.groupby(rows, operator.itemgetter(0)):
            pair = tuple(itertools.islice(games, 2))
            if len(pair) == 2:
                seen[pair[0][1], pair[0][2], pair[0][3], pair[1][3]] += 1
        outcomes: Counter[tuple[str, str, int]] = Counter()
        for (seat1, seat2, winner1, winner2), n in seen.items():
            a, b = sorted((_text(seat1), _text(seat2)))
            outcomes[a, b, (_text(winner1) == a) + (_text(winner2) == a)] += n
        return [(a, b, wins, n) for (a, b, wins), n in outcomes.items()]

    def identical_pairings(self) -> list[tuple[str, str, int]]:
        """Pairings whose games (per seat order) are all the same move sequence."""
        # Games of the same moves have as many plies: the index tells which seat orders
        # could be all one game, and only their records are read.
        groups = self._games(
            "SELECT seat1, seat2, COUNT(*), MIN(plies) = MAX(plies) FROM {games}"
            " GROUP BY seat1, seat2 HAVING COUNT(*) > 1"
        )
        rows = []
        for seat1, seat2, n, same_length in groups:
            distinct = 2  # not all one game
            if same_length:
                distinct = self._games(
                    "SELECT COUNT(DISTINCT json_extract(record, '$.moves')) FROM {games}"
                    " WHERE seat1 = ? AND seat2 = ?", (seat1, seat2),
                )[0][0]  # fmt: skip
            rows.append((seat1, seat2, n, distinct))
        per_pairing: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for a, b, n, distinct in rows:
            per_pairing.setdefault(tuple(sorted((a, b))), []).append((int(n), int(distinct)))
        return [
            (a, b, sum(n for n, _ in parts))
            for (a, b), parts in per_pairing.items()
            if all(distinct == 1 for _, distinct in parts)
        ]

    def void_summary(self) -> list[tuple[str, str, int]]:
        """(termination, reason, count) of void attempts whose game was never rated."""
        rows = self._q(
            f"SELECT termination, reason, COUNT(*) FROM {self._VOIDS}"
            f" WHERE game_id NOT IN (SELECT game_id FROM {self._GAMES})"
            " GROUP BY termination, reason ORDER BY COUNT(*) DESC",
            (self._skip_voids, self._skip_games),
        )
        return [(str(t), str(r), int(n)) for t, r, n in rows]

    def void_count(self) -> int:
        return int(self._q(f"SELECT COUNT(*) FROM {self._VOIDS}", (self._skip_voids,))[0][0])

    def records(self, *, voids: bool = True) -> Iterator[tuple[dict[str, Any], bool]]:
        """Every sound stored record (JSON object) in play order, void attempts flagged."""
        for _, data, void in self.numbered_records(voids=voids):
            yield data, void

    def numbered_records(self, *, voids: bool = True
                         ) -> Iterator[tuple[int | None, dict[str, Any], bool]]:  # fmt: skip
        """`records()` with each game's number in its schedule: a void attempt has the
        number of its game once that game is rated, else None (the voids table keeps
        no number)."""
        for number, text, _, void in self.record_texts(voids=voids):
            yield number, json.loads(text), void

    def record_lines(self, *, voids: bool = True) -> Iterator[str]:
        """Every sound stored record as a records line (compact JSON, as `GameRecord.dumps`
        writes it), in play order: a record stored as a run wrote it is that text already
        and is not decoded; any other is decoded and written anew."""
        for _, text, as_written, _ in self.record_texts(voids=voids):
            yield (text if as_written else json.dumps(json.loads(text), separators=(",", ":"))
                   ) + "\n"  # fmt: skip

    def record_texts(self, *, voids: bool = True
                     ) -> Iterator[tuple[int | None, str, bool, bool]]:  # fmt: skip
        """(number, record text, as a run wrote it, void) of every sound stored record, as
        `numbered_records` orders them. A games row is as a run wrote it when its digest
        says so; a row whose digest does not, and that opening did not read (a reader
        trusts the digests the triggers keep), is checked now, and left out if damaged."""
        columns = ", ".join(f"g.{c}" for c in _SCANNED)
        cursor = self._cursor(
            f"SELECT g.rowid, g.number, CAST(g.record AS BLOB), {columns}, "
            + ("c.digest FROM games AS g LEFT JOIN games_checked AS c ON c.game_rowid = g.rowid"
               if self._digests else "NULL FROM games AS g")
            + " WHERE g.rowid NOT IN (SELECT value FROM json_each(?)) ORDER BY g.number",
            (self._skip_games,),
        )  # fmt: skip
        for rowid, number, record, *values, digest in self._rows(cursor):
            as_written = (digest is not None and isinstance(record, bytes)
                          and digest == _row_digest(tuple(values), record))  # fmt: skip
            if not as_written and digest is not None and self._trusted:
                problem = _record_problem(record, False, dict(zip(_SCANNED, values, strict=True)))
                if problem:
                    self._damaged("games", int(rowid), _label("game_id", values[0]), problem)
                    continue
            yield int(number), _text(record) if isinstance(record, bytes) else str(record), \
                as_written, False  # fmt: skip
        if voids:
            cursor = self._cursor(
                f"SELECT (SELECT number FROM {self._GAMES} AS g WHERE g.game_id = v.game_id),"
                f" v.record FROM {self._VOIDS} AS v ORDER BY v.id",
                (self._skip_games, self._skip_voids),
            )
            for number, data in self._rows(cursor):
                yield None if number is None else int(number), str(data), False, True

    def _damaged(self, table: str, rowid: int, label: str, problem: str) -> None:
        """A row found damaged after opening: noted, left out of every later read, and
        told to `on_damage` (which may raise, to stop the reader)."""
        damage = Damage(str(self.path), table, rowid, label, problem)
        self.damage.append(damage)
        skipped = json.loads(self._skip_games)
        self._skip_games = json.dumps([*skipped, rowid])
        if self.on_damage is not None:
            self.on_damage(damage)

    def engine_started(self, seconds: float) -> None:
        """Count an engine start and its cost (launch to handshake) over the store's life,
        so that an organiser sees what restarting engines costs (`status`)."""
        count, total = self.engine_starts()
        with self._transaction():
            self._set_meta(
                "engine_starts",
                json.dumps({"count": count + 1, "seconds": round(total + seconds, 3)}),
            )

    def engine_starts(self) -> tuple[int, float]:
        """Engine starts so far and the seconds they took (0, 0.0 if none were counted)."""
        try:
            data = json.loads(self.meta("engine_starts") or "{}")
            return int(data.get("count", 0)), float(data.get("seconds", 0.0))
        except (ValueError, TypeError, AttributeError):
            return 0, 0.0  # a damaged counter starts again: it is a cost, not a result

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
            raise ConfigError("the store's meta row 'rebuilds' is damaged (not a JSON list)",
                              where=str(self.path), hint="restore the store from a copy, or"
                              " start over with --fresh")  # fmt: skip
        changes.append({"engine": name, "at": _now(), "program_sha256": [rows[0][0], program],
                        "script_sha256": [rows[0][1], script]})  # fmt: skip
        with self._transaction():
            self.db.execute("UPDATE engines SET program_sha256=?, script_sha256=? WHERE name=?",
                            (program, script, name))  # fmt: skip
            self._set_meta("rebuilds", json.dumps(changes))

    def integrity(self) -> list[str]:
        """SQLite's own check of the whole file (pages, indexes): the problems it finds,
        none for a sound file. What a crash (kill -9, a power loss) must never leave."""
        found = [str(row[0]) for row in self._q("PRAGMA integrity_check")]
        return [] if found == ["ok"] else found

    def engines(self) -> list[dict[str, Any]]:
        rows = self._q(
            "SELECT name, command, program_sha256, script_sha256, reply_name, reply_version"
            " FROM engines ORDER BY rowid"
        )
        keys = ("name", "command", "program_sha256", "script_sha256", "reply_name",
                "reply_version")  # fmt: skip
        return [dict(zip(keys, row, strict=True)) for row in rows]


def _lock(path: Path) -> tuple[int, bool]:
    """Open (creating if need be) the database file and hold it for this run.

    Returns the descriptor and whether this call created the file. Another run holding
    it is a usage error; readers holding it are waited for (they read for moments).
    """
    while True:
        created = False
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                created = True
            except FileExistsError:
                fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise _os_failure(exc, path, "open the results store", run=True) from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ConfigError(
                    "cannot be the results store (not a regular file)",
                    where=str(path),
                    hint="name a new file as the output",
                )
            _flock_exclusive(fd, path)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return fd, created
        os.close(fd)  # set aside or replaced meanwhile: lock the file there now


def _flock_exclusive(fd: int, path: Path) -> None:
    deadline = time.monotonic() + READERS_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as exc:
            raise ConfigError(f"cannot lock the results store: {exc.strerror}",
                              where=str(path), hint="put the store on a local disk, where"
                              " one run can hold it") from exc  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise ConfigError(
                "another run is using this results store" + (f" (pid {holder})" if holder
                                                              else ""),
                where=str(path),
                hint="wait for it to finish or stop it; two runs cannot share a store",
            ) from None  # fmt: skip
        fcntl.flock(fd, fcntl.LOCK_UN)  # only readers hold it: wait for them
        if time.monotonic() > deadline:
            raise ConfigError(f"the results store was being read for over {READERS_WAIT:g} s",
                              where=str(path), hint="run again when the commands reading it"
                              " (status, ratings, report, export) are done")  # fmt: skip
        time.sleep(0.05)


def _holder(fd: int) -> str:
    """The pid holding the exclusive flock on this file, if the kernel says (Linux)."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1:4] == ["FLOCK", "ADVISORY", "WRITE"] and parts[5] == key:
            return parts[4]
    return ""


def _read_mode(file: Path, fd: int, header: bytes) -> str:
    """How a reader opens the database so that no byte of it changes (see the module
    docstring); holding a shared flock on `fd` while no run holds the store."""
    wal_mode = len(header) > 19 and 2 in (header[18], header[19])
    if not wal_mode:
        return "mode=ro"  # a rollback-journal database is read without writing anything
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return "mode=ro"  # a run holds it (its -wal and -shm are there), or no flock here
    wal = file.with_name(file.name + "-wal")
    try:
        log = wal.stat().st_size
    except OSError:
        log = 0
    # No run can start while we hold the shared lock; with no log to read, the file alone
    # is the store and reading it as immutable needs no -wal, no -shm and no lock.
    return "mode=ro" if log else "immutable=1"


def resolved(path: str | os.PathLike[str], where: str | None = None) -> Path:
    """The absolute path with symbolic links resolved; a link that leads back to itself
    is one clear error, not a RuntimeError from pathlib."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as exc:
        what = f"{path} is" if where else "is"
        raise ConfigError(
            f"{what} a symbolic link that leads back to itself (or a loop of links)",
            where=where or str(path),
            hint="remove the link or name another file",
        ) from exc


def _remove_unused(path: Path, identity: tuple[int, int]) -> None:
    """Remove a store file this run created and could not use (nothing was stored), with
    the -wal and -shm SQLite could not fold in and remove itself (a full disk)."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if (st.st_dev, st.st_ino) == identity:
            path.unlink()
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)


def _dated(path: Path, tag: str = "") -> Path:
    """A new name beside `path` with the date and time in it."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    label = f"{tag}-{stamp}" if tag else stamp
    target = path.with_name(f"{path.stem}.{label}{path.suffix}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.stem}.{label}-{n}{path.suffix}")
    return target


def set_aside(path: Path) -> Path | None:
    """Move a store (and its WAL files) to a dated name beside it; returns the new path."""
    if not path.exists():
        return None
    target = _dated(path)
    # Fold the WAL into the main file first so that one file holds everything.
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except DB_ERRORS as exc:
        raise ConfigError(f"not a results store ({exc}); --fresh only sets stores aside",
                          where=str(path), hint="move that file away yourself or name"
                          " another output") from exc  # fmt: skip
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def store_files(path: Path) -> list[Path]:
    """The files a store lives in: the database, its WAL and shared memory, and the lock
    file older versions kept beside it."""
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm", ".lock")]
