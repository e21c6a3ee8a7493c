"""Confinement for untrusted engines: a bubblewrap sandbox, resource limits, and the
evidence that names the limit an engine broke.

The sandbox is what makes a leaderboard trustworthy when the engines are other people's
programs. Its own pid namespace (with its own /proc) is what stops an engine from
signalling or ptracing the referee and its opponent, from writing into their pipes through
/proc/PID/fd, and from leaving processes behind; a user namespace alone stops none of that
when the harness runs as root. Of the host's files it sees only an allow-list (see
`view`), read-only: the system's programs and libraries, what of /etc programs need to
start, its own program folder, its cwd, what its arguments and its definition's `read`
key name, and its interpreter's environment; never the organiser's folders, other
engines' folders or the host's secrets. A private size-capped tmpfs on /tmp is the only
writable place; the network namespace has no interface but its own loopback. When the
harness is root, the engine runs as an unprivileged user (65534) outside its namespace
and inside, so no permission of root's lets it past.

bubblewrap has no resource limits, so limits are set in the child before it execs and are
inherited: rlimits always, and a cgroup where the host gives us a writable one (that is
what can cap the processes of root, count memory the way the kernel's OOM killer does, and
tell afterwards which limit was hit). Everything here is synchronous; `process.py` applies
it when it starts an engine and asks `breach()` when an engine fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import fnmatch
import itertools
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import arbiter
from arbiter.errors import ConfigError

LIMIT_KEYS = ("memory_mb", "cpu_s", "processes", "disk_mb")
DEFAULT_DISK_MB = 64  # the scratch tmpfs of a sandboxed engine with no disk limit of its own
MIN_PROCESSES = 3
# What a sandboxed engine gets when its definition sets no limit: enough for any engine
# that plays fair, never the whole machine. Applied where the host can enforce them.
SANDBOX_DEFAULTS = {"memory_mb": 4096, "processes": 512, "disk_mb": DEFAULT_DISK_MB}
# The largest values the kernel takes (an rlimit in bytes or seconds must fit in 63 bits),
# with room: beyond these a limit means nothing.
LIMIT_MAX = {"memory_mb": 1 << 30, "cpu_s": 1 << 40, "processes": 1 << 22, "disk_mb": 1 << 30}
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "arbiter-"
_LIMITS_HINT = "e.g. limits = { memory_mb = 1024, cpu_s = 600, processes = 64, disk_mb = 64 }"


@dataclass(frozen=True)
class Limits:
    """Resource limits for one engine process and everything it starts; None: no limit.

    memory_mb: resident memory of the whole engine where a cgroup is available (the OOM
    killer ends it at the limit), else the address space of each process (RLIMIT_AS, which
    counts reservations too: see docs/guide/sandbox.md for JVM and Go engines).
    cpu_s: CPU seconds of each process over its life, which is one game when sandboxed.
    processes: processes and threads at once, through a cgroup's pids.max.
    disk_mb: the size of the sandbox's writable tmpfs, and the largest file any process
    may write anywhere (RLIMIT_FSIZE).
    """

    memory_mb: int | None = None
    cpu_s: int | None = None
    processes: int | None = None
    disk_mb: int | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in asdict(self).values())

    def merged(self, defaults: Limits) -> Limits:
        """These limits, with `defaults` filling the ones not set here."""
        mine = asdict(self)
        return Limits(**{k: defaults.__dict__[k] if v is None else v for k, v in mine.items()})

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def parse_limits(value: Any, where: str) -> Limits:
    """A `limits` table from a definition file; every value a positive integer."""
    if not isinstance(value, dict):
        raise ConfigError("limits must be a table", where=where, hint=_LIMITS_HINT)
    unknown = set(value) - set(LIMIT_KEYS)
    if unknown:
        raise ConfigError(f"unknown limit(s) {', '.join(sorted(unknown))}", where=where,
                          hint=f"known limits: {', '.join(LIMIT_KEYS)}")  # fmt: skip
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ConfigError(f"{key} must be a positive whole number", where=f"{where}.{key}",
                              hint=_LIMITS_HINT)  # fmt: skip
        if number > LIMIT_MAX[key]:
            raise ConfigError(f"{key} = {number} is out of range", where=f"{where}.{key}",
                              hint=f"at most {LIMIT_MAX[key]}; leave the limit out for none"
                              )  # fmt: skip
    if value.get("processes") is not None and value["processes"] < MIN_PROCESSES:
        raise ConfigError(f"processes must be at least {MIN_PROCESSES} (the engine, and"
                          " bubblewrap and its init in a sandbox)",
                          where=f"{where}.processes")  # fmt: skip
    return Limits(**value)


@dataclass(frozen=True)
class Breach:
    """A limit an engine is known to have hit, and what shows it."""

    limit: str  # one of LIMIT_KEYS without its unit: memory, cpu, processes, disk
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


# -- bubblewrap ---------------------------------------------------------------------------


@cache
def unavailable() -> str | None:
    """Why the sandbox cannot run here, or None when bubblewrap works.

    Tried once per process the way a game starts an engine (as the engine's user, with
    its namespaces and its file system), so a host that forbids unprivileged user
    namespaces is found before any game, not in the first one.
    """
    program = shutil.which("bwrap")
    if program is None:
        return ("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get"
                " install bubblewrap; Fedora: dnf install bubblewrap) or run without the"
                " sandbox")  # fmt: skip
    true = shutil.which("true") or "/bin/true"
    launch = _launch([true], View(argv=(true,), start=SCRATCH, binds=()), DEFAULT_DISK_MB, ())
    try:
        probe = subprocess.run(
            launch.argv, capture_output=True, timeout=30, check=False,
            pass_fds=launch.pass_fds, preexec_fn=launch.preexec(),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be run: {exc}"
    finally:
        launch.close()
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit status {probe.returncode}"
        return (f"bubblewrap cannot make a sandbox here ({why[:200]}); it needs bubblewrap"
                " 0.8 or later and user namespaces: allow unprivileged ones (sysctl"
                " kernel.unprivileged_userns_clone=1, or"
                " kernel.apparmor_restrict_unprivileged_userns=0)")  # fmt: skip
    return None


def require(where: str) -> None:
    """Stop before any game when the sandbox was asked for and cannot run: never play
    unsandboxed instead."""
    reason = unavailable()
    if reason is not None:
        raise ConfigError(f"the sandbox cannot be used: {reason}", where=where)


SHM_MB = 16
SCRATCH = "/tmp"  # as the engine sees it: a private tmpfs, also its $TMPDIR and $HOME
# The user a sandboxed engine runs as when the harness is root ("nobody" on most
# systems): no file permission of root's, or of any real user's, applies to it.
ENGINE_UID = ENGINE_GID = 65534
# What any program needs to start, all public: the system's programs and libraries, and
# the parts of /etc that the dynamic linker, libc (locale, time zone, name service
# switch), TLS (certificates) and a few runtimes read. Never /etc as a whole: it holds
# shadow, ssh keys, and whatever else the host keeps there.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "locale.alias", "locale.conf", "nsswitch.conf", "host.conf", "gai.conf", "protocols",
    "services", "mime.types", "magic", "os-release", "lsb-release", "debian_version",
    "redhat-release", "system-release", "ssl/certs", "ssl/openssl.cnf", "pki/tls/certs",
    "pki/tls/openssl.cnf", "pki/ca-trust/extracted", "ca-certificates",
    "ca-certificates.conf", "crypto-policies/back-ends", "fonts", "terminfo", "perl",
)  # fmt: skip
ETC_PATTERNS = ("python3*", "java-*")  # interpreters' own configuration (Debian)
SYS = ("/sys/devices/system/cpu",)  # how many cores there are (OpenMP, thread pools)
_STAGE = "/tmp"  # where the engine's folders are staged, in the launcher's mount namespace


@dataclass(frozen=True)
class Bind:
    """A host path the engine sees, read-only, at the same place, and why."""

    path: str
    why: str  # program, cwd, argument, read or environment (its interpreter's)

    @property
    def own(self) -> bool:
        """The engine's own files (not an interpreter shared by many engines)."""
        return self.why != "environment"


