"""The store's files on disk: the run's exclusive `flock`, how a reader opens the file
without changing a byte, and setting a store aside under a dated name."""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import sqlite3
import stat
import time
from pathlib import Path

from arbiter.errors import ConfigError
from arbiter.results.store.failures import DB_ERRORS, _os_failure

READERS_WAIT = 30.0  # seconds a starting run waits for readers of its store to finish


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
            raise ConfigError(
                f"cannot lock the results store: {exc.strerror}",
                where=str(path),
                hint="put the store on a local disk, where one run can hold it",
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise ConfigError(
                "another run is using this results store" + (f" (pid {holder})" if holder else ""),
                where=str(path),
                hint="wait for it to finish or stop it; two runs cannot share a store",
            ) from None
        fcntl.flock(fd, fcntl.LOCK_UN)  # only readers hold it: wait for them
        if time.monotonic() > deadline:
            raise ConfigError(
                f"the results store was being read for over {READERS_WAIT:g} s",
                where=str(path),
                hint="run again when the commands reading it"
                " (status, ratings, report, export) are done",
            )
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
        raise ConfigError(
            f"not a results store ({exc}); --fresh only sets stores aside",
            where=str(path),
            hint="move that file away yourself or name another output",
        ) from exc
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
