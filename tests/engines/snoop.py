#!/usr/bin/env python3
"""A snooping engine: reports what it could read, then plays like the skeleton.

Dependency-free apart from a copy of arbiter/bots/skeleton.py beside it (copy both into a
folder of its own), so that it runs from any interpreter and any folder, as a student's bot would.

SNOOP_TARGETS (os.pathsep-separated, in the environment so that no target is an
argument, which the sandbox would let it read) are the paths it tries; for each it
writes "snoop read PATH: FIRST-LINE" or "snoop refused PATH: REASON" on stderr, then
tries to create each of SNOOP_WRITES ("snoop wrote PATH: ok" or "snoop unwritten
PATH: REASON"), then writes its uid, gid and working folder and the names in its
environment, and at its first genmove it exits with status 3, so that all it said ends
up in the evidence of the game it loses by crash.

SNOOP_REQUIRE names a file it cannot start without (its weights): it opens it before
anything else and dies with Python's own error when it cannot.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import skeleton  # noqa: E402

if os.environ.get("SNOOP_REQUIRE"):
    with open(os.environ["SNOOP_REQUIRE"], "rb") as weights:
        skeleton.log(f"snoop loaded {len(weights.read())} bytes of weights")


def snoop():
    for path in filter(None, os.environ.get("SNOOP_TARGETS", "").split(os.pathsep)):
        try:
            with open(path, "rb") as handle:
                first = handle.read(200).split(b"\n")[0].decode("utf-8", "replace")
            skeleton.log(f"snoop read {path}: {first}")
        except OSError as exc:
            skeleton.log(f"snoop refused {path}: {exc.strerror}")
    for path in filter(None, os.environ.get("SNOOP_WRITES", "").split(os.pathsep)):
        try:
            with open(path, "w") as handle:
                handle.write("snooped\n")
            skeleton.log(f"snoop wrote {path}: ok")
        except OSError as exc:
            skeleton.log(f"snoop unwritten {path}: {exc.strerror}")
    with open("/proc/self/status") as status:
        ids = {
            line.split(":")[0]: line.split()[1]
            for line in status
            if line.startswith(("Uid:", "Gid:"))
        }
    skeleton.log(f"snoop uid {ids['Uid']} gid {ids['Gid']} cwd {os.getcwd()}")
    skeleton.log(f"snoop environ {' '.join(sorted(os.environ))}")


def report_then_crash(game):
    sys.stderr.flush()
    os._exit(3)


if __name__ == "__main__":
    snoop()
    sys.exit(skeleton.Bot(report_then_crash).run())