@dataclass(frozen=True)
class View:
    """What a sandboxed engine sees of the host besides the system folders: where it
    starts, what is bound, and its command line as it runs there (relative paths made
    absolute when it starts elsewhere than the folder they were written for)."""

    argv: tuple[str, ...]
    start: str
    binds: tuple[Bind, ...]

    def paths(self, *, own_only: bool = False) -> list[str]:
        return [b.path for b in self.binds if b.own or not own_only]


def engine_ids() -> tuple[int, int]:
    """The uid and gid a sandboxed engine runs as: the harness's own, except for root."""
    if os.geteuid() == 0:
        return ENGINE_UID, ENGINE_GID
    return os.getuid(), os.getgid()


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


@cache
def _system_roots() -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(p) for p in SYSTEM if os.path.exists(p)))


def _in_system(path: str) -> bool:
    real = os.path.realpath(path)
    return any(_within(real, root) for root in _system_roots())


def _environment_root(program: str) -> str | None:
    """The installation or virtual environment a program in its `bin` folder belongs to
    (a venv, a conda environment, a Python built under a home folder), else None."""
    folder = os.path.dirname(program)
    if os.path.basename(folder) != "bin":
        return None
    root = os.path.dirname(folder)
    markers = ("pyvenv.cfg", "conda-meta")
    if any(os.path.exists(os.path.join(root, m)) for m in markers):
        return root
    lib = os.path.join(root, "lib")
    with contextlib.suppress(OSError):
        if any(n.startswith(("python", "pypy")) for n in os.listdir(lib)):
            return root
    return None


