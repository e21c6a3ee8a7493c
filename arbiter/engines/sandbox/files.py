"""The file view of a sandboxed engine: which host paths it sees, read-only, and why.

Of the host's files an engine sees only an allow-list: the system's programs and
libraries, what of /etc programs need to start, its own program folder, its cwd, what its
arguments and its definition's `read` key name, and its interpreter's environment; never
the organiser's folders, other engines' folders or the host's secrets. Deciding that list
is pure path work, kept apart from the bubblewrap command line that enforces it."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import arbiter

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
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "locale.alias",
    "locale.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "protocols",
    "services",
    "mime.types",
    "magic",
    "os-release",
    "lsb-release",
    "debian_version",
    "redhat-release",
    "system-release",
    "ssl/certs",
    "ssl/openssl.cnf",
    "pki/tls/certs",
    "pki/tls/openssl.cnf",
    "pki/ca-trust/extracted",
    "ca-certificates",
    "ca-certificates.conf",
    "crypto-policies/back-ends",
    "fonts",
    "terminfo",
    "perl",
)


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
    with (
        contextlib.suppress(OSError),
        open(os.path.join(root, "pyvenv.cfg"), encoding="utf-8") as handle,
    ):
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
        return [
            sys.prefix,
            sys.exec_prefix,
            sys.base_prefix,
            sys.base_exec_prefix,
            os.path.dirname(os.path.abspath(arbiter.__file__)),
        ]
    roots = {
        r
        for r in (_environment_root(os.path.abspath(program)), _environment_root(real))
        if r is not None
    }
    if not roots and not _in_system(program):
        return None
    found = list(roots)
    found += [b for r in roots if (b := _venv_base(r)) is not None]
    return found


def _locate(word: str, here: str) -> str | None:
    if os.sep in word:
        return os.path.normpath(os.path.join(here, word))
    return shutil.which(word)


def view(
    argv: Iterable[str],
    cwd: str | None = None,
    *,
    cwd_given: bool = False,
    read: Iterable[str] = (),
) -> View:
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
    for bind in sorted(
        dict((b.path, b) for b in reversed(list(binds))).values(),
        key=lambda b: (len(b.path), b.path),
    ):
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
        bits = (
            st.st_mode >> 6
            if st.st_uid == uid
            else st.st_mode >> 3
            if st.st_gid == gid
            else st.st_mode
        )
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
    return [
        b
        for b in engine_view.binds
        if b.why in ("program", "cwd", "read") and not _readable(b.path, uid, gid)
    ]


def unreadable_message(bind: Bind) -> str:
    """Why an engine cannot run from a path its user may not read, and the fix."""
    uid, _ = engine_ids()
    what = {"program": "its program folder", "cwd": "its cwd", "read": "its read path"}.get(
        bind.why, "its path"
    )
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
                outer
                for a, b in ((first, second), (second, first))
                for outer in views[a].paths(own_only=True)
                if any(_within(inner, outer) for inner in views[b].paths(own_only=True))
            ]
            if shared:
                found.append(
                    f"sandboxed engines {first!r} and {second!r} both read {shared[0]}, so"
                    " each can read the other's files there; give each engine a folder of"
                    " its own to keep them apart"
                )
    return found
