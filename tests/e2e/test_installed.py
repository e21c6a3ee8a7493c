"""Installed, not checked out: a wheel built from a clean clone, in a fresh virtual
environment, plays and checks the bundled bots from an empty folder once the clone is
gone. Needs the package index (or pip's cache) for the dependencies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# Building and installing take minutes on a busy machine; nothing here can hang.
@pytest.mark.timeout(300)
def test_a_wheel_from_a_clean_clone_plays_from_an_empty_folder(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    clone, dist, venv, empty = (tmp_path / n for n in ("clone", "dist", "venv", "empty"))
    done = _run(["git", "clone", "--quiet", str(ROOT), str(clone)], tmp_path)
    assert done.returncode == 0, done.stderr
    done = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(clone)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = dist.glob("atoll_arbiter-*.whl")
    shutil.rmtree(clone)
    # The environment gets no pip of its own (ensurepip takes seconds): this pip installs
    # into it (--python), where the wheel's dependencies are taken from pip's cache as
    # before. Installed modules are compiled on first import (--no-compile), as only the
    # few this test imports need to be.
    assert (
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path).returncode == 0
    )
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    done = _run([*pip, "install", "-q", "--no-compile", str(wheel)], tmp_path)
    if done.returncode != 0 and "No matching distribution" in done.stderr:
        pytest.skip(f"the dependencies cannot be installed here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    empty.mkdir()
    arbiter = str(venv / "bin" / "arbiter")
    python = str(venv / "bin" / "python")

    where = _run([python, "-c", "import arbiter; print(arbiter.__file__)"], empty)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout

    # A short clock: the installed bots play whole games; their strength is not the point.
    match = _run([arbiter, "match", "random", "mcts", "-n", "2", "--tc", "3+0.1", "--json"], empty)
    assert match.returncode == 0, match.stderr
    summary = json.loads(match.stdout)
    assert summary["games"] == 2 and summary["void"] == 0, summary
    assert set(summary["terminations"]) <= {"connection", "resign"}, summary

    check = _run([arbiter, "check", "heuristic"], empty)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all required checks passed" in check.stdout

    assert _run([arbiter, "new", "bot", "my_bot.py"], empty).returncode == 0
    mine = _run([arbiter, "check", "--json", f"my_bot={python} my_bot.py"], empty)
    assert mine.returncode == 0, mine.stdout + mine.stderr

    listed = json.loads(_run([arbiter, "engines", "--json"], empty).stdout)
    assert {"random", "heuristic", "mcts", "mc", "mc-fast"} <= {r["name"] for r in listed}
    alone = _run([python, "-m", "arbiter.bots.mcts_bot", "--help"], empty)
    assert alone.returncode == 0 and "--" in alone.stdout

    status = _run([arbiter, "tournament", "status", "--example", "demo"], empty)
    assert status.returncode == 0 and str(empty / "demo.sqlite") in status.stdout
    assert sorted(p.name for p in empty.iterdir()) == ["my_bot.py"]