def _venv_base(root: str) -> str | None:
    """The installation a virtual environment was made from (its pyvenv.cfg `home`)."""
    with (contextlib.suppress(OSError),
          open(os.path.join(root, "pyvenv.cfg"), encoding="utf-8") as handle):  # fmt: skip
        for line in handle:
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                return os.path.dirname(os.path.normpath(value.strip()))
    return None


def _runtime(program: str) -> list[str] | None:
    """The folders an interpreter or installed program needs, or None when `program` is
    the engine's own (its folder is then the engine's program folder)."""
    real = os.path.realpath(program)
    if real == os.path.realpath(sys.executable):
        # The harness's own interpreter ({python} and bundled engines): its environment,
        # and the arbiter package where an editable install keeps it (never the
        # project around it, which may hold other engines).
        return [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                os.path.dirname(os.path.abspath(arbiter.__file__))]  # fmt: skip
    roots = {r for r in (_environment_root(os.path.abspath(program)),
                         _environment_root(real)) if r is not None}  # fmt: skip
    if not roots and not _in_system(program):
        return None
    found = list(roots)
    found += [b for r in roots if (b := _venv_base(r)) is not None]
    return found


def _locate(word: str, here: str) -> str | None:
    if os.sep in word:
        return os.path.normpath(os.path.join(here, word))
    return shutil.which(word)


