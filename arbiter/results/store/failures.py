"""SQLite's and the system's failures on a store, told by their real cause (a full
disk, a foreign file, a damaged page) with what to do about it."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from arbiter.errors import ArbiterError, ConfigError, StoreError

RUN_HINT = (
    "the run does not build on a damaged store: restore it from a copy, or start a"
    " new store with --fresh (the old one is kept under a dated name)"
)
READ_HINT = "restore the store from a copy, or leave out --strict to skip damaged rows"


DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def _text(data: bytes) -> str:
    """Stored text as Python reads it: damaged bytes become U+FFFD, never an exception
    (the columns checked against their record then differ and the row is damaged)."""
    return data.decode("utf-8", "replace")


def _sqlite_failure(
    exc: sqlite3.Error | UnicodeDecodeError, path: Path, *, run: bool, origin: str = ""
) -> ArbiterError:
    """The error to report for an SQLite failure on a store, by its real cause."""
    if isinstance(exc, UnicodeDecodeError):
        said = bytes(exc.object).decode("utf-8", "replace")[:200]
        return ConfigError(
            f"not a usable results store (damaged: {said})",
            where=str(path),
            hint=_foreign_hint(run, origin),
        )
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == sqlite3.SQLITE_FULL or (primary == sqlite3.SQLITE_IOERR and _no_space(path)):
        # SQLite reports some writes that found the disk full (growing -shm, say) as
        # an I/O error: a disk with next to nothing free is the cause to name then.
        return StoreError(
            f"{path}: no space left on device ({exc}); free some space and run"
            " again (the games stored so far are intact)"
        )
    if primary == sqlite3.SQLITE_IOERR:
        return StoreError(
            f"{path}: the disk failed a read or write ({exc}); check the disk and run again"
        )
    if primary in (
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_AUTH,
    ):
        return ConfigError(
            f"cannot {'write' if run else 'read'} the results store ({exc})",
            where=str(path),
            hint="choose a writable output path"
            if run
            else "check the file and its folder's permissions",
        )
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(f"{path}: the results store stayed busy ({exc}); try again")
    if primary in (
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_FORMAT,
        sqlite3.SQLITE_SCHEMA,
        sqlite3.SQLITE_ERROR,
        sqlite3.SQLITE_MISMATCH,
        sqlite3.SQLITE_RANGE,
        sqlite3.SQLITE_TOOBIG,
    ):
        return ConfigError(
            f"not a usable results store ({exc})", where=str(path), hint=_foreign_hint(run, origin)
        )
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
    return (
        "give a store written by 'arbiter tournament run'; if it is damaged, restore it from a copy"
    )


def _os_failure(exc: OSError, path: Path, doing: str, *, run: bool) -> ArbiterError:
    """The error to report when the system refuses a file operation, by its cause."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"cannot {doing} {path}: {exc.strerror}; free some space and run again")
    if exc.errno == errno.ELOOP:
        return ConfigError(
            "is a symbolic link that leads back to itself",
            where=str(path),
            hint="remove the link or name another file",
        )
    if exc.errno == errno.ENOENT and not run:
        return ConfigError(
            "no results store here yet",
            where=str(path),
            hint="run 'arbiter tournament run FILE' first",
        )
    return ConfigError(
        f"cannot {doing}: {exc.strerror}",
        where=str(path),
        hint="choose a writable output path" if run else "check the path and its permissions",
    )
