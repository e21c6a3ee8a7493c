"""Suite-wide: the end-to-end layer is slow but for its smoke tests, and no process
started by a test may outlive the test session.

Every process the tests start inherits a marker in its environment; at the end of the
session any process still carrying it a few seconds later is a leak, reported as an
error. (A harness's watchdog outlives its harness by design, until it has read the end of
its input and killed what it guards: the last test's may still be finishing.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import running, wait_until

# pytest keeps each test module as it rewrote it for its assertions in __pycache__, but
# not where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE): then
# every worker of every run rewrites all the test modules again, about 6 CPU-seconds
# each. The test processes write it whatever the environment says (and the bytecode of
# the modules they import, which the programs they start then read); those programs
# keep the environment as it is. __pycache__ is git-ignored.
sys.dont_write_bytecode = False

MARKER = "ARBITER_TEST_SESSION"
# Runs measure the host's speed once (seconds of the reference workload) unless told not
# to: the tests that check the measurement ask for it themselves.
os.environ["ARBITER_CALIBRATE"] = "0"
E2E = Path(__file__).resolve().parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole runs (tests/e2e/) are slow unless marked smoke: the default run keeps the
    unit, process and command-line layers and one cheap whole path of each kind."""
    for item in items:
        if E2E in item.path.parents and item.get_closest_marker("smoke") is None:
            item.add_marker(pytest.mark.slow)


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
    wait_until(lambda: not _marked_processes(token), timeout=5)
    leaked = _marked_processes(token)
    for line in leaked:
        pid = int(line.split(":", 1)[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    assert not leaked, "processes outlived the test session:\n" + "\n".join(leaked)
