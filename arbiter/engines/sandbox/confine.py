"""Putting the sandbox together: one engine's command line, its rlimits and cgroups,
and afterwards the limit it broke. `process.py` calls `confine()` when it starts an engine
and asks `Confinement.breach()` when an engine fails."""

from __future__ import annotations

import resource
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from arbiter.engines.sandbox.bubblewrap import (
    Launch,
    _launch,
    signal_of,
    unavailable,
)
from arbiter.engines.sandbox.cgroups import (
    Cgroups,
    cgroup_support,
    make_cgroups,
)
from arbiter.engines.sandbox.files import (
    View,
    unreadable,
    unreadable_message,
    view,
)
from arbiter.engines.sandbox.limits import (
    DEFAULT_DISK_MB,
    SANDBOX_DEFAULTS,
    Breach,
    Limits,
    _rlimits,
)
from arbiter.errors import ConfigError


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
            return Breach(
                "memory",
                f"killed for using more than its {limits.memory_mb} MB memory limit",
                {"limit_mb": limits.memory_mb, **readings},
            )
        if sig == signal.SIGXCPU and limits.cpu_s is not None:
            return Breach(
                "cpu", f"used its {limits.cpu_s} s CPU limit", {"limit_s": limits.cpu_s, **readings}
            )
        if sig == signal.SIGXFSZ and limits.disk_mb is not None:
            return Breach(
                "disk",
                f"wrote a file larger than its {limits.disk_mb} MB disk limit",
                {"limit_mb": limits.disk_mb, **readings},
            )
        if readings.get("pids_refused", 0) > 0:
            return Breach(
                "processes",
                f"tried to run more than {limits.processes} processes at once",
                {"limit": limits.processes, **readings},
            )
        return None

    def release(self) -> bool:
        """Kill what is left in its cgroups and remove them (after the engine is reaped);
        False while a killed process is still on its way out (try again)."""
        self.started()
        if self.cgroups is None:
            return True
        self.cgroups.kill_all()
        return self.cgroups.remove()


def sandbox_defaults() -> Limits:
    """SANDBOX_DEFAULTS, less those this host cannot enforce without side effects (an
    address-space cap would break JVM and Go engines that set no memory limit)."""
    cgroups = cgroup_support()
    return Limits(
        memory_mb=SANDBOX_DEFAULTS["memory_mb"] if "memory" in cgroups else None,
        processes=SANDBOX_DEFAULTS["processes"] if "processes" in cgroups else None,
        disk_mb=SANDBOX_DEFAULTS["disk_mb"],
    )


def unenforceable(limits: Limits) -> str | None:
    """Why this host cannot enforce these limits, or None."""
    if limits.processes is not None and "processes" not in cgroup_support():
        return (
            "the processes limit needs a writable cgroup (pids controller), and none is"
            " available to this user here"
        )
    return None


def check_limits(limits: Limits, where: str) -> None:
    """Refuse limits this host cannot enforce, before any game."""
    reason = unenforceable(limits)
    if reason is not None:
        raise ConfigError(
            reason,
            where=where,
            hint="run as a user with a delegated cgroup (e.g. under 'systemd-run --user"
            " --scope -p Delegate=yes') or remove the processes limit",
        )


def confine(
    argv: Iterable[str],
    *,
    sandbox: bool,
    limits: Limits,
    hidden: Iterable[str] = (),
    cwd: str | None = None,
    cwd_given: bool = False,
    read: Iterable[str] = (),
) -> Confinement:
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
        launch = _launch(
            list(engine_view.argv), engine_view, limits.disk_mb or DEFAULT_DISK_MB, hidden
        )
        argv = launch.argv
    try:
        groups = make_cgroups(limits) if limits else None
    except BaseException:
        if launch is not None:
            launch.close()
        raise
    return Confinement(
        argv=argv, sandboxed=sandbox, limits=limits, cgroups=groups, launch=launch, view=engine_view
    )