def view(argv: Iterable[str], cwd: str | None = None, *, cwd_given: bool = False,
         read: Iterable[str] = ()) -> View:  # fmt: skip
    """What a sandboxed engine is given to read besides the system.

    Its program's folder: the folder of its executable, or, when that is an interpreter
    or an installed program, of the first file its arguments name (the script, the
    jar). Its `cwd` when its definition sets one, where it also starts; else it starts
    in its program's folder (or its private /tmp when it has none, e.g. `python3 -m
    bot`). The files and folders its arguments name, the paths its definition's `read`
    key lists, and its interpreter's environment. Never the folder the harness runs in,
    nor the folder the definition file is in: those usually hold every bot and stores.
    """
    words = list(argv)
    here = os.path.abspath(cwd or os.getcwd())
    binds: list[Bind] = []
    first = _locate(words[0], here)
    runtime = _runtime(first) if first is not None else []
    program: str | None = None
    if runtime is None:
        program = first
    else:
        binds += [Bind(os.path.normpath(p), "environment") for p in runtime]
        for word in words[1:]:
            candidate = os.path.normpath(os.path.join(here, word))
            if not word.startswith("-") and os.path.isfile(candidate):
                program = candidate
                break
    if program is not None:
        binds.append(Bind(os.path.dirname(program), "program"))
        real = os.path.realpath(program)
        if os.path.dirname(real) != os.path.dirname(program):  # a link to elsewhere
            binds.append(Bind(os.path.dirname(real), "program"))
    if cwd_given:
        binds.append(Bind(here, "cwd"))
    start = here if cwd_given else os.path.dirname(program) if program else SCRATCH
    named = []
    for i, word in enumerate(words):
        path = os.path.normpath(os.path.join(here, word))
        if (i == 0 and os.sep not in word) or word.startswith("-") or not os.path.exists(path):
            continue
        if not os.path.isabs(word) and os.sep not in word and not os.path.isfile(path):
            continue  # a bare word that happens to name a folder here: not a path
        named.append((i, word, path))
        if path != "/" and not _in_system(path):
            binds.append(Bind(path, "argument"))
    binds += [Bind(os.path.normpath(p), "read") for p in read]
    if start != here:  # the engine starts elsewhere: its relative paths would break
        for i, word, path in named:
            if not os.path.isabs(word):
                words[i] = path
    return View(argv=tuple(words), start=start, binds=_outermost(binds))


def _outermost(binds: Iterable[Bind]) -> tuple[Bind, ...]:
    """Each path once, none inside another (a folder's bind already shows what is in
    it), system folders left out (they are bound anyway); the first reason given wins."""
    kept: list[Bind] = []
    for bind in sorted(dict((b.path, b) for b in reversed(list(binds))).values(),
                       key=lambda b: (len(b.path), b.path)):  # fmt: skip
        if bind.path == "/" or _in_system(bind.path):
            continue
        if not any(_within(bind.path, k.path) for k in kept):
            kept.append(bind)
    return tuple(kept)


def _readable(path: str, uid: int, gid: int) -> bool:
    """Whether `uid` may read `path` itself (and list and enter it, for a folder) by its
    permission bits; the folders above it do not matter inside the sandbox."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if st.st_uid == uid:
        bits = st.st_mode >> 6
    elif st.st_gid == gid:
        bits = st.st_mode >> 3
    else:
        bits = st.st_mode
    need = 5 if os.path.isdir(path) else 4
    return bits & need == need


def _reachable(path: str, uid: int, gid: int) -> bool:
    """Whether `uid` may look up `path` itself: every folder above it lets it through
    (else the launcher stages it for bubblewrap, which looks it up as that user)."""
    folder = os.path.dirname(path)
    while True:
        try:
            st = os.stat(folder)
        except OSError:
            return False
        bits = (st.st_mode >> 6 if st.st_uid == uid else
                st.st_mode >> 3 if st.st_gid == gid else st.st_mode)  # fmt: skip
        if not bits & 1:
            return False
        if folder == "/":
            return os.path.lexists(path)
        folder = os.path.dirname(folder)


def unreadable(engine_view: View) -> list[Bind]:
    """The engine's own program folder, cwd and `read` paths that the user it runs as
    cannot read (it is not the harness's user when the harness runs as root)."""
    uid, gid = engine_ids()
    if uid == os.getuid():
        return []
    return [b for b in engine_view.binds if b.why in ("program", "cwd", "read")
            and not _readable(b.path, uid, gid)]  # fmt: skip


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
            return (f"; the sandbox refused it {path!r}: the engine runs as uid {uid}; make"
                    " it readable by that user (chmod o+r, and o+x on its folders)")  # fmt: skip
        return (f"; under the sandbox it could not open {path!r}: a sandboxed engine reads"
                " only its program's folder, its cwd, the files its arguments name and"
                f" its definition's `read` paths; add read = [\"{path}\"] to its"
                " definition if it needs that path")  # fmt: skip
    return ""


def _account(uid: int, gid: int) -> tuple[bytes, bytes]:
    """/etc/passwd and /etc/group for the sandbox: root, nobody and the engine's user,
    with no home folders, no shells and nothing of the host's other accounts."""
    users = {0: ("root", 0), ENGINE_UID: ("nobody", ENGINE_GID), uid: ("engine", gid)}
    groups = {0: "root", ENGINE_GID: "nogroup", gid: "engine"}
    passwd = "".join(f"{name}:x:{u}:{g}::{SCRATCH}:/usr/sbin/nologin\n"
                     for u, (name, g) in users.items())  # fmt: skip
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
        function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                             ctypes.c_ulong, ctypes.c_char_p]  # fmt: skip
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
    check(mount(b"tmpfs", _STAGE.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                b"mode=0755,size=256k"), "mount tmpfs")  # fmt: skip
    for number, (fd, (_, folder)) in enumerate(zip(fds, staged, strict=True)):
        target = f"{_STAGE}/{number}"
        if folder:
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        check(mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None,
                    _MS_BIND | _MS_REC, None), f"bind {target}")  # fmt: skip
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
        options += ["--perms", "0644", "--ro-bind-data", str(fds[0]), "/etc/passwd",
                    "--perms", "0644", "--ro-bind-data", str(fds[1]), "/etc/group"]  # fmt: skip
        size = str(disk_mb * 1024 * 1024)
        options += [
            "--dev", "/dev",
            # /dev is a tmpfs of its own: only its shm folder stays writable, and small.
            "--size", str(SHM_MB * 1024 * 1024), "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev",
            "--proc", "/proc",
            "--size", size, "--perms", "1777", "--tmpfs", SCRATCH,
        ]  # fmt: skip
        # Staging mounts a tmpfs on the launcher's /tmp, which hides the host's: once
        # anything is staged, what the engine needs from under /tmp is staged too.
        staging = launch.drop is not None and any(
            not _reachable(b.path, uid, gid) for b in engine_view.binds)  # fmt: skip
        for bind in engine_view.binds:  # after the scratch tmpfs: a venv may be under /tmp
            source = bind.path
            if staging and (not _reachable(bind.path, uid, gid)
                            or _within(bind.path, _STAGE)):  # fmt: skip
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
        "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
        "--setenv", "TMPDIR", SCRATCH, "--setenv", "HOME", SCRATCH,
        "--chdir", engine_view.start,
    ]  # fmt: skip
    launch.argv = [program, *options, "--", *argv]
    return launch


