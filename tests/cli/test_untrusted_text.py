"""Engine-originated text never reaches a terminal raw, through the real CLI."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from commands import arbiter, invoke
from paths import BADBOT, ROOT

from arbiter.text import escape, name, terminal

# C0 controls but newline and tab, DEL, C1 controls, bidi and format controls, U+2028/9.
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
HOSTILE = r"ev\x1b[31mil\nforged line\u202eEXE.txt\x9b2J\u2028" + "x" * 300
STDERR = "y" * 1500 + r"\n\x1b]0;pwned\x07\x1b[2J trace\u2066back\n"


def assert_safe(output: str, *, human: bool = True) -> None:
    assert not FORBIDDEN.search(output), repr(FORBIDDEN.search(output))
    for line in output.splitlines():
        assert len(line) <= 1000 or not human  # JSON is one line for programs
        assert not line.startswith("forged line")


def hostile(mode: str) -> str:
    return f"{sys.executable} {BADBOT} {mode} --hostile --name '{HOSTILE}' --say '{STDERR}'"


def test_escaping_rules() -> None:
    assert escape("a\x1b[1mb\nc\td") == "a\\x1b[1mb\\x0ac\\x09d"
    assert escape("a\nb\tc", newlines=True) == "a\nb\tc"
    assert escape("\u202eabc\u2066\x85") == "\\u202eabc\\u2066\\x85"
    assert escape("plain ünïcode ok") == "plain ünïcode ok"
    assert len(name("n" * 100)) == 40 and name("n" * 100).endswith("…")
    assert name("\x1b" * 30) == "\\x1b" * 9 + "…"  # never half an escape
    assert all(len(line) <= 1000 for line in terminal("z" * 5000 + "\n" + "w").splitlines())


@pytest.mark.slow
def test_match_show_and_check_print_no_raw_control_characters(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    random_bot = f"{sys.executable} {ROOT / 'arbiter' / 'bots' / 'random_bot.py'}"
    for extra in ([], ["--json"]):
        done = arbiter(
            "match",
            hostile("crash"),
            random_bot,
            "--games",
            "2",
            "--tc",
            "5+0",
            "--records",
            str(records),
            *extra,
        )
        assert done.returncode == 0, done.stderr
        assert_safe(done.stdout, human=not extra)
        assert_safe(done.stderr)
        assert "\\x0aforged line\\u202e" in done.stderr  # escaped, still readable
    summary = json.loads(done.stdout)
    assert sum(summary["wins"].values()) == 2
    # Records keep the raw text.
    raw = [json.loads(line) for line in records.read_text().splitlines()]
    assert any(
        "forged line" in r["answers"].get("seat1", "") + r["answers"].get("seat2", "") for r in raw
    )  # the whole answer, not the shortened display name
    assert all(len(a) <= 256 for r in raw for a in r["answers"].values())
    assert any(
        "\x1b]0;pwned" in (r["evidence"]["stderr_tail"] if r.get("evidence") else "") for r in raw
    )
    for args in ([], ["--game", raw[0]["game_id"]]):
        shown = invoke("show", str(records), *args)
        assert shown.returncode == 0, shown.stderr
        assert_safe(shown.stdout)
        assert "\\x1b]0;pwned" in shown.stdout or not args  # the listing has no evidence
    for extra in ([], ["--json"]):
        checked = invoke("check", hostile("crash"), *extra)
        assert checked.returncode == 1
        assert_safe(checked.stdout, human=not extra)
        assert_safe(checked.stderr)


def test_lone_surrogates_in_records_are_escaped(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    record = {
        "schema": 1,
        "game_id": "m-1",
        "variant": {"size": 11, "islands": 8, "pie": True},
        "seat1": "a\ud800",
        "seat2": "b",
        "tc": {"seat1": "1+0", "seat2": "1+0"},
        "started": "s",
        "termination": "resign",
        "winner": "a\ud800",
        "moves": ["f5"],
        "void": False,
    }
    records.write_text(json.dumps(record) + "\n")
    for args in (
        ["show", str(records)],
        ["show", str(records), "--game", "m-1"],
        ["ratings", str(records)],
    ):
        done = invoke(*args)
        assert done.returncode == 0, done.stderr
        assert "a\\ud800" in done.stdout and "Traceback" not in done.stderr
