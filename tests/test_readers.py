"""What the commands that read results, and the command line itself, say: arena files
read as tournament files are, bad values in one line, values quoted as they were written."""

from __future__ import annotations

from pathlib import Path

import pytest
from commands import invoke

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["tournament", "run", "--example", "demo", "--concurrency", "257"], "'--concurrency'"),
        (["match", "random", "random", "--margin", "nan"], "'--margin'"),
        (["match", "random", "random", "--games", "0"], "'--games'"),
        (["ratings", "--prior", "-1", "x.jsonl"], "'--prior'"),
        (["report", "x.jsonl"], "'--output'"),
        (["tournament", "status", "--example", "nope"], "'--example'"),
        (["arena", "token", "alice", "--games-at-once", "65"], "'--games-at-once'"),
        (["frobnicate"], "'frobnicate'"),
    ],
)
def test_a_bad_command_line_value_is_one_line_naming_the_option(
    args: list[str], option: str, tmp_path: Path
) -> None:
    done = invoke(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ") and option in lines[0], lines[0]
    assert "--help" in lines[0]  # where to read how to fix it
    assert "Usage:" not in done.stderr and done.stdout == ""


def test_a_group_called_with_nothing_still_shows_its_help(tmp_path: Path) -> None:
    done = invoke("tournament", cwd=tmp_path)
    assert "tournament [OPTIONS] COMMAND" in done.stdout + done.stderr
    assert "Commands:" in done.stdout + done.stderr