@cache
def _system_options() -> tuple[str, ...]:
    """Binds of the system folders, the needed parts of /etc and the CPU topology."""
    options: list[str] = []
    etc = [os.path.join("/etc", name) for name in ETC]
    with contextlib.suppress(OSError):
        etc += sorted(os.path.join("/etc", n) for n in os.listdir("/etc")
                      if any(fnmatch.fnmatch(n, p) for p in ETC_PATTERNS))  # fmt: skip
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
    return {k: v for k, v in host.items()
            if k in _ENVIRONMENT or k.startswith(("LC_", "ARBITER_"))}  # fmt: skip


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


# -- cgroups ------------------------------------------------------------------------------


@dataclass
class Cgroups:
    """The cgroup folders holding one engine: one on cgroup v2, one per controller on v1."""

    memory: Path | None = None
    pids: Path | None = None
    version: int = 2

    @property
    def folders(self) -> list[Path]:
        return list(dict.fromkeys(p for p in (self.memory, self.pids) if p is not None))

    def enter(self) -> None:
        """Move the calling process in: runs in the child between fork and exec."""
        pid = str(os.getpid()).encode()
        for folder in self.folders:
            fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def pids_inside(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(w) for w in (folder / "cgroup.procs").read_text().split())
        return found

    def kill_all(self) -> None:
        """Kill every process still inside, wherever it moved in the process tree."""
        for pid in self.pids_inside() - {0}:  # 0: a process in another pid namespace
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the folders once empty; False if a process is still inside."""
        done = True
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done

    def readings(self) -> dict[str, int]:
        """Counters kept by the kernel: oom kills, peak memory, refused forks, peak pids."""
        out: dict[str, int] = {}
        if self.memory is not None:
            if self.version == 2:
                events = _keyed(self.memory / "memory.events")
                out["oom_kill"] = events.get("oom_kill", 0)
                peak = _number(self.memory / "memory.peak")
            else:
                out["oom_kill"] = _keyed(self.memory / "memory.oom_control").get("oom_kill", 0)
                peak = _number(self.memory / "memory.max_usage_in_bytes")
            if peak is not None:
                out["memory_peak_mb"] = peak // (1024 * 1024)
        if self.pids is not None:
            out["pids_refused"] = _keyed(self.pids / "pids.events").get("max", 0)
            peak = _number(self.pids / "pids.peak")
            if peak is not None:
                out["pids_peak"] = peak
        return out


def _keyed(path: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) == 2 and words[1].isdigit():
                found[words[0]] = int(words[1])
    return found


def _number(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _own_cgroups(table: str) -> dict[str, str]:
    """This process's cgroup path per controller (v1) or under "" (v2), from /proc."""
    paths: dict[str, str] = {}
    for line in table.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            paths[""] = path
        for name in controllers.split(","):
            paths[name] = path
    return paths


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


