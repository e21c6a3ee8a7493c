"""The tournament store: one SQLite file in WAL mode, the only module that knows SQL.

The store is the truth. A game is committed before anyone is told about it, and it is
keyed by its schedule id, so a game that comes back twice is stored once and a resumed
run skips it. Each commit is a single transaction: after `kill -9` at any moment the file
holds every finished game and nothing half-written; in-flight games were never stored and
are replayed. Only the driver writes; games in play never touch the file.

A second run on the same store is refused while one runs: an exclusive `flock` on a lock
file beside the store, which the kernel releases when the holder dies however it dies.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.errors import ConfigError, StoreError
from arbiter.process import EngineInfo, EngineSpec
from arbiter.records import GameRecord, Termination
from arbiter.schedule import ScheduledGame

SCHEMA_VERSION = 1
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

_NOT_FAULTS = (Termination.CONNECTION, Termination.RESIGN, Termination.SETUP, Termination.HARNESS)
FAULTS = tuple(t.value for t in Termination if t not in _NOT_FAULTS)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _sha256(path: Path) -> str | None:
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def program_hashes(spec: EngineSpec) -> tuple[str | None, str | None]:
    """SHA-256 of the program run and, for an interpreter running a script, the script."""
    import shutil

    cwd = Path(spec.cwd or ".")
    program = spec.argv[0]
    found = shutil.which(program, path=os.environ.get("PATH")) if os.sep not in program else None
    program_path = Path(found) if found else cwd / program
    script = None
    for arg in spec.argv[1:]:
        candidate = cwd / arg
        if not arg.startswith("-") and candidate.suffix and candidate.is_file():
            script = candidate
            break
    return _sha256(program_path), (_sha256(script) if script else None)


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


class Store:
    """An open tournament store. Use `Store.open`; close it (or use `with`)."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self.db = connection
        self._lock_fd: int | None = None

    @classmethod
    def open_for_run(cls, path: str | os.PathLike[str], *, fresh: bool = False
                     ) -> tuple[Store, Path | None]:  # fmt: skip
        """Lock the store for this run, set the old one aside if `fresh`, then open it.

        Returns the store and, with `fresh`, where the old store went (None if none).
        """
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the folder for the results store: {exc.strerror}",
                              where=str(file), hint="choose a writable output path") from exc
        fd = _lock(file)
        try:
            kept = set_aside(file) if fresh else None
            store = cls.open(file)
        except BaseException:
            os.close(fd)
            raise
        store._lock_fd = fd
        return store, kept

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = True) -> Store:
        file = Path(path)
        if not create and not file.exists():
            raise ConfigError("no results store here yet", where=str(file),
                              hint="run 'arbiter tournament run FILE' first")  # fmt: skip
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(file, isolation_level=None, timeout=10.0)
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed game survives any crash of this process;
            # only a power loss can take back the last commits, never corrupt the file.
            db.execute("PRAGMA synchronous=NORMAL")
            if create:
                db.executescript(_SCHEMA)
            version = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{file}: not a usable results store ({exc}); move it away or choose another"
                " output file"
            ) from exc
        except OSError as exc:
            raise ConfigError(f"cannot create the results store: {exc.strerror}",
                              where=str(file), hint="choose a writable output path") from exc
        store = cls(file, db)
        if version is None and create:
            store._set_meta("schema", str(SCHEMA_VERSION))
        elif version is not None and version[0] != str(SCHEMA_VERSION):
            db.close()
            raise StoreError(f"{file}: store schema {version[0]} is not supported by this"
                             f" version (expects {SCHEMA_VERSION})")  # fmt: skip
        return store

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """A read query; a damaged or foreign file is a StoreError, not a traceback."""
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot read the results store {self.path}: {exc}; if the file is damaged,"
                " restore it from a copy or start a new store with --fresh"
            ) from exc

    # ------------------------------------------------------------------ meta

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key=?", (key,))
        return None if not rows else str(rows[0][0])

    def conditions(self) -> dict[str, Any] | None:
        text = self.meta("conditions")
        return None if text is None else dict(json.loads(text))

    def engine_definitions(self) -> dict[str, dict[str, Any]]:
        rows = self._q("SELECT name, definition FROM engines")
        return {name: json.loads(definition) for name, definition in rows}

    def begin(self, name: str, conditions: Mapping[str, Any], definition: Mapping[str, Any],
              engines: Mapping[str, tuple[EngineSpec, Mapping[str, Any]]]) -> None:  # fmt: skip
        """Record the tournament's conditions and engines (new engines are added)."""
        known = self.engine_definitions()
        with self._transaction():
            if self.meta("conditions") is None:
                self._set_meta("tournament", name)
                self._set_meta("conditions", json.dumps(dict(conditions), sort_keys=True))
                self._set_meta("created", _now())
            self._set_meta("definition", json.dumps(dict(definition), sort_keys=True))
            for engine_name, (spec, engine_definition) in engines.items():
                if engine_name in known:
                    continue
                program, script = program_hashes(spec)
                self.db.execute(
                    "INSERT INTO engines (name, definition, command, program_sha256,"
                    " script_sha256, first_seen) VALUES (?, ?, ?, ?, ?, ?)",
                    (engine_name, json.dumps(dict(engine_definition), sort_keys=True),
                     json.dumps(list(spec.argv)), program, script, _now()),
                )  # fmt: skip

    def engine_seen(self, name: str, info: EngineInfo) -> None:
        with self._transaction():
            self.db.execute(
                "UPDATE engines SET reply_name=?, reply_version=? WHERE name=?",
                (info.name[:TEXT_CAP], info.version[:TEXT_CAP], name),
            )

    # ----------------------------------------------------------------- games

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot write the results store {self.path}: {exc}; the games stored so far"
                " are intact, fix the problem (disk space, permissions) and run again to resume"
            ) from exc

    def write(self, game: ScheduledGame, record: GameRecord) -> None:
        """Store a finished attempt: a rated game once by id, or a void attempt."""
        data = record.dumps()
        with self._transaction():
            if record.void:
                self.db.execute(
                    "INSERT INTO voids (game_id, seat1, seat2, termination, reason, finished,"
                    " record) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (game.game_id, game.engines[0], game.engines[1], record.termination.value,
                     record.reason[:TEXT_CAP], record.finished, data),
                )  # fmt: skip
                return
            winner_seat = 1 if record.winner == record.seat1 else 2
            self.db.execute(
                "INSERT OR IGNORE INTO games (game_id, number, round, pair_key, seat1, seat2,"
                " opening, winner, winner_seat, termination, plies, started, finished, record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (game.game_id, game.number, game.round, game.pair_key, game.engines[0],
                 game.engines[1], " ".join(game.opening), game.engines[winner_seat - 1],
                 winner_seat, record.termination.value, record.plies, record.started,
                 record.finished, data),
            )  # fmt: skip

    def game_keys(self) -> set[tuple[str, str]]:
        """(game id, start time) of every stored game: what tells one play of a game
        from another when sources are combined."""
        return {(str(a), str(b)) for a, b in self._q("SELECT game_id, started FROM games")}

    def game_rows(self) -> Iterator[GameRow]:
        rows = self._q(
            "SELECT game_id, started, seat1, seat2, winner_seat, termination, pair_key FROM games"
        )
        for row in rows:
            yield GameRow(*row)

    def host_rows(self) -> Iterator[tuple[str, str, GameRow, list[float]]]:
        """Every stored game with the host and CPU that played it and its move times."""
        rows = self._q(
            "SELECT json_extract(record, '$.host'), json_extract(record, '$.cpu'), game_id,"
            " started, seat1, seat2, winner_seat, termination, pair_key,"
            " json_extract(record, '$.move_ms') FROM games ORDER BY number"
        )
        for host, cpu, *row, move_ms in rows:
            times = json.loads(move_ms) if move_ms else []
            yield str(host or ""), str(cpu or ""), GameRow(*row), times

    def done_ids(self) -> set[str]:
        return {row[0] for row in self._q("SELECT game_id FROM games")}

    def games_stored(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM games")[0][0])

    def counts(self) -> list[CountRow]:
        """Per ordered seat pairing: games won by each seat (aggregated in SQL)."""
        rows = self._q(
            "SELECT seat1, seat2, SUM(winner_seat = 1), SUM(winner_seat = 2) FROM games"
            " GROUP BY seat1, seat2"
        )
        return [CountRow(a, b, int(w), int(lost)) for a, b, w, lost in rows]

    def faults(self) -> list[tuple[str, str, int]]:
        """(engine at fault, termination, count) for every forfeit."""
        marks = ",".join("?" * len(FAULTS))
        rows = self._q(
            "SELECT CASE winner_seat WHEN 1 THEN seat2 ELSE seat1 END, termination, COUNT(*)"
            f" FROM games WHERE termination IN ({marks}) GROUP BY 1, 2",
            FAULTS,
        )
        return [(str(e), str(t), int(n)) for e, t, n in rows]

    def pair_results(self) -> list[tuple[str, str, str]]:
        """For each complete seat-swapped pair: (A, B, wins of A), A sorting before B."""
        rows = self._q(
            "SELECT pair_key, seat1, seat2, winner FROM games ORDER BY pair_key, number"
        )
        out: list[tuple[str, str, str]] = []
        current: list[tuple[str, str, str]] = []
        key = None
        for pair_key, seat1, seat2, winner in rows:
            if pair_key != key:
                current = []
                key = pair_key
            current.append((seat1, seat2, winner))
            if len(current) == 2:
                a, b = sorted((current[0][0], current[0][1]))
                wins = sum(w == a for _, _, w in current)
                out.append((a, b, str(wins)))
        return out

    def identical_pairings(self) -> list[tuple[str, str, int]]:
        """Pairings whose games (per seat order) are all the same move sequence."""
        rows = self._q(
            "SELECT seat1, seat2, COUNT(*), COUNT(DISTINCT json_extract(record, '$.moves'))"
            " FROM games GROUP BY seat1, seat2 HAVING COUNT(*) > 1"
        )
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
            "SELECT termination, reason, COUNT(*) FROM voids"
            " WHERE game_id NOT IN (SELECT game_id FROM games)"
            " GROUP BY termination, reason ORDER BY COUNT(*) DESC"
        )
        return [(str(t), str(r), int(n)) for t, r, n in rows]

    def void_count(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM voids")[0][0])

    def records(self, *, voids: bool = True) -> Iterator[tuple[dict[str, Any], bool]]:
        """Every stored record (JSON object) in play order, void attempts flagged."""
        for (data,) in self._q("SELECT record FROM games ORDER BY number"):
            yield json.loads(data), False
        if voids:
            for (data,) in self._q("SELECT record FROM voids ORDER BY id"):
                yield json.loads(data), True

    def accept_rebuild(self, name: str, spec: EngineSpec) -> None:
        """Take an engine's new build as the same engine from now on, and say so in the
        store: `meta.rebuilds` lists every accepted change with its time and hashes."""
        program, script = program_hashes(spec)
        rows = self._q("SELECT program_sha256, script_sha256 FROM engines WHERE name=?", (name,))
        if not rows:
            return
        changes = json.loads(self.meta("rebuilds") or "[]")
        changes.append({"engine": name, "at": _now(), "program_sha256": [rows[0][0], program],
                        "script_sha256": [rows[0][1], script]})  # fmt: skip
        with self._transaction():
            self.db.execute("UPDATE engines SET program_sha256=?, script_sha256=? WHERE name=?",
                            (program, script, name))  # fmt: skip
            self._set_meta("rebuilds", json.dumps(changes))

    def engines(self) -> list[dict[str, Any]]:
        rows = self._q(
            "SELECT name, command, program_sha256, script_sha256, reply_name, reply_version"
            " FROM engines ORDER BY rowid"
        )
        keys = ("name", "command", "program_sha256", "script_sha256", "reply_name",
                "reply_version")  # fmt: skip
        return [dict(zip(keys, row, strict=True)) for row in rows]


def _lock(path: Path) -> int:
    """Hold the store for this process; another live holder is a usage error."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot create the lock file {lock_path}: {exc.strerror}",
                          where=str(path), hint="choose a writable output path") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
        os.close(fd)
        raise ConfigError(
            "another run is using this results store" + (f" (pid {holder})" if holder else ""),
            where=str(path),
            hint="wait for it to finish or stop it; two runs cannot share a store",
        ) from exc
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def set_aside(path: Path) -> Path | None:
    """Move a store (and its WAL files) to a dated name beside it; returns the new path."""
    if not path.exists():
        return None
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.stem}.{stamp}{path.suffix}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.stem}.{stamp}-{n}{path.suffix}")
    # Fold the WAL into the main file first so that one file holds everything.
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise StoreError(f"{path} is not a results store ({exc}); --fresh only sets stores"
                         " aside: move that file away yourself or choose another output") from exc
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def store_files(path: Path) -> list[Path]:
    """The files a store lives in: the database, its WAL and shared memory, its lock."""
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm", ".lock")]
