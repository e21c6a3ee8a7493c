"""No engine outlives the harness, and nothing an engine starts outlives its game."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from paths import BADBOT, ROOT
from processes import pids_matching, running, wait_until


@pytest.mark.slow
def test_an_engine_that_exits_behind_an_escaped_child_is_charged_a_crash_at_once(
    tmp_path: Path,
) -> None:
    records = tmp_path / "r.jsonl"
    marker = f"esc-{uuid.uuid4().hex[:8]}"
    escaper = f"{sys.executable} {BADBOT} escape --name {marker}"
    good = f"{sys.executable} {BADBOT} ok --name good"
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            escaper,
            good,
            "--games",
            "2",
            "--tc",
            "inf",
            "--records",
            str(records),
            "--json",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 30  # not the 600 s move limit of `inf`
    games = [json.loads(line) for line in records.read_text().splitlines()]
    assert [g["termination"] for g in games] == ["crash", "crash"]
    children = [
        int(line.split()[-1])
        for g in games
        for line in g["evidence"]["stderr_tail"].splitlines()
        if line.startswith("child pid")
    ]
    assert len(children) == 2
    assert wait_until(lambda: not any(running(pid) for pid in children), 10)


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == ancestor:
            return True
    return False


def _kill_harness_mid_match(
    args: list[str], marker: str, ready: Callable[[str, int], bool]
) -> None:
    """Start a match, SIGKILL the harness once `ready` accepts a progress line (given with
    the harness's pid), and check that every engine (the processes whose command line
    holds `marker`) dies with it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "match", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            assert "crash" not in line  # the engines live until the harness dies
            if ready(line, proc.pid):
                break
        engines = [pid for pid in pids_matching(marker) if pid != proc.pid]
        assert len(engines) >= 2
        watchdogs = [
            pid for pid in pids_matching("arbiter.engines.reaper") if _descends(pid, proc.pid)
        ]
        assert watchdogs
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not any(running(pid) for pid in engines)), "engines survived"
        # The watchdog itself goes once its work is done.
        assert wait_until(lambda: not any(running(pid) for pid in watchdogs))
    finally:
        proc.kill()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize(
    ("concurrency", "mode"),
    [
        ("1", "ignore-quit"),
        pytest.param("2", "ignore-quit", marks=pytest.mark.slow),
        ("1", "escape --after 100000"),
    ],
)
def test_engines_die_with_a_harness_killed_by_sigkill(concurrency: str, mode: str) -> None:
    # These engines ignore EOF on stdin (or left a child in a session of its own): only
    # the harness's watchdog can stop them.
    marker = f"kill9-{uuid.uuid4().hex[:8]}"
    stubborn = f"{sys.executable} {BADBOT} {mode} --name {marker}"
    _kill_harness_mid_match(
        [stubborn, stubborn, "--games", "20", "--tc", "60+0", "-c", concurrency],
        marker,
        lambda line, harness: line.startswith("Finished game"),
    )


def test_engines_die_with_the_harness_even_after_its_watchdog_was_killed() -> None:
    marker = f"wd-{uuid.uuid4().hex[:8]}"
    stubborn = f"{sys.executable} {BADBOT} ignore-quit --name {marker}"
    killed: list[int] = []
    finished = 0

    def ready(line: str, harness: int) -> bool:
        nonlocal finished
        if not line.startswith("Finished game"):
            return False
        finished += 1
        if not killed:  # kill the first watchdog; the harness starts a new one
            # Only this harness's: other runs on the machine have watchdogs of their own.
            dogs = [
                pid for pid in pids_matching("arbiter.engines.reaper") if _descends(pid, harness)
            ]
            killed.extend(dogs)
            for pid in dogs:
                os.kill(pid, signal.SIGKILL)
            return False
        return finished >= 3

    _kill_harness_mid_match([stubborn, stubborn, "--games", "20", "--tc", "60+0"], marker, ready)
    assert killed


@pytest.mark.slow  # a long lifetime: 12 s and more
def test_engines_die_with_the_harness_after_a_long_match() -> None:
    """Past the idle time of trio's process-starting threads (10 s): a death signal tied
    to the forking thread would have fired by now and killed the engines mid-match."""
    marker = f"long-{uuid.uuid4().hex[:8]}"
    engine = f"{sys.executable} {BADBOT} slow --ms 30 --name {marker}"
    stubborn = f"{sys.executable} {BADBOT} ignore-quit --name {marker}"
    start = time.monotonic()
    _kill_harness_mid_match(
        [engine, stubborn, "--games", "400", "--tc", "600+0"],
        marker,
        lambda line, harness: line.startswith("Finished game") and time.monotonic() - start > 12,
    )
