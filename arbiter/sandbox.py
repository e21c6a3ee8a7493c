"""Confinement for untrusted engines: a bubblewrap sandbox, resource limits, and the
evidence that names the limit an engine broke.

The sandbox is what makes a leaderboard trustworthy when the engines are other people's
programs. Its own pid namespace (with its own /proc) is what stops an engine from
signalling or ptracing the referee and its opponent, from writing into their pipes through
/proc/PID/fd, and from leaving processes behind; a user namespace alone stops none of that
when the harness runs as root. The file system is the host's, read-only, so interpreters
and the engine's own files work, with a private size-capped tmpfs on /tmp as the only
writable place; the network namespace has no interface but its own loopback.

bubblewrap has no resource limits, so limits are set in the child before it execs and are
inherited: rlimits always, and a cgroup where the host gives us a writable one (that is
what can cap the processes of root, count memory the way the kernel's OOM killer does, and
tell afterwards which limit was hit). Everything here is synchronous; `process.py` applies
it when it starts an engine and asks `breach()` when an engine fails.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

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
    counts reservations too: see the README for JVM and Go engines).
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

    Tried once per process with the namespaces a game uses, so a host that forbids
    unprivileged user namespaces is found before any game, not in the first one.
    """
    program = shutil.which("bwrap")
    if program is None:
        return ("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get"
                " install bubblewrap; Fedora: dnf install bubblewrap) or run without the"
                " sandbox")  # fmt: skip
    try:
        probe = subprocess.run(
            [program, *_bwrap_options(DEFAULT_DISK_MB, ()), "--", "true"],
            capture_output=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be run: {exc}"
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
_MASKED = ("/tmp", "/run")  # host folders replaced by empty ones: sockets live there


def _bwrap_options(disk_mb: int, hidden: Iterable[str], shown: Iterable[str] = ()
                   ) -> list[str]:  # fmt: skip
    size = str(disk_mb * 1024 * 1024)
    options = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        # /dev is a tmpfs of its own: only its shm folder stays writable, and small.
        "--size", str(SHM_MB * 1024 * 1024), "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/sys/fs/cgroup",  # other engines' memory use and the host's pids
        # The host's /tmp and /run hold unix sockets (terminal multiplexers, agents) that
        # a read-only file system does not stop a client from connecting to.
        "--size", size, "--perms", "1777", "--tmpfs", SCRATCH,
    ]  # fmt: skip
    if os.path.isdir("/run"):
        options += ["--tmpfs", "/run"]
    for path in shown:  # what the engine runs from, read-only, even under /tmp
        if any(path.startswith(m + "/") for m in _MASKED) and os.path.exists(path):
            options += ["--ro-bind", path, path]
    for path in hidden:
        if os.path.isdir(path):
            options += ["--tmpfs", path]
        elif os.path.exists(path):
            options += ["--ro-bind", "/dev/null", path]
    # A user namespace of its own even as root, no capabilities at all, and no nested
    # namespaces (which would let it remount, or mount a tmpfs outside every limit).
    # No --die-with-parent: bubblewrap takes the death of the *thread* that started it
    # for its parent's, and trio starts processes from worker threads that come and go.
    # The sandbox lives in the engine's process group instead, which the referee kills
    # after every game and the watchdog kills if the referee dies; its pid namespace
    # goes down with bubblewrap's init, whatever sessions were made inside.
    options += [
        "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
        "--setenv", "TMPDIR", SCRATCH, "--setenv", "HOME", SCRATCH,
    ]  # fmt: skip
    return options


def _needed(argv: list[str], cwd: str) -> list[str]:
    """Host folders the engine runs from: its working folder, its program, files named
    by absolute path in its arguments, and this interpreter's environment (bundled and
    `{python}` engines run on it; a virtual environment may live under /tmp)."""
    found = [cwd, sys.prefix, sys.exec_prefix]
    if os.sep in argv[0]:
        found.append(os.path.dirname(os.path.realpath(os.path.join(cwd, argv[0]))))
    for word in argv[1:]:
        if os.path.isabs(word) and os.path.exists(word):
            found.append(word if os.path.isdir(word) else os.path.dirname(word))
    found += [p for p in sys.path if p and os.path.isabs(p)]
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found.append(package)  # an editable install: the source tree the finder points into
    return list(dict.fromkeys(os.path.normpath(p) for p in found))


def bwrap_argv(argv: list[str], limits: Limits, hidden: Iterable[str] = (),
               cwd: str | None = None) -> list[str]:  # fmt: skip
    """The command line that runs `argv` in the sandbox. `hidden` are host paths (the
    records file, the store) that the engine must not even read."""
    program = shutil.which("bwrap") or "bwrap"
    disk = limits.disk_mb or DEFAULT_DISK_MB
    shown = _needed(argv, os.path.abspath(cwd or os.getcwd()))
    return [program, *_bwrap_options(disk, hidden, shown), "--", *argv]


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
            owner = folder.name[len(_PREFIX):].split("-")[0]
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

    def preexec(self) -> Callable[[], None] | None:
        """What the child does between fork and exec: set rlimits, enter its cgroups."""
        rlimits = _rlimits(self.limits, memory_by_cgroup=bool(self.cgroups and
                                                              self.cgroups.memory))
        groups = self.cgroups
        if not rlimits and groups is None:
            return None

        def apply() -> None:
            for which, value in rlimits:
                resource.setrlimit(which, value)
            if groups is not None:
                groups.enter()

        return apply

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
            cwd: str | None = None) -> Confinement:  # fmt: skip
    """The command and set-up for one engine process; makes its cgroups (release them)."""
    argv = list(argv)
    # Checked before any game where the run starts; here again for engines started on
    # other machines (Dask workers), which may lack what the driver's machine has.
    if sandbox and (reason := unavailable()) is not None:
        raise OSError(reason)
    if (reason := unenforceable(limits)) is not None:
        raise OSError(reason)
    if sandbox:
        limits = limits.merged(sandbox_defaults())
        argv = bwrap_argv(argv, limits, hidden, cwd)
    groups = make_cgroups(limits) if limits else None
    return Confinement(argv=argv, sandboxed=sandbox, limits=limits, cgroups=groups)
