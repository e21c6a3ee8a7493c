"""Process helpers shared by the tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from paths import ROOT


def running(pid: int) -> bool:
    """True while `pid` runs: not reaped, and not a zombie waiting for init to reap it.

    This sandbox's init does not reap orphans, so a killed engine's orphaned child can
    stay a zombie; signal 0 still reaches it, but it is dead for our purposes.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll for a condition (not a fixed sleep): True as soon as it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def pids_matching(pattern: str) -> list[int]:
    """Live processes whose command line contains `pattern`."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split() if running(int(p))]


def killed_after_games(tournament: Path, games: int) -> None:
    """Run `arbiter tournament run FILE` and kill it with SIGKILL (no clean-up at all) as
    soon as its progress says `games` games finished: a harness lost mid-run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "tournament", "run", str(tournament)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    finished = 0
    for line in proc.stderr:
        finished += line.startswith("Finished game")
        if finished >= games:
            break
    proc.kill()
    proc.wait()
    proc.stderr.close()
