"""Warm engines: a pool of engines starts each engine about once per slot, through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BADBOT = ROOT / "tests" / "engines" / "badbot.py"


def logged_pool(folder: Path, engines: int, header: str) -> tuple[Path, Path]:
    """A round-robin of `engines` test bots, each behind a wrapper that notes every start
    (the engine's key and the process that started it) in a log."""
    log = folder / "starts.log"
    wrapper = folder / "logged.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$1 $PPID" >> "{log}"\nshift\nexec "$@"\n')
    wrapper.chmod(0o755)
    tables = []
    for i in range(engines):
        argv = [str(wrapper), f"e{i}", sys.executable, str(BADBOT), "ok", "--name", f"bot{i}"]
        tables.append(f'[[engine]]\nname = "e{i}"\ncommand = {json.dumps(argv)}\n')
    path = folder / "pool.toml"
    path.write_text(f'[tournament]\nname = "pool"\n{header}\n\n' + "\n".join(tables))
    return path, log


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arbiter", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_pool_starts_each_engine_at_most_once_per_slot(tmp_path: Path) -> None:
    engines = 6
    header = 'rounds = 1\nconcurrency = 2\ntc = "10+0.1"\nsize = 7\nseed = 3'
    path, log = logged_pool(tmp_path, engines, header)
    done = run("tournament", "run", str(path), "-q")
    assert done.returncode == 0, done.stderr
    starts = log.read_text().split("\n")[:-1]
    # Every start is a different (engine, starting process) pair: the preflight starts
    # each engine once in the harness, and each of the two worker processes then keeps
    # whatever it started for the rest of the run (a pool of 6 fits a slot's budget).
    assert len(starts) == len(set(starts)), Counter(starts).most_common(3)
    by_process = Counter(line.split()[1] for line in starts)
    assert len(by_process) == 3  # the harness (preflight) and two worker processes
    assert len(starts) <= engines * 3
    status = json.loads(run("tournament", "status", str(path), "--json").stdout)
    games = engines * (engines - 1)
    assert status["done"] == games and status["voids"] == [], status
    # The store counts the starts for games (the preflight's are not the games' cost),
    # and `status` shows them to the organiser.
    counted = status["engine_starts"]
    assert counted["count"] == len(starts) - engines and counted["seconds"] > 0
    assert counted["per_game"] == round(counted["count"] / games, 3)
    shown = run("tournament", "status", str(path)).stdout
    assert f"Engines were started {counted['count']} times" in shown
