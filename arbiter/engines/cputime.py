"""The CPU time an engine's whole process tree has used, for clocks that charge CPU time.

Wall time bills an engine for everything else the machine runs. CPU time is what the
kernel accounted to the engine's own processes and threads, whatever else competes for
the cores. Two meters read it:

* `CgroupMeter`: the engine runs in a cgroup of its own (cgroup v2 `cpu.stat`, or the v1
  `cpuacct` controller) and the kernel counts every process that ever ran in it, however
  it left its session or process group, and however it ended. Exact; needs a writable
  cgroup, which not every host gives.
* `TreeMeter`: the kernel's per-process accounting in /proc, for hosts without one. A
  member is any process in the engine's session or process group, any child of a member,
  and any process once seen as a member (a worker that later calls setsid is still
  followed). Its reading is the sum over live members of their own time (every thread)
  plus what the children they reaped left them (cutime and cstime); a child that exited
  and was not yet waited for is a zombie and still counted. What it cannot see: a
  process that starts and escapes the tree (a new session whose parent exits) between two
  readings, and the time between the last reading and the exit of a member that no member
  reaps (an orphan adopted by init or the harness).

Readings are taken when a move starts and when its answer arrives; the charge is the
difference.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from arbiter.engines.sandbox import cgroups

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = Path("/proc")


class CpuMeter(Protocol):
    """Seconds of CPU an engine's processes have used since it started."""

    def seconds(self) -> float: ...

    def release(self) -> bool: ...


@dataclass(frozen=True)
class _Stat:
    pid: int
    ppid: int
    pgrp: int
    session: int
    start: int  # in clock ticks since boot: tells a reused pid from the old one
    own: int  # utime + stime, ticks, every thread
    children: int  # cutime + cstime: what the children it reaped left it


def read_stat(pid: int, proc: Path = _PROC) -> _Stat | None:
    """One process's accounting from /proc/PID/stat, or None if it is gone."""
    try:
        data = (proc / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces and parentheses itself.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return _Stat(
            pid=pid,
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            session=int(fields[3]),
            own=int(fields[11]) + int(fields[12]),
            children=int(fields[13]) + int(fields[14]),
            start=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


@dataclass
class TreeMeter:
    """The CPU of a process tree from /proc (see the module's note on what it misses).

    `leader` is the engine's process, the leader of its own session and group.
    """

    leader: int
    proc: Path = _PROC
    # Per member seen, by (pid, start): its last own and children readings (ticks), and
    # its parent then.
    _own: dict[tuple[int, int], int] = field(default_factory=dict)
    _children: dict[tuple[int, int], int] = field(default_factory=dict)
    _parents: dict[tuple[int, int], int] = field(default_factory=dict)
    # Ticks already charged for members that have gone, by their parent: the parent's
    # children count grows by their whole total when it reaps them; only the rest is new.
    _credit: dict[int, int] = field(default_factory=dict)
    _total: int = 0

    def _members(self) -> list[_Stat]:
        stats: dict[int, _Stat] = {}
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.proc):
                if entry.name.isdigit():
                    stat = read_stat(int(entry.name), self.proc)
                    if stat is not None:
                        stats[stat.pid] = stat
        members = {
            pid
            for pid, s in stats.items()
            if pid == self.leader
            or s.session == self.leader
            or s.pgrp == self.leader
            or (pid, s.start) in self._own
        }
        # Children of members, whatever group or session they moved to.
        grew = True
        while grew:
            grew = False
            for pid, s in stats.items():
                if pid not in members and s.ppid in members:
                    members.add(pid)
                    grew = True
        return [stats[pid] for pid in members]

    def seconds(self) -> float:
        """Seconds of CPU the tree has used since the first reading (which counts all
        that the members had used until then)."""
        now = self._members()
        live = {(s.pid, s.start) for s in now}
        for key in [k for k in self._own if k not in live]:
            parent = self._parents.pop(key)
            gone = self._own.pop(key) + self._children.pop(key)
            self._credit[parent] = self._credit.get(parent, 0) + gone
        for s in now:
            key = (s.pid, s.start)
            own = max(0, s.own - self._own.get(key, 0))
            reaped = max(0, s.children - self._children.get(key, 0))
            credit = self._credit.pop(s.pid, 0)
            used = min(credit, reaped)
            if credit > used:
                self._credit[s.pid] = credit - used
            self._total += own + reaped - used
            self._own[key], self._children[key], self._parents[key] = s.own, s.children, s.ppid
        return self._total / _TICK

    def release(self) -> bool:
        return True


@dataclass
class CgroupMeter:
    """The CPU of everything that ever ran in the engine's own cgroup."""

    folder: Path
    version: int

    def enter(self) -> None:
        """Move the calling process in: runs in the child between fork and exec. A host
        may refuse (cgroup v2's rule against processes in inner cgroups, say): then the
        engine starts all the same, and `holds` tells the harness to read /proc instead."""
        with contextlib.suppress(OSError):
            fd = os.open(self.folder / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)

    def holds(self, pid: int) -> bool:
        """Whether process `pid` is inside (it entered when it started)."""
        try:
            return str(pid) in (self.folder / "cgroup.procs").read_text().split()
        except OSError:
            return False

    def seconds(self) -> float:
        try:
            if self.version == 2:
                for line in (self.folder / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
                return 0.0
            return int((self.folder / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return 0.0

    def release(self) -> bool:
        """Kill what is left inside and remove the folder; False while a process remains."""
        group = cgroups.Cgroups(memory=self.folder, version=self.version)
        group.kill_all()
        return group.remove()


_serial = itertools.count()


def make_cgroup_meter() -> CgroupMeter | None:
    """A fresh cgroup that counts one engine's CPU, or None where the host gives none."""
    base = cgroups.cpu_cgroup_base()
    if base is None:
        return None
    version, folder = base
    name = f"{cgroups.PREFIX}{os.getpid()}-cpu{next(_serial)}"
    try:
        cgroups.sweep(folder)
        made = folder / name
        made.mkdir()
    except OSError:
        return None
    if not (made / ("cpu.stat" if version == 2 else "cpuacct.usage")).exists():
        with contextlib.suppress(OSError):
            made.rmdir()
        return None
    return CgroupMeter(made, version)


def cgroup_available() -> bool:
    """Whether engines here get a cgroup of their own for their CPU time."""
    return cgroups.cpu_cgroup_base() is not None
