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

One job per module: `limits` (the values), `files` (the file view), `bubblewrap` (the
command line that enforces it), `cgroups` (kernel limits and counters) and `confine`
(putting them together). This package keeps the names the rest of the harness imports.
"""

from __future__ import annotations

from arbiter.engines.sandbox.bubblewrap import (
    environment,
    refusal,
    require,
    sandbox_death,
    signal_of,
    unavailable,
)
from arbiter.engines.sandbox.cgroups import Cgroups, cgroup_support, make_cgroups, remove_cgroups_of
from arbiter.engines.sandbox.confine import (
    Confinement,
    check_limits,
    confine,
    sandbox_defaults,
    unenforceable,
)
from arbiter.engines.sandbox.files import (
    ENGINE_GID,
    ENGINE_UID,
    SCRATCH,
    Bind,
    View,
    engine_ids,
    shared_folders,
    unreadable,
    unreadable_message,
    view,
)
from arbiter.engines.sandbox.limits import (
    DEFAULT_DISK_MB,
    LIMIT_KEYS,
    LIMIT_MAX,
    MIN_PROCESSES,
    SANDBOX_DEFAULTS,
    Breach,
    Limits,
    parse_limits,
)

__all__ = [
    "DEFAULT_DISK_MB",
    "ENGINE_GID",
    "ENGINE_UID",
    "LIMIT_KEYS",
    "LIMIT_MAX",
    "MIN_PROCESSES",
    "SANDBOX_DEFAULTS",
    "SCRATCH",
    "Bind",
    "Breach",
    "Cgroups",
    "Confinement",
    "Limits",
    "View",
    "cgroup_support",
    "check_limits",
    "confine",
    "engine_ids",
    "environment",
    "make_cgroups",
    "parse_limits",
    "refusal",
    "remove_cgroups_of",
    "require",
    "sandbox_death",
    "sandbox_defaults",
    "shared_folders",
    "signal_of",
    "unavailable",
    "unenforceable",
    "unreadable",
    "unreadable_message",
    "view",
]
