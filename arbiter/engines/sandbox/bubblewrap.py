"""The bubblewrap command line that runs an engine with only its file view of the host.

Its own pid namespace (with its own /proc) is what stops an engine from signalling or
ptracing the referee and its opponent, from writing into their pipes through
/proc/PID/fd, and from leaving processes behind. A private size-capped tmpfs on /tmp is
the only writable place; the network namespace has no interface but its own loopback.
When the harness is root, the child drops to an unprivileged user before it execs
bubblewrap, so no permission of root's lets the engine past."""

from __future__ import annotations

import contextlib
import ctypes
import fnmatch
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from arbiter.engines.sandbox.files import (
    _STAGE,
    ENGINE_GID,
    ENGINE_UID,
    ETC,
    ETC_PATTERNS,
    SCRATCH,
    SYS,
    SYSTEM,
    View,
    _reachable,
    _within,
    engine_ids,
)
from arbiter.engines.sandbox.limits import (
    DEFAULT_DISK_MB,
)
from arbiter.errors import ConfigError


@cache
def unavailable() -> str | None:
    """Why the sandbox cannot run here, or None when bubblewrap works.

    Tried once per process the way a game starts an engine (as the engine's user, with
    its namespaces and its file system), so a host that forbids unprivileged user
    namespaces is found before any game, not in the first one.
    """
    program = shutil.which("bwrap")
    if program is None:
        return (
            "bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get"
            " install bubblewrap; Fedora: dnf install bubblewrap) or run without the"
            " sandbox"
        )
    true = shutil.which("true") or "/bin/true"
    launch = _launch([true], View(argv=(true,), start=SCRATCH, binds=()), DEFAULT_DISK_MB, ())
    try:
        probe = subprocess.run(
            launch.argv,
            capture_output=True,
            timeout=30,
            check=False,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec(),
        )
    except (OSError, subprocess.TimeoutExpired, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be run: {exc}"
    finally:
        launch.close()
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit status {probe.returncode}"
        return (
            f"bubblewrap cannot make a sandbox here ({why[:200]}); it needs bubblewrap"
            " 0.8 or later and user namespaces: allow unprivileged ones (sysctl"
            " kernel.unprivileged_userns_clone=1, or"
            " kernel.apparmor_restrict_unprivileged_userns=0)"
        )
    return None


def require(where: str) -> None:
    """Stop before any game when the sandbox was asked for and cannot run: never play
    unsandboxed instead."""
    reason = unavailable()
    if reason is not None:
        raise ConfigError(f"the sandbox cannot be used: {reason}", where=where)


SHM_MB = 16


def refusal(stderr_tail: str, start: str) -> str:
    """What to do about a path the engine says it could not open (a missing file or a
    refused permission, as the last such line of its stderr names it), or ""."""
    for line in reversed(stderr_tail.splitlines()):
        denied = "Permission denied" in line or "Errno 13" in line
        if not (denied or "No such file or directory" in line or "Errno 2]" in line):
            continue
        quoted = re.findall(r"'([^']+)'|\"([^\"]+)\"", line)
        candidates = [a or b for a, b in quoted]
        candidates += re.findall(r"(?<![\w.])(/[^\s:'\",;()]+)", line)
        if not candidates:
            continue
        path = os.path.normpath(os.path.join(start, candidates[-1]))
        if denied and os.path.exists(path):
            uid = engine_ids()[0]
            return (
                f"; the sandbox refused it {path!r}: the engine runs as uid {uid}; make"
                " it readable by that user (chmod o+r, and o+x on its folders)"
            )
        return (
            f"; under the sandbox it could not open {path!r}: a sandboxed engine reads"
            " only its program's folder, its cwd, the files its arguments name and"
            f' its definition\'s `read` paths; add read = ["{path}"] to its'
            " definition if it needs that path"
        )
    return ""


def _account(uid: int, gid: int) -> tuple[bytes, bytes]:
    """/etc/passwd and /etc/group for the sandbox: root, nobody and the engine's user,
    with no home folders, no shells and nothing of the host's other accounts."""
    users = {0: ("root", 0), ENGINE_UID: ("nobody", ENGINE_GID), uid: ("engine", gid)}
    groups = {0: "root", ENGINE_GID: "nogroup", gid: "engine"}
    passwd = "".join(
        f"{name}:x:{u}:{g}::{SCRATCH}:/usr/sbin/nologin\n" for u, (name, g) in users.items()
    )
    group = "".join(f"{name}:x:{g}:\n" for g, name in groups.items())
    return passwd.encode(), group.encode()


def _data_fd(data: bytes) -> int:
    """A pipe holding `data` for bubblewrap to copy into the sandbox (small: it fits in
    the pipe's buffer, so nothing blocks)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end


@dataclass
class Launch:
    """The bubblewrap command line of one engine and what its child does before exec.

    When the harness is root, the child drops to the engine's unprivileged user before
    it execs bubblewrap; folders that user could not even look up (a Python built under
    /root, a test's private temporary folder) are first staged, in a mount namespace of
    the child's own, where bubblewrap can bind them. The host's mounts never change.
    """

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    staged: list[tuple[str, bool]] = field(default_factory=list)  # (path, is a folder)
    drop: tuple[int, int] | None = None

    def preexec(self, before: Callable[[], None] | None = None) -> Callable[[], None] | None:
        staged, drop = self.staged, self.drop
        if before is None and not staged and drop is None:
            return None
        mount = _libc_call("mount") if staged else None
        unshare = _libc_call("unshare") if staged else None

        def apply() -> None:
            if before is not None:
                before()
            if staged:
                assert mount is not None and unshare is not None
                _stage(staged, mount, unshare)
            if drop is not None:
                os.setgroups([])
                os.setresgid(drop[1], drop[1], drop[1])
                os.setresuid(drop[0], drop[0], drop[0])

        return apply

    def close(self) -> None:
        """Close this process's copies of the descriptors (after the start, or instead)."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()


_CLONE_NEWNS = 0x00020000


_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_SLAVE = 2, 4, 4096, 16384, 1 << 19


def _libc_call(name: str) -> Any:
    function = getattr(ctypes.CDLL(None, use_errno=True), name)
    if name == "mount":
        function.argtypes = [
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_ulong,
            ctypes.c_char_p,
        ]
    else:
        function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def _stage(staged: list[tuple[str, bool]], mount: Any, unshare: Any) -> None:
    """In the child, as root: a private mount namespace (receiving the host's mounts,
    never sending its own), a small tmpfs on /tmp there, and each staged folder or file
    bound onto /tmp/N (through a descriptor opened before the tmpfs hides /tmp, and
    after the unshare: a bind takes its source from this namespace only)."""

    def check(result: int, what: str) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    check(unshare(_CLONE_NEWNS), "unshare")
    check(mount(b"none", b"/", None, _MS_REC | _MS_SLAVE, None), "mount --make-rslave /")
    fds = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path, _ in staged]
    check(
        mount(b"tmpfs", _STAGE.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755,size=256k"),
        "mount tmpfs",
    )
    for number, (fd, (_, folder)) in enumerate(zip(fds, staged, strict=True)):
        target = f"{_STAGE}/{number}"
        if folder:
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        check(
            mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, _MS_BIND | _MS_REC, None),
            f"bind {target}",
        )
        os.close(fd)


def _launch(argv: list[str], engine_view: View, disk_mb: int, hidden: Iterable[str]) -> Launch:
    """The bubblewrap command that runs `argv` with only `engine_view` of the host."""
    program = shutil.which("bwrap") or "bwrap"
    uid, gid = engine_ids()
    launch = Launch(argv=[], drop=(uid, gid) if uid != os.getuid() else None)
    try:
        options = [*_system_options(), "--perms", "0755", "--dir", "/etc"]
        passwd, group = _account(uid, gid)
        fds = (_data_fd(passwd), _data_fd(group))
        launch.pass_fds = fds
        options += [
            "--perms",
            "0644",
            "--ro-bind-data",
            str(fds[0]),
            "/etc/passwd",
            "--perms",
            "0644",
            "--ro-bind-data",
            str(fds[1]),
            "/etc/group",
        ]
        size = str(disk_mb * 1024 * 1024)
        options += [
            "--dev",
            "/dev",
            # /dev is a tmpfs of its own: only its shm folder stays writable, and small.
            "--size",
            str(SHM_MB * 1024 * 1024),
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
            "--proc",
            "/proc",
            "--size",
            size,
            "--perms",
            "1777",
            "--tmpfs",
            SCRATCH,
        ]
        # Staging mounts a tmpfs on the launcher's /tmp, which hides the host's: once
        # anything is staged, what the engine needs from under /tmp is staged too.
        staging = launch.drop is not None and any(
            not _reachable(b.path, uid, gid) for b in engine_view.binds
        )
        for bind in engine_view.binds:  # after the scratch tmpfs: a venv may be under /tmp
            source = bind.path
            if staging and (not _reachable(bind.path, uid, gid) or _within(bind.path, _STAGE)):
                if not os.path.exists(bind.path):
                    raise FileNotFoundError(2, "No such file or directory", bind.path)
                launch.staged.append((bind.path, os.path.isdir(bind.path)))
                source = f"{_STAGE}/{len(launch.staged) - 1}"
            options += ["--ro-bind", source, bind.path]
        for path in hidden:  # the store and records, where a bound folder holds them
            path = os.path.abspath(path)
            if not any(_within(path, b.path) for b in engine_view.binds):
                continue
            if os.path.isdir(path):
                options += ["--tmpfs", path]
            elif os.path.exists(path):
                options += ["--ro-bind", "/dev/null", path]
        # The root is bubblewrap's own tmpfs (the folders leading to the binds): read-only
        # too, so that /tmp and /dev/shm stay the only writable places.
        options += ["--remount-ro", "/"]
    except BaseException:
        launch.close()
        raise
    # A user namespace of its own, no capabilities at all, and no nested namespaces
    # (which would let it remount, or mount a tmpfs outside every limit).
    # No --die-with-parent: bubblewrap takes the death of the *thread* that started it
    # for its parent's, and trio starts processes from worker threads that come and go.
    # The sandbox lives in the engine's process group instead, which the referee kills
    # after every game and the watchdog kills if the referee dies; its pid namespace
    # goes down with bubblewrap's init, whatever sessions were made inside.
    options += [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--setenv",
        "TMPDIR",
        SCRATCH,
        "--setenv",
        "HOME",
        SCRATCH,
        "--chdir",
        engine_view.start,
    ]
    launch.argv = [program, *options, "--", *argv]
    return launch


@cache
def _system_options() -> tuple[str, ...]:
    """Binds of the system folders, the needed parts of /etc and the CPU topology."""
    options: list[str] = []
    etc = [os.path.join("/etc", name) for name in ETC]
    with contextlib.suppress(OSError):
        etc += sorted(
            os.path.join("/etc", n)
            for n in os.listdir("/etc")
            if any(fnmatch.fnmatch(n, p) for p in ETC_PATTERNS)
        )
    for path in [*SYSTEM, *etc, *SYS]:
        if os.path.islink(path):
            options += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            options += ["--ro-bind", path, path]
    return tuple(options)


# What a sandboxed engine inherits of the harness's environment: how to find programs
# (and the arbiter package a bundled bot imports), speak the locale and tell the time,
# and the harness's own markers. Nothing else: the
# organiser's tokens and keys live in the environment as often as in files.
_ENVIRONMENT = frozenset({"PATH", "PYTHONPATH", "LANG", "LANGUAGE", "TZ", "TERM"})


def environment(host: Mapping[str, str]) -> dict[str, str]:
    """The environment a sandboxed engine starts with (its definition's `env` is added)."""
    return {k: v for k, v in host.items() if k in _ENVIRONMENT or k.startswith(("LC_", "ARBITER_"))}


def signal_of(returncode: int, sandboxed: bool) -> int | None:
    """The signal that ended the engine, from the exit status the referee sees: bubblewrap
    reports a signal death inside the sandbox as 128+N."""
    if returncode < 0:
        return -returncode
    if sandboxed and 128 < returncode < 128 + 65:
        return returncode - 128
    return None


def sandbox_death(returncode: int) -> str | None:
    """How a sandboxed engine died, in words, when bubblewrap's 128+N says a signal
    ended it inside; None when the exit status reads as it is."""
    if returncode > 128 and (sig := signal_of(returncode, True)) is not None:
        return f"killed by signal {sig} ({_signal_name(sig)}) inside the sandbox"
    return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"
