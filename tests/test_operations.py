"""The run against an unlucky operator: a rebuilt engine, a harness that is paused, outputs
that close, signals, and limits of the harness's own. Faults are injected on real
processes through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from processes import wait_until

ROOT = Path(__file__).resolve().parent.parent
BADBOT = ROOT / "tests" / "engines" / "badbot.py"
RANDOM_BOT = ROOT / "engines" / "random_bot.py"


def arbiter(*args: str, cwd: Path = ROOT, timeout: float = 180,
            **kwargs: object) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "arbiter", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        **kwargs,  # type: ignore[call-overload]
    )  # fmt: skip


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute(sql).fetchall()


def two_bots(folder: Path, header: str = "rounds = 1") -> Path:
    """A tournament of two copies of the random bot, each from its own script."""
    lines = ['[tournament]\nname = "t"\nsize = 7\ntc = "10+0.1"\n' + header]
    for name in ("a", "b"):
        script = folder / f"{name}_bot.py"
        shutil.copy(RANDOM_BOT, script)
        lines.append(f'[[engine]]\nname = "{name}"\n'
                     f'command = {json.dumps([sys.executable, str(script)])}\n'
                     f'env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}\n')  # fmt: skip
    path = folder / "t.toml"
    path.write_text("\n".join(lines))
    return path


# -- a rebuilt engine -------------------------------------------------------------------


def test_a_rebuilt_engine_is_refused_on_resume_unless_accepted(tmp_path: Path) -> None:
    t = two_bots(tmp_path)
    done = arbiter("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    store = tmp_path / "t.sqlite"
    assert rows(store, "SELECT COUNT(*) FROM games") == [(2,)]
    # A new build at the same path, and one more round to play.
    script = tmp_path / "a_bot.py"
    script.write_text(script.read_text() + "\n# build 2\n")
    t.write_text(t.read_text().replace("rounds = 1", "rounds = 2"))
    before = store.read_bytes()
    refused = arbiter("tournament", "run", str(t), "-q")
    assert refused.returncode == 2, refused.stderr
    message = refused.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "the script of engine 'a' changed since the store t.sqlite was started" in message
    assert "--fresh" in message and "new name" in message and "--rebuilt a" in message
    assert store.read_bytes() == before  # refused before anything was written
    # A changed dialect is a changed engine too.
    t.write_text(t.read_text().replace('name = "b"\n', 'name = "b"\nswap = "swap-pieces"\n'))
    changed = arbiter("tournament", "run", str(t), "-q", "--rebuilt", "a")
    assert changed.returncode == 2 and "engine 'b'.dialect" in changed.stderr, changed.stderr
    t.write_text(t.read_text().replace('swap = "swap-pieces"\n', ""))
    wrong = arbiter("tournament", "run", str(t), "-q", "--rebuilt", "c")
    assert wrong.returncode == 2 and "--rebuilt names c" in wrong.stderr
    accepted = arbiter("tournament", "run", str(t), "-q", "--rebuilt", "a")
    assert accepted.returncode == 0, accepted.stderr
    assert rows(store, "SELECT COUNT(*) FROM games") == [(4,)]
    (change,) = json.loads(str(rows(store, "SELECT value FROM meta WHERE key='rebuilds'")[0][0]))
    assert change["engine"] == "a" and change["script_sha256"][0] != change["script_sha256"][1]
    # Accepted once: the next run takes the new build as the engine's own.
    t.write_text(t.read_text().replace("rounds = 2", "rounds = 3"))
    again = arbiter("tournament", "run", str(t), "-q")
    assert again.returncode == 0, again.stderr
