"""Cgroups for engines: where the host gives us a writable one, it caps the processes of
root, counts memory the way the kernel's OOM killer does, and tells afterwards which limit
was hit. Everything here reads and writes files under /sys/fs/cgroup, synchronously."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from arbiter.engines.sandbox.limits import (
    Limits,
)

_CGROUP_ROOT = Path("/sys/fs/cgroup")


_PREFIX = "arbiter-"


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
        return (2, base if "memory" in delegated else None, base if "pids" in delegated else None)
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


PREFIX = _PREFIX
sweep = _sweep


@cache
def cpu_cgroup_base() -> tuple[int, Path] | None:
    """Where a cgroup that counts one engine's CPU can be made: (version, parent), or
    None. On v2 every cgroup has cpu.stat, so our own cgroup, if writable, will do; on v1
    our place in the cpuacct hierarchy."""
    try:
        own = _own_cgroups(Path("/proc/self/cgroup").read_text())
    except OSError:
        return None
    if (_CGROUP_ROOT / "cgroup.controllers").exists() and "" in own:
        base = _CGROUP_ROOT / own[""].lstrip("/")
        return (2, base) if _writable(base) else None
    if "cpuacct" in own:
        for mount in ("cpuacct", "cpu,cpuacct"):
            base = _CGROUP_ROOT / mount / own["cpuacct"].lstrip("/")
            if _writable(base) and (base / "cpuacct.usage").exists():
                return 1, base
    return None
