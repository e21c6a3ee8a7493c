"""Suite-wide guard: no process started by a test may outlive the test session.

Every process the tests start inherits a marker in its environment; at the end of the
session any live process still carrying it is a leak, reported as an error.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import running

MARKER = "ARBITER_TEST_SESSION"


def _marked_processes(token: str) -> list[str]:
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if running(int(entry.name)):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_survives() -> Iterator[None]:
    token = uuid.uuid4().hex
    os.environ[MARKER] = token
    yield
    if not Path("/proc/self/environ").exists():
        return
    leaked = _marked_processes(token)
    for line in leaked:
        pid = int(line.split(":", 1)[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    assert not leaked, "processes outlived the test session:\n" + "\n".join(leaked)