@cache
def _cgroup_bases() -> tuple[int, Path | None, Path | None]:
    """Where engine cgroups can be made: (version, memory parent, pids parent).

    On v2 that is our own cgroup if it delegates the memory and pids controllers to its
    children; on v1, our place in each controller's own hierarchy. Found once.
    """
    try:
        table = Path("/proc/self/cgroup").read_text()
    except OSError:
        return 2, None, None
    own = _own_cgroups(table)
    if (_CGROUP_ROOT / "cgroup.controllers").exists() and "" in own:
        base = _CGROUP_ROOT / own[""].lstrip("/")
        try:
            delegated = set((base / "cgroup.subtree_control").read_text().split())
        except OSError:
            return 2, None, None
        if not _writable(base):
            return 2, None, None
        return (2, base if "memory" in delegated else None,
                base if "pids" in delegated else None)  # fmt: skip
    bases: list[Path | None] = []
    for controller in ("memory", "pids"):
        folder = _CGROUP_ROOT / controller / own.get(controller, "/").lstrip("/")
        bases.append(folder if controller in own and _writable(folder) else None)
    return 1, bases[0], bases[1]


def cgroup_support() -> set[str]:
    """The limits a cgroup can enforce here: some of {"memory", "processes"}."""
    _, memory, pids = _cgroup_bases()
    return {name for name, base in (("memory", memory), ("processes", pids)) if base}


_serial = itertools.count()


def make_cgroups(limits: Limits) -> Cgroups | None:
    """Fresh cgroup folders for one engine with its memory and process limits, or None
    when neither is asked for or the host has no writable cgroup for them."""
    version, memory_base, pids_base = _cgroup_bases()
    want_memory = limits.memory_mb is not None and memory_base is not None
    want_pids = limits.processes is not None and pids_base is not None
    if not (want_memory or want_pids):
        return None
    name = f"{_PREFIX}{os.getpid()}-{next(_serial)}"
    groups = Cgroups(version=version)
    try:
        if want_memory:
            assert memory_base is not None and limits.memory_mb is not None
            _sweep(memory_base)
            groups.memory = _make(memory_base / name)
            size = str(limits.memory_mb * 1024 * 1024)
            if version == 2:
                (groups.memory / "memory.max").write_text(size)
                with contextlib.suppress(OSError):
                    (groups.memory / "memory.swap.max").write_text("0")
            else:
                (groups.memory / "memory.limit_in_bytes").write_text(size)
                with contextlib.suppress(OSError):
                    (groups.memory / "memory.memsw.limit_in_bytes").write_text(size)
        if want_pids:
            assert pids_base is not None and limits.processes is not None
            _sweep(pids_base)
            groups.pids = _make(pids_base / name)
            (groups.pids / "pids.max").write_text(str(limits.processes))
    except OSError:
        groups.remove()
        raise
    return groups


def _make(folder: Path) -> Path:
    if folder.exists():  # a pid reused after an earlier harness died: it is stale
        _clear(folder)
    folder.mkdir()
    return folder


def _sweep(base: Path) -> None:
    """Remove cgroups left by harness processes that died without cleaning up."""
    with contextlib.suppress(OSError):
        for folder in base.glob(f"{_PREFIX}*-*"):
            owner = folder.name[len(_PREFIX) :].split("-")[0]
            if owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
                _clear(folder)


