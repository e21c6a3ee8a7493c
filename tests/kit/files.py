"""Tournament files of test engines, written for one test's folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from paths import BADBOT


def bot(name: str, mode: str = "ok", *extra: str) -> str:
    """An [[engine]] table of the test bot in `mode`, answering `name` as reply-NAME."""
    argv = [sys.executable, str(BADBOT), mode, "--name", f"reply-{name}", *extra]
    return f"[[engine]]\nname = {json.dumps(name)}\ncommand = {json.dumps(argv)}\n"


def write_tournament(folder: Path, header: str, engines: list[str], name: str = "t") -> Path:
    """NAME.toml in `folder`: a [tournament] with `header`, then the engine tables."""
    path = folder / f"{name}.toml"
    path.write_text(f'[tournament]\nname = "{name}"\n{header}\n' + "\n".join(engines))
    return path


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
