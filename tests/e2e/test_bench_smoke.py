"""The benchmarks still run (tiny sizes; the numbers themselves are not checked here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import BENCH

from arbiter.engines import sandbox

# The benchmarks are tools, not the product: each runs a few seconds, so all are slow.


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_rules_bench_runs() -> None:
    out = run(str(BENCH / "rules_bench.py"), "--playouts", "512", "--batch", "256")
    assert out.count("playouts/s") == 3 and "placement+win check" in out


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the instant engine")
def test_referee_bench_runs() -> None:
    out = run(
        str(BENCH / "referee_bench.py"), "--games", "4", "--round-trips", "200", "--reps", "1"
    )
    assert "referee per ply, concurrency 1" in out and "speed-up" in out
    assert "'connection': 4" in out


def test_mcts_bench_runs() -> None:
    out = run(str(BENCH / "mcts_bench.py"), "--seconds", "0.05", "--leaves", "2")
    assert out.count("MCTS simulations/s") == 3 and "bare batch playouts/s" in out


def test_ratings_bench_runs() -> None:
    out = run(str(BENCH / "ratings_bench.py"), "--quick")
    assert "fit 10 engines" in out and "converged=True" in out


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the instant engine")
def test_tournament_bench_runs() -> None:
    out = run(str(BENCH / "tournament_bench.py"), "--quick")
    assert out.count("tournament/match time") == 2
    assert "ratings on 200 records" in out and "peak RSS of the harness" in out


@pytest.mark.skipif(
    sandbox.unavailable() is not None, reason=f"no sandbox here: {sandbox.unavailable()}"
)
def test_sandbox_bench_runs() -> None:
    out = run(str(BENCH / "sandbox_bench.py"), "--starts", "2", "--games", "2", "--reps", "1")
    assert "per move" in out and "ratio" in out


def test_report_bench_runs() -> None:
    out = run(str(BENCH / "report_bench.py"), "--quick")
    assert "40 games (atoll-8/11" in out and "report written in" in out and "MB" in out


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the instant engine")
def test_dask_bench_runs() -> None:
    pytest.importorskip("distributed", reason="needs the distributed package")
    out = run(str(BENCH / "dask_bench.py"), "--quick")
    assert out.startswith("local:") and "\ndask :" in out and "dask overhead per game" in out


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the instant engine")
def test_pool_bench_runs() -> None:
    out = run(
        str(BENCH / "pool_bench.py"),
        "--engines",
        "3",
        "--rounds",
        "1",
        "--delays",
        "0",
        "--concurrency",
        "2",
        "--reps",
        "1",
    )
    assert "3-engine round-robin of 6 games" in out and "per engine/slot" in out


def test_sprt_bench_runs() -> None:
    out = run(str(BENCH / "sprt_bench.py"), "--quick")
    assert "design effect" in out and "games saved" in out


def test_pairing_bench_runs() -> None:
    out = run(str(BENCH / "pairing_bench.py"), "--quick")
    assert "adaptive top:3 @ 240" in out and "round-robin @ 480" in out and "swiss @ 120" in out
    assert out.count("stopped early in") == 6


def test_arena_bench_runs() -> None:
    """A step the bench cannot measure is reported, not a traceback: here the open-file
    limit (hard, so that no process can raise it) holds about 64 engines' connections,
    and the second step asks for 80."""
    import resource

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    args = ("--ramp", "4,80", "--period", "3", "--login-timeout", "3", "--api-timeout", "10")
    done = subprocess.run(
        [sys.executable, str(BENCH / "arena_bench.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        preexec_fn=low_limit,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    assert "4 engines: 4 welcomed, 4 listed as connected in /api/live" in out
    assert "| 4 | 4 |" in out and "net ms/move p50" in out
    assert "the open-file limit is 128 (hard)" in out
    assert "client 0: its open-file limit is 128" in out
    assert "step 80: " in out and "Traceback" not in done.stderr
    assert "lost 0, stored twice 0, void 0" in out


def test_proof_bench_runs() -> None:
    out = run(str(BENCH / "proof_bench.py"), "--games", "2", "--sizes", "7")
    assert out.count("plies saved") == 6 and "ms per call" in out
    assert "atoll-8/7" in out and "hex/7" in out


def test_adjudication_bench_runs(tmp_path: Path) -> None:
    small = tmp_path / "small.toml"
    small.write_text(
        '[tournament]\nname = "small"\nengines = ["random", "skeleton"]\nrounds = 1\n'
        'size = 7\ntc = "5+0.05"\noutput = "small.sqlite"\n'
    )
    out = run(str(BENCH / "adjudication_bench.py"), "--file", str(small))
    assert "adjudicate off: 2 games" in out and "adjudicate proven: 2 games" in out
    assert "fewer with adjudication" in out and "cells left empty" in out
