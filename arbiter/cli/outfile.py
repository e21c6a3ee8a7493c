"""Files a command writes as its output: whole or not at all, or streamed where it must be.

A new file is written beside its place under a temporary name and linked into place when
complete, so a failure leaves nothing behind and a file that appeared meanwhile is never
replaced. An existing file is replaced only when the user says so (`--force`), and then
the same way. A device, a pipe or a FIFO (or a path naming an open descriptor, such as
/dev/stdout) cannot be replaced by a rename and must not be: the output is streamed into
it, without creating or truncating anything. `-` is standard output, for every command
that takes an output path; one whose output cannot go there refuses it, never writing a
file named `-`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from arbiter.errors import ArbiterError, ConfigError, StoreError

STDOUT = "-"  # the output path that means standard output


def shown(path: str) -> str:
    """An output path as messages name it."""
    return "standard output" if path == STDOUT else path


_DESCRIPTOR = re.compile(r"^/(?:proc/(?:self|thread-self|\d+)|dev)/fd/\d+$")


def names_descriptor(path: str | os.PathLike[str]) -> bool:
    """True if the path, or a link on its way, names an open descriptor (/dev/stdout,
    /dev/fd/N, /proc/self/fd/N): what the caller opened, to be written in place."""
    current = os.path.abspath(path)
    for _ in range(40):
        if _DESCRIPTOR.match(current):
            return True
        try:
            link = os.readlink(current)
        except OSError:
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return False


def _failure(exc: OSError, path: str, hint: str, *, streamed: bool = False) -> ArbiterError:
    """A failed write by its cause: the disk (exit 1) or the path given (exit 2)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPIPE, errno.EIO):
        after = (
            "what was streamed so far is all there is"
            if streamed
            else "nothing was put in its place"
        )
        return StoreError(f"cannot write {path}: {exc.strerror}; {after}")
    return ConfigError(f"cannot write: {exc.strerror}", where=path, hint=hint)


def write_lines(
    path: str,
    lines: Iterable[str],
    *,
    force: bool = False,
    hint: str = "choose a writable path",
    kinds: tuple[bytes, ...] = (),
) -> int:
    """Write `lines` (each ending in a newline) to `path`; returns how many were written.

    An existing regular file is refused (ConfigError) unless `force`, or unless it starts
    (after white space, in any case) like one of `kinds`: a file of the kind the command
    writes, which it replaces, never a store, a records file or a tournament file given
    by mistake. A file replaced is replaced whole, keeping its permissions. The lines are
    read only once the target is known to be writable, so a refusal costs nothing.
    `-` writes to standard output; a reader that went away (`| head`) ends the writing
    quietly, as every command's output does.
    """
    if path == STDOUT:
        return _to_stdout(lines)
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _failure(exc, path, hint) from exc
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError("is a folder", where=path, hint="give a file name")
    if names_descriptor(path) or (st is not None and not stat.S_ISREG(st.st_mode)):
        return _stream(path, lines, hint)
    if st is not None and not force and not kinds:
        raise ConfigError(
            "the file exists and was left alone",
            where=path,
            hint="give --force to replace it, or choose a new path",
        )
    if st is not None and not force and not _starts_like(path, kinds, hint):
        raise ConfigError(
            "the file exists and is not one this command wrote; it was left alone",
            where=path,
            hint="choose a new path",
        )
    if st is not None:
        # Replacing through a symbolic link replaces the file it points to, not the link.
        target = Path(os.path.realpath(path))
        mode = stat.S_IMODE(st.st_mode)
    else:
        target = Path(os.path.abspath(path))
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, temporary = tempfile.mkstemp(prefix=".arbiter-", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise _failure(exc, path, hint) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            n = _write_all(handle, lines)
            os.fchmod(handle.fileno(), mode)
        if st is None:
            _link_new(temporary, target, path)
        else:
            os.replace(temporary, target)  # whole or not at all
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise _failure(exc, path, hint) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return n


def _starts_like(path: str, kinds: tuple[bytes, ...], hint: str) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(64).lstrip().lower()
    except OSError as exc:
        raise _failure(exc, path, hint) from exc
    return head.startswith(kinds)


def _link_new(temporary: str, target: Path, path: str) -> None:
    """Put the finished file in place unless something appeared there meanwhile."""
    try:
        os.link(temporary, target)
    except FileExistsError as exc:
        raise ConfigError(
            "a file appeared there while this one was written; it was left alone",
            where=path,
            hint="choose a new path",
        ) from exc
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if os.path.lexists(target):  # no hard links here: check, then rename
            raise ConfigError(
                "a file appeared there while this one was written; it was left alone",
                where=path,
                hint="choose a new path",
            ) from exc
        os.rename(temporary, target)
        return
    os.unlink(temporary)


def _stream(path: str, lines: Iterable[str], hint: str) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _failure(exc, path, hint) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            return _write_all(handle, lines)
    except OSError as exc:
        raise _failure(exc, path, hint, streamed=True) from exc


def _to_stdout(lines: Iterable[str]) -> int:
    n = 0
    try:
        for line in lines:
            sys.stdout.write(line)
            n += 1
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        null = os.open(os.devnull, os.O_WRONLY)  # what is still buffered goes nowhere
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    return n


def _write_all(handle: TextIO, lines: Iterable[str]) -> int:
    n = 0
    for line in lines:
        handle.write(line)
        n += 1
    return n
