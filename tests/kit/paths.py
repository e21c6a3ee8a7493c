"""Where things are, for every test folder: the project root, the test engines, the benches.

Tests live one folder down from tests/ (by layer), and helpers here in tests/kit; naming
the places once keeps a moved test from pointing at the wrong folder.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
ENGINES = TESTS / "engines"  # the test engines: hostile, broken and plain ones
BENCH = ROOT / "bench"
BOTS = ROOT / "arbiter" / "bots"
BADBOT = ENGINES / "badbot.py"  # the test bot of many modes (ok, resign, crash-start...)
