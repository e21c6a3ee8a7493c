"""The command line, run in this process: for what a command says and its exit status.

A usage or configuration error is decided before any engine, worker or signal handler
is involved, so click's runner checks it as the `arbiter` program would, without the
second of interpreter start-up a subprocess costs. Tests where the process itself is the
point (signals, closed pipes, kill -9, what reaches which stream of a real program) run
`python -m arbiter` as a subprocess instead.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback

from click.testing import CliRunner
from paths import ROOT

from arbiter import logs
from arbiter.cli import main


def invoke(*args: str, cwd: str | os.PathLike[str] = ROOT) -> subprocess.CompletedProcess[str]:
    """`arbiter ARGS` in this process, answered as `subprocess.run` answers for the program.

    Run from `cwd` (the project root by default, as the subprocess helpers do). Output is
    not stripped of escape sequences, so a test that looks for raw control characters
    sees exactly what the command wrote. An exception the command let escape is put on
    stderr with its traceback, as the interpreter would print it.
    """
    runner = CliRunner()
    try:
        with contextlib.chdir(cwd):
            result = runner.invoke(main, list(args), color=True)
    finally:
        logs.configure(None, 0)  # no handler or environment variable outlives the command
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["arbiter", *args], result.exit_code, result.stdout, stderr)


def arbiter(
    *args: str,
    cwd: str | os.PathLike[str] = ROOT,
    timeout: float = 180,
    env: dict[str, str] | None = None,
    **kwargs: object,
) -> subprocess.CompletedProcess[str]:
    """`arbiter ARGS` as its own process (`python -m arbiter`), from `cwd` (the project
    root by default), with no input: for the tests where the process itself is the point
    (signals, pipes, what reaches which stream, limits of the process)."""
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "arbiter", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )
