"""No engine outlives the harness, and nothing an engine starts outlives its game.

Two mechanisms, each for a way processes escape:

* A watchdog process (`python -m arbiter.engines.reaper`) is told each engine's process group as
  it starts and as it is reaped. When its stdin reaches EOF, which happens however the
  harness ends (SIGKILL included), it kills every group still listed. PR_SET_PDEATHSIG
  cannot do this job: it fires when the *thread* that forked the child exits, and trio
  starts processes from worker threads that end after a few idle seconds.
  Only processes that called `guard()` (the command line and its workers) run one.
* The harness's command-line processes are child subreapers (PR_SET_CHILD_SUBREAPER): a
  process that an engine starts and orphans, even in a new session of its own, becomes
  a child of the harness instead of init, and `reap_orphans` kills and reaps it after
  the engine is closed. Only processes that made themselves subreapers do this: a
  library user's own children are never touched.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

_PR_SET_CHILD_SUBREAPER = 36
TOKEN_VARIABLE = "ARBITER_GUARD"  # set in every engine's environment (see `engine_env`)
_subreaper = False
_guarding = False
_token = ""
_known: set[int] = set()  # children this process started on purpose (engines, workers)
_groups: set[int] = set()  # engine groups the watchdog must kill if this process dies
_spawning = 0  # starts in flight: their pids are not known yet
_watchdog: subprocess.Popen[bytes] | None = None
_lock = threading.Lock()


def guard() -> bool:
    """Make this process the guardian of its engines: a watchdog kills them if it dies,
    and it adopts what they orphan. Returns whether adoption is in force (Linux)."""
    global _guarding, _token
    _guarding = True
    _token = os.urandom(8).hex()
    return _become_subreaper()


def guarding() -> bool:
    """Whether this process already guards its engines (`guard()` was called)."""
    return _guarding


def _become_subreaper() -> bool:
    global _subreaper
    if _subreaper or not sys.platform.startswith("linux"):
        return _subreaper
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _subreaper = False
    return _subreaper


def engine_env() -> dict[str, str]:
    """What every engine's environment carries, so that the watchdog can find processes
    an engine moved out of its group (a new session) after this process has died."""
    return {TOKEN_VARIABLE: _token} if _guarding else {}


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Around a process start: orphans are not reaped while a new child's pid is unknown."""
    global _spawning
    _spawning += 1
    try:
        yield
    finally:
        _spawning -= 1


def started(pid: int, *, group: bool = True) -> None:
    """A child this process started on purpose; with `group`, the watchdog guards it."""
    _known.add(pid)
    if group:
        _groups.add(pid)
        _tell(f"+{pid}\n")


def reaped(pid: int) -> None:
    _known.discard(pid)
    if pid in _groups:
        _groups.discard(pid)
        _tell(f"-{pid}\n")


def check_watchdog() -> None:
    """Start the watchdog again if it died, and tell it every group it must guard."""
    if _guarding and _groups:
        _tell("")


def _tell(line: str) -> None:
    global _watchdog
    if not _guarding:
        return
    with _lock:
        if _watchdog is None or _watchdog.poll() is not None:
            try:
                _watchdog = subprocess.Popen(
                    [sys.executable, "-m", "arbiter.engines.reaper", _token],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,  # Ctrl-C on the terminal does not reach it
                )
            except OSError:
                return
            _known.add(_watchdog.pid)
            line = "".join(f"+{pgid}\n" for pgid in sorted(_groups))  # all it must know
        assert _watchdog.stdin is not None
        with contextlib.suppress(OSError):
            if line:
                os.write(_watchdog.stdin.fileno(), line.encode())


def reap_orphans() -> list[int]:
    """Kill and reap adopted descendants of closed engines; returns their pids."""
    if not _subreaper or _spawning:
        return []  # a child being started is not known yet: try again at the next close
    me = os.getpid()
    own_group = os.getpgrp()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in _known:
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) != me:
            continue
        found.append(pid)
        if fields[0] != b"Z":
            pgid = int(fields[2])
            if pgid not in (own_group, me):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for pid in found:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # a zombie now, or at the next call
    return found


def _guarded(token: str) -> list[int]:
    """Processes whose environment carries this harness's token."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _watch(token: str) -> None:
    """The watchdog: read +PGID / -PGID lines; at EOF, kill every group still listed and
    every process that carries the harness's token (engines' escaped descendants)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    harness = os.getppid()
    groups: set[int] = set()
    buffer = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line[:1] == b"+" and line[1:].isdigit():
                groups.add(int(line[1:]))
            elif line[:1] == b"-" and line[1:].isdigit():
                groups.discard(int(line[1:]))
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    if token:
        for pid in _guarded(token):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    # The cgroups of its engines (resource limits): a killed process leaves its cgroup
    # only once the kernel has finished it, so try for a moment.
    from arbiter.engines import sandbox

    for _ in range(50):
        if not sandbox.remove_cgroups_of(harness):
            break
        time.sleep(0.02)


if __name__ == "__main__":
    _watch(sys.argv[1] if len(sys.argv) > 1 else "")
