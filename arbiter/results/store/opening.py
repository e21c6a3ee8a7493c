"""Opening a store: for a run (locked, checked, made if new) or to read (read-only, one
snapshot, not a byte changed)."""

from __future__ import annotations

import os
import sqlite3
import stat
import urllib.parse
from pathlib import Path

from arbiter.errors import ConfigError
from arbiter.results.store.failures import (
    DB_ERRORS,
    _foreign_hint,
    _os_failure,
    _sqlite_failure,
    _text,
)
from arbiter.results.store.files import _lock, _read_mode, _remove_unused, set_aside
from arbiter.results.store.schema import _KEPT, _READ_AIDS, _SCHEMA, _SUMMED, SCHEMA_VERSION
from arbiter.results.store.writes import StoreWrites


class Store(StoreWrites):
    """An open tournament store: `open_for_run` to play, `open_read` to look at it.

    Close it (or use `with`); a store opened to read is one snapshot until then.
    """

    # ----------------------------------------------------------------- opening

    @classmethod
    def open_for_run(
        cls, path: str | os.PathLike[str], *, fresh: bool = False, origin: str = ""
    ) -> tuple[Store, Path | None]:
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
            raise _os_failure(
                exc, file.parent, "create the folder for the results store", run=True
            ) from exc
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
            raise _os_failure(
                exc, file.parent, "create the folder for the results store", run=True
            ) from exc
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
                db.executescript(_SCHEMA + _READ_AIDS + _KEPT + _SUMMED)
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
                raise ConfigError(
                    "not a results store (not a regular file)",
                    where=str(file),
                    hint=_foreign_hint(False, ""),
                )
            header = os.pread(fd, 100, 0)
            if header and not header.startswith(b"SQLite format 3\x00"):
                raise ConfigError(
                    "not a results store (not an SQLite database)",
                    where=str(file),
                    hint=_foreign_hint(False, ""),
                )
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
                db.executescript(
                    _SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE").replace(
                        "CREATE INDEX IF NOT EXISTS ", "CREATE INDEX IF NOT EXISTS temp."
                    )
                )
                store._exec("BEGIN")
        except BaseException:
            store.close()
            raise
        return store
