"""The engine author's shelf, engines/: every engine its engines file defines passes
`arbiter check`, run by name through the real command line from the project root, where
the file is found without --engines."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from commands import ROOT, invoke

SHELF = ROOT / "engines"


def check(name: str) -> dict[str, dict[str, object]]:
    done = invoke("check", name, "--json")
    results = {r["name"]: r for r in json.loads(done.stdout)}
    assert done.returncode == 0, [r for r in results.values() if not r["passed"]]
    return results


def test_the_engines_file_defines_every_example() -> None:
    rows = json.loads(invoke("engines", "--json").stdout)
    mine = {row["name"]: row for row in rows if row["from"] == str(SHELF / "engines.toml")}
    assert {"atoll-bot-c", "atoll-bot-js", "gtphex"} <= set(mine)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (Node.js 18 or later)")
def test_the_javascript_engine_passes_check_and_takes_every_win() -> None:
    results = check("atoll-bot-js")
    assert str(results["wins in one, everywhere"]["detail"]).startswith("took the win in all")
    assert "Hex 2, 5, 11, 19, 26" in str(results["variants and sizes tried"]["detail"])


# tests/process/test_check_c_bot.py checks the same build in the default run: this one adds
# only that the engines file finds it.
@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("cc") is None or shutil.which("make") is None,
    reason="needs a C compiler (cc) and make to build engines/c",
)
def test_the_c_engine_from_the_engines_file_passes_check() -> None:
    subprocess.run(["make", "-s", "-C", str(SHELF / "c")], check=True)
    results = check("atoll-bot-c")
    assert str(results["wins in one, everywhere"]["detail"]).startswith("took the win in all")


@pytest.mark.slow
def test_the_plain_gtp_hex_definition_passes_check_through_its_dialect() -> None:
    results = check("gtphex")
    assert "Hex 11, 13, 19" in str(results["variants and sizes tried"]["detail"])
    assert not [name for name in results if name.startswith("positions: atoll")]
