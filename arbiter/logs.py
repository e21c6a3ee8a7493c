"""The harness's own log: silent unless asked for, one logger per module under `arbiter`.

The commands that play games take `--log FILE` (everything from DEBUG up, appended) and
`-v` (INFO on stderr; `-vv` DEBUG). Worker processes inherit the choice through their
environment and append to the same file, one whole record per write. Engine text can
reach a log message (a name, a detail), so what goes to a terminal is escaped.
"""

from __future__ import annotations

import logging
import os
import re
import stat

from arbiter import text
from arbiter.errors import ConfigError

_FILE = "ARBITER_LOG_FILE"
_LEVEL = "ARBITER_LOG_LEVEL"
_FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"


class _TerminalFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return text.terminal(super().format(record))


def configure(path: str | None, verbose: int) -> None:
    """Send the `arbiter` loggers where the user asked, in this process and its workers."""
    root = logging.getLogger("arbiter")
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.propagate = False
    os.environ.pop(_FILE, None)
    os.environ.pop(_LEVEL, None)
    level = logging.CRITICAL + 1
    if path:
        _check_target(path)
        try:
            handler: logging.Handler = logging.FileHandler(path, mode="a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot open the log file: {exc.strerror}",
                where=path,
                hint="choose a writable path with --log",
            ) from exc
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler.setLevel(logging.DEBUG)
        root.addHandler(handler)
        level = logging.DEBUG
        os.environ[_FILE] = os.path.abspath(path)
    if verbose:
        stream = logging.StreamHandler()
        stream.setFormatter(_TerminalFormatter("%(name)s %(levelname)s %(message)s"))
        stream.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
        root.addHandler(stream)
        level = min(level, stream.level)
        os.environ[_LEVEL] = str(verbose)
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    root.setLevel(level)


def _check_target(path: str) -> None:
    """A log is appended to: never to a file some other program (or this one) wrote for
    another purpose, a store or a records file given here by mistake."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return  # a terminal, a pipe, /dev/stderr: written to as it is, never read
        with open(path, "rb") as handle:
            head = handle.read(24)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(
            f"cannot open the log file: {exc.strerror}",
            where=path,
            hint="choose a writable path with --log",
        ) from exc
    if head and not re.match(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", head):
        raise ConfigError(
            "the file exists and is not a log this command wrote; it was left alone",
            where=path,
            hint="choose a new path for --log",
        )


def configure_from_environment() -> None:
    """In a worker process: the log its parent was asked for."""
    path = os.environ.get(_FILE) or None
    try:
        verbose = int(os.environ.get(_LEVEL, "0"))
    except ValueError:
        verbose = 0
    try:
        configure(path, verbose)
    except ConfigError:
        configure(None, verbose)  # the parent opened it; a worker never stops over its log


def where() -> str:
    """Where the full story of a harness fault is, for one-line messages."""
    path = os.environ.get(_FILE)
    return f"the log {path}" if path else "the log (run with --log FILE to keep one)"