def _clear(folder: Path) -> None:
    groups = Cgroups(memory=folder)
    groups.kill_all()
    with contextlib.suppress(OSError):
        folder.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- putting it together ------------------------------------------------------------------


@dataclass
class Confinement:
    """How one engine process is started and later judged."""

    argv: list[str]
    sandboxed: bool
    limits: Limits
    cgroups: Cgroups | None = None
    launch: Launch | None = None  # the sandbox's set-up, when sandboxed
    view: View | None = None  # what the sandboxed engine sees of the host

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """Descriptors bubblewrap reads (the sandbox's /etc/passwd and /etc/group)."""
        return self.launch.pass_fds if self.launch is not None else ()

    def preexec(self) -> Callable[[], None] | None:
        """What the child does between fork and exec: set rlimits, enter its cgroups,
        and for a sandbox started by root, stage its folders and drop to its user."""
        rlimits = _rlimits(self.limits, memory_by_cgroup=bool(self.cgroups and self.cgroups.memory))
        groups = self.cgroups
        apply: Callable[[], None] | None = None
        if rlimits or groups is not None:

            def apply() -> None:
                for which, value in rlimits:
                    resource.setrlimit(which, value)
                if groups is not None:
                    groups.enter()  # as root still: the cgroup is root's

        return self.launch.preexec(apply) if self.launch is not None else apply

    def started(self) -> None:
        """Close this process's copies of what the child was given (after the start)."""
        if self.launch is not None:
            self.launch.close()

    def breach(self, returncode: int | None) -> Breach | None:
        """The limit this engine hit, where it can be known: kernel counters of its
        cgroups, or the signal an rlimit sends."""
        readings = self.cgroups.readings() if self.cgroups is not None else {}
        sig = signal_of(returncode, self.sandboxed) if returncode is not None else None
        limits = self.limits
        if readings.get("oom_kill", 0) > 0:
            return Breach("memory", f"killed for using more than its {limits.memory_mb} MB"
                          " memory limit", {"limit_mb": limits.memory_mb, **readings})  # fmt: skip
        if sig == signal.SIGXCPU and limits.cpu_s is not None:
            return Breach("cpu", f"used its {limits.cpu_s} s CPU limit",
                          {"limit_s": limits.cpu_s, **readings})  # fmt: skip
        if sig == signal.SIGXFSZ and limits.disk_mb is not None:
            return Breach("disk", f"wrote a file larger than its {limits.disk_mb} MB disk"
                          " limit", {"limit_mb": limits.disk_mb, **readings})  # fmt: skip
        if readings.get("pids_refused", 0) > 0:
            return Breach("processes", f"tried to run more than {limits.processes} processes"
                          " at once", {"limit": limits.processes, **readings})  # fmt: skip
        return None

    def release(self) -> bool:
        """Kill what is left in its cgroups and remove them (after the engine is reaped);
        False while a killed process is still on its way out (try again)."""
        self.started()
        if self.cgroups is None:
            return True
        self.cgroups.kill_all()
        return self.cgroups.remove()


def _rlimits(limits: Limits, *, memory_by_cgroup: bool) -> list[tuple[int, tuple[int, int]]]:
    out: list[tuple[int, tuple[int, int]]] = []
    if limits.memory_mb is not None and not memory_by_cgroup:
        size = limits.memory_mb * 1024 * 1024
        out.append((resource.RLIMIT_AS, (size, size)))
    if limits.cpu_s is not None:
        # SIGXCPU at the limit, SIGKILL a second later for a process that ignores it.
        out.append((resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1)))
    if limits.disk_mb is not None:
        size = limits.disk_mb * 1024 * 1024
        out.append((resource.RLIMIT_FSIZE, (size, size)))
    return out


