"""`arbiter check` on the example C engine (engines/c) and on copies of it built with one
mistake each (-DMISTAKE_<KIND>): every mistake keeps each move legal, loses games, and
must fail `check` with a message that names it, while the honest build passes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from commands import invoke
from paths import ROOT

SOURCE = ROOT / "engines" / "c"

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None or shutil.which("make") is None,
    reason="needs a C compiler (cc) and make to build engines/c",
)

# Each mistake, the check that fails and words of its hint (what to change).
MISTAKES = {
    "NO_ISLAND_CHAIN": ("wins in one, everywhere", "does not chain through islands"),
    "ANY_TWO_ISLANDS": ("wins in one, everywhere", "counts a join of two islands"),
    "ODD_FILES": ("wins in one, everywhere", "neighbour rule for files of both parities"),
    "COLOUR_CACHED": ("wins in one, everywhere", "first stone stays black"),
    "SWAP_RECOLOUR": ("wins in one, everywhere", "first stone stays black"),
    "MOVETIME_SECONDS": ("within its clock: movetime 0.5 s", "milliseconds"),
    "BYTE_CELLS": ("wins in one, everywhere", "boardsize 23"),
    "HEX_ROWS_BOTTOM": ("wins in one, everywhere", "rows are numbered from the top"),
    "TOP_CELLS": ("wins in one, everywhere", "even files (a, c, e, ...) have size-2 cells"),
}
FAST: tuple[str, ...] = ()  # every mistake runs with the slow tests (the Python ones are fast)


def build(directory: Path, mistake: str | None) -> Path:
    out = directory / (f"atoll-bot-{mistake}" if mistake else "atoll-bot")
    if not out.exists():
        args = ["make", "-s", "-C", str(SOURCE), f"OUT={out}"]
        subprocess.run(args + ([f"MISTAKE={mistake}"] if mistake else []), check=True)
    return out


def check(program: Path) -> tuple[int, dict[str, dict[str, object]]]:
    done = invoke("check", str(program), "--json")
    return done.returncode, {r["name"]: r for r in json.loads(done.stdout)}


@pytest.fixture(scope="module")
def bots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("c-bots")


@pytest.mark.slow  # builds the C engine and checks it; the Python bots are checked by default
def test_the_example_c_engine_passes_and_takes_every_win(bots: Path) -> None:
    code, results = check(build(bots, None))
    assert code == 0, [r for r in results.values() if not r["passed"]]
    assert str(results["wins in one, everywhere"]["detail"]).startswith("took the win in all")
    # Hex 2 has no position for the wins check: said, not skipped in silence
    notes = [r["name"] for r in results.values() if r["note"]]
    assert notes == ["not checked: wins in one on Hex 2"], notes


@pytest.mark.parametrize(
    "mistake",
    [
        m
        if m in FAST
        else pytest.param(
            m,
            marks=pytest.mark.slow,
        )
        for m in MISTAKES
    ],
)
def test_each_mistake_fails_check_naming_it(bots: Path, mistake: str) -> None:
    name, words = MISTAKES[mistake]
    code, results = check(build(bots, mistake))
    assert code == 1
    failed = results[name]
    assert not failed["passed"], failed
    assert words in str(failed["hint"]) + str(failed["detail"]), failed
    if mistake == "COLOUR_CACHED":
        # a block after the swap, recorded in the first genmove's colour, hides a win
        assert "its first stone swapped, after its block" in str(failed["detail"])


# Where each mistake shows in play: the board, the clock, and the openings (none: the
# engines choose the first stone and the swap themselves).
MATCH = {
    "HEX_ROWS_BOTTOM": ("--islands", "4", "--random-openings", "0"),
    "BYTE_CELLS": ("--size", "23", "--random-openings", "0"),
    "MOVETIME_SECONDS": ("--tc", "st=0.5", "--random-openings", "0"),
}


# Games each match plays: the seeded engines' scores are the same on every run. The
# movetime mistake loses every game on time at its first move (it sleeps seconds for
# milliseconds), so four games show it, where twenty take seconds of clock each.
GAMES = {"MOVETIME_SECONDS": "4"}


# Missing the chains through islands does not lose measurably against this opponent:
# the honest build's moves barely depend on them, and a missed win in one is only put
# off (0.48 over 800 games with one random stone). `check` still catches it.
PLAYS_EVEN = {"NO_ISLAND_CHAIN"}


@pytest.mark.slow
@pytest.mark.parametrize("mistake", [m for m in MISTAKES if m not in PLAYS_EVEN])
def test_each_mistake_loses_games_to_the_honest_build(bots: Path, mistake: str) -> None:
    """Through the real referee: the copy with the mistake against the honest engine.
    Both are deterministic (seeded the same) and choose their own openings, so the
    score is the same on every run; the honest build against itself scores one half."""
    broken, honest = build(bots, mistake), build(bots, None)
    extra = MATCH.get(mistake, ("--random-openings", "0"))
    tc = () if "--tc" in extra else ("--tc", "inf")
    games = GAMES.get(mistake, "20")
    done = invoke("match", str(broken), str(honest), "-n", games, *tc, *extra, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["score"] < 0.5, result
