"""Resource limits of an engine, as its definition gives them, and the evidence that one
was broken: the values every other part of the sandbox reads, with no system calls."""

from __future__ import annotations

import resource
from dataclasses import asdict, dataclass, field
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
        raise ConfigError(
            f"unknown limit(s) {', '.join(sorted(unknown))}",
            where=where,
            hint=f"known limits: {', '.join(LIMIT_KEYS)}",
        )
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ConfigError(
                f"{key} must be a positive whole number", where=f"{where}.{key}", hint=_LIMITS_HINT
            )
        if number > LIMIT_MAX[key]:
            raise ConfigError(
                f"{key} = {number} is out of range",
                where=f"{where}.{key}",
                hint=f"at most {LIMIT_MAX[key]}; leave the limit out for none",
            )
    if value.get("processes") is not None and value["processes"] < MIN_PROCESSES:
        raise ConfigError(
            f"processes must be at least {MIN_PROCESSES} (the engine, and"
            " bubblewrap and its init in a sandbox)",
            where=f"{where}.processes",
        )
    return Limits(**value)


@dataclass(frozen=True)
class Breach:
    """A limit an engine is known to have hit, and what shows it."""

    limit: str  # one of LIMIT_KEYS without its unit: memory, cpu, processes, disk
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


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