def sandbox_defaults() -> Limits:
    """SANDBOX_DEFAULTS, less those this host cannot enforce without side effects (an
    address-space cap would break JVM and Go engines that set no memory limit)."""
    cgroups = cgroup_support()
    return Limits(
        memory_mb=SANDBOX_DEFAULTS["memory_mb"] if "memory" in cgroups else None,
        processes=SANDBOX_DEFAULTS["processes"] if "processes" in cgroups else None,
        disk_mb=SANDBOX_DEFAULTS["disk_mb"],
    )


def remove_cgroups_of(owner: int) -> int:
    """Kill what is left in the cgroups a dead harness process made, and remove them;
    how many are still there (a killed process not yet finished holds its cgroup)."""
    _, memory, pids = _cgroup_bases()
    left = 0
    for base in (memory, pids):
        if base is not None:
            with contextlib.suppress(OSError):
                for folder in base.glob(f"{_PREFIX}{owner}-*"):
                    _clear(folder)
                    left += folder.exists()
    return left


def unenforceable(limits: Limits) -> str | None:
    """Why this host cannot enforce these limits, or None."""
    if limits.processes is not None and "processes" not in cgroup_support():
        return ("the processes limit needs a writable cgroup (pids controller), and none is"
                " available to this user here")  # fmt: skip
    return None


def check_limits(limits: Limits, where: str) -> None:
    """Refuse limits this host cannot enforce, before any game."""
    reason = unenforceable(limits)
    if reason is not None:
        raise ConfigError(
            reason, where=where,
            hint="run as a user with a delegated cgroup (e.g. under 'systemd-run --user"
            " --scope -p Delegate=yes') or remove the processes limit",
        )  # fmt: skip


def confine(argv: Iterable[str], *, sandbox: bool, limits: Limits, hidden: Iterable[str] = (),
            cwd: str | None = None, cwd_given: bool = False, read: Iterable[str] = ()
            ) -> Confinement:  # fmt: skip
    """The command and set-up for one engine process; makes its cgroups (release them)."""
    argv = list(argv)
    # Checked before any game where the run starts; here again for engines started on
    # other machines (Dask workers), which may lack what the driver's machine has.
    if sandbox and (reason := unavailable()) is not None:
        raise OSError(reason)
    if (reason := unenforceable(limits)) is not None:
        raise OSError(reason)
    launch = engine_view = None
    if sandbox:
        limits = limits.merged(sandbox_defaults())
        engine_view = view(argv, cwd, cwd_given=cwd_given, read=read)
        refused = unreadable(engine_view)
        if refused:
            raise OSError(unreadable_message(refused[0]))
        launch = _launch(list(engine_view.argv), engine_view,
                         limits.disk_mb or DEFAULT_DISK_MB, hidden)  # fmt: skip
        argv = launch.argv
    try:
        groups = make_cgroups(limits) if limits else None
    except BaseException:
        if launch is not None:
            launch.close()
        raise
    return Confinement(argv=argv, sandboxed=sandbox, limits=limits, cgroups=groups,
                       launch=launch, view=engine_view)  # fmt: skip


def unreadable_message(bind: Bind) -> str:
    """Why an engine cannot run from a path its user may not read, and the fix."""
    uid, _ = engine_ids()
    what = {"program": "its program folder", "cwd": "its cwd",
            "read": "its read path"}.get(bind.why, "its path")  # fmt: skip
    return (
        f"{what} {bind.path!r} cannot be read by uid {uid}, the unprivileged user a"
        " sandboxed engine runs as when the harness runs as root; make it readable by"
        f" others (chmod o+rX {bind.path}) or run the harness as an ordinary user"
    )


def shared_folders(views: dict[str, View]) -> list[str]:
    """Warnings for sandboxed engines that can read each other's files: one's own
    folder (program folder, cwd, read path or a file its arguments name) holds
    another's."""
    found: list[str] = []
    names = list(views)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            shared = [
                outer for a, b in ((first, second), (second, first))
                for outer in views[a].paths(own_only=True)
                if any(_within(inner, outer) for inner in views[b].paths(own_only=True))
            ]  # fmt: skip
            if shared:
                found.append(
                    f"sandboxed engines {first!r} and {second!r} both read {shared[0]}, so"
                    " each can read the other's files there; give each engine a folder of"
                    " its own to keep them apart"
                )
    return found
