"""Real engines plug in as they are: a plain GTP Hex program through its engine definition."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from commands import invoke
from paths import BADBOT, ROOT

from arbiter.engines.dialect import Dialect, TimeFamily, setup_commands, time_family, time_updates
from arbiter.engines.process import EngineSpec, open_engine
from arbiter.results.records import read_records
from arbiter.rules import Variant
from arbiter.rules.clock import GameClock, TimeControl

GTPHEX = ROOT / "tests" / "engines" / "gtphex.py"
RANDOM = ROOT / "arbiter" / "bots" / "random_bot.py"


def engines_file(tmp_path: Path, *flags: str, extra: str = "") -> Path:
    path = tmp_path / "engines.toml"
    command = json.dumps([sys.executable, str(GTPHEX), *flags])
    keys = {"islands": "[4]", "swap": '"swap-pieces"'}
    defaults = "".join(f"{k} = {v}\n" for k, v in keys.items() if f"{k} =" not in extra)
    path.write_text(
        f"[engines.hexer]\ncommand = {command}\n{defaults}{extra}\n"
        f"[engines.random]\ncommand = {json.dumps([sys.executable, str(RANDOM)])}\n"
    )
    return path


def test_a_plain_gtp_hex_engine_plays_full_games_unchanged(tmp_path: Path) -> None:
    book = engines_file(tmp_path, "--always-swap", extra='options = ["param_game allow_swap 1"]')
    records = tmp_path / "r.jsonl"
    done = invoke(
        "match",
        "hexer",
        "random",
        "--engines",
        str(book),
        "--islands",
        "4",
        "--size",
        "7",
        "--games",
        "4",
        "--tc",
        "5+0.05",
        "--records",
        str(records),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    games = list(read_records(records))
    assert len(games) == 4
    assert all(g.termination.value == "connection" and not g.void for g in games)
    # As seat 2 it swapped, spelling it its way; the record says swap either way.
    as_second = [g for g in games if g.seat2 == "hexer"]
    assert as_second and all(g.moves[1] == "swap" and g.swapped for g in as_second)
    assert all(g.commands["seat1"][-1] == "--always-swap" for g in games if g.seat1 == "hexer")


@pytest.mark.slow
def test_the_same_plain_gtp_program_plays_atoll_when_declared(tmp_path: Path) -> None:
    book = engines_file(
        tmp_path,
        "--islands",
        "8",
        "--always-swap",
        extra='islands = [8]\noptions = ["param_game allow_swap 1"]\nsizes = [7, 11]',
    )
    records = tmp_path / "r.jsonl"
    done = invoke(
        "match",
        "random",
        "hexer",
        "--engines",
        str(book),
        "--size",
        "7",
        "--games",
        "2",
        "--tc",
        "5+0.05",
        "--records",
        str(records),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    games = list(read_records(records))
    assert all(g.termination.value == "connection" for g in games)
    assert any(g.seat2 == "hexer" and g.moves[1] == "swap" for g in games)
    assert invoke("check", "hexer", "--engines", str(book)).returncode == 0


def test_an_option_the_engine_refuses_stops_the_run_naming_it(tmp_path: Path) -> None:
    book = engines_file(tmp_path, extra='options = ["param_game no_such_thing 1"]')
    done = invoke(
        "match",
        "hexer",
        "random",
        "--engines",
        str(book),
        "--islands",
        "4",
        "--size",
        "7",
        "--games",
        "2",
        "--tc",
        "5+0.05",
    )
    assert done.returncode == 2  # the operator's to fix, before any game
    [line] = done.stderr.strip().splitlines()
    assert "option 'param_game no_such_thing 1'" in line and "unknown parameter" in line


@pytest.mark.parametrize(
    ("flags", "extra", "size", "message"),
    [
        (["--max-size", "5"], "", "7", "hexer cannot play"),
        ([], "sizes = [5, 9]", "7", "declares sizes = [5, 9]"),
        ([], "islands = [8]", "7", "cannot play 4 islands"),
    ],
    ids=["refused-boardsize", "undeclared-size", "undeclared-variant"],
)
def test_a_game_the_engine_cannot_play_is_a_configuration_error(
    tmp_path: Path, flags: list[str], extra: str, size: str, message: str
) -> None:
    book = engines_file(tmp_path, *flags, extra=extra)
    done = invoke(
        "match",
        "hexer",
        "random",
        "--engines",
        str(book),
        "--islands",
        "4",
        "--size",
        size,
        "--games",
        "4",
        "--tc",
        "5+0.05",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert message in line
    assert "Started game" not in done.stderr and "void" not in done.stdout


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--protocol-version", "1"], "protocol_version"), (["--banner", "MoHex 1.0"], "MoHex")],
    ids=["protocol-version-1", "banner-on-stdout"],
)
def test_a_wrong_protocol_version_or_a_banner_is_a_start_up_fault(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    book = engines_file(tmp_path, *flags)
    done = invoke(
        "match",
        "hexer",
        "random",
        "--engines",
        str(book),
        "--islands",
        "4",
        "--size",
        "7",
        "--games",
        "2",
        "--tc",
        "5+0.05",
    )
    assert done.returncode == 1
    assert "hexer could not be started" in done.stdout and message in done.stdout


async def test_a_board_drawing_with_blank_looking_lines_is_one_response() -> None:
    spec = EngineSpec((sys.executable, str(GTPHEX)), name="hexer")
    async with open_engine(spec) as engine:
        await engine.session.command("boardsize", "5", timeout=5)
        board = await engine.session.command("showboard", timeout=5)
        lines = board.split("\n")
        assert "" in lines  # its lines of spaces did not end the response
        assert lines[-1].split() == ["a", "b", "c", "d", "e"] and len(lines) == 9
        # The session is still in step: the next answer is the next command's.
        assert await engine.session.command("name", timeout=5) == "GtpHex"


def test_engine_definition_keys_are_checked(tmp_path: Path) -> None:
    for extra, key in (
        ("islands = [5]", "islands"),
        ('swap = "swap it"', "swap"),
        ('time = "fast"', "time"),
        ("options = [3]", "options"),
        ('sizes = "11"', "sizes"),
    ):
        book = engines_file(tmp_path, extra=extra)
        done = invoke("match", "hexer", "random", "--engines", str(book), "--islands", "4")
        assert done.returncode == 2
        [line] = done.stderr.strip().splitlines()
        assert f"engines.hexer.{key}" in line and str(book) in line
    # A broken entry does not keep the others from playing.
    done = invoke(
        "match",
        "random",
        f"{sys.executable} {RANDOM}",
        "--engines",
        str(book),
        "--games",
        "2",
        "--tc",
        "5+0.05",
        "-q",
    )
    assert done.returncode == 0, done.stderr


def test_an_engines_start_up_deadline_is_its_definitions(tmp_path: Path) -> None:
    # An engine that takes a second to start (as one loading weights would): a start-up
    # deadline far below that stops the run naming it; a roomy one lets it play.
    slow = json.dumps([sys.executable, str(BADBOT), "slow-start", "--ms", "1000"])
    book = tmp_path / "engines.toml"
    for timeout, ok in (("0.3", False), ("60", True)):
        book.write_text(
            f"[engines.slow]\ncommand = {slow}\nstart_timeout = {timeout}\ncommand_timeout = 20\n"
        )
        done = invoke(
            "match",
            "slow",
            "random",
            "--engines",
            str(book),
            "--games",
            "2",
            "--tc",
            "5+0.05",
            "--size",
            "7",
            "-q",
        )
        if ok:
            assert done.returncode == 0, done.stderr
        else:
            said = done.stdout + done.stderr
            assert done.returncode != 0 and "slow could not be started" in said, said
            assert "within 0.3 s" in said
    for bad in ("0", "4000", '"60"', "nan"):
        book.write_text(f"[engines.slow]\ncommand = {slow}\nstart_timeout = {bad}\n")
        done = invoke("match", "slow", "random", "--engines", str(book))
        assert done.returncode == 2
        [line] = done.stderr.strip().splitlines()
        assert "engines.slow.start_timeout" in line and str(book) in line


def test_every_dialect_word_is_checked_when_the_file_is_read(tmp_path: Path) -> None:
    # Words the wire cannot carry (not printable ASCII, a space, a #) would fail only when
    # the command is sent: `arbiter check` names the file and the key instead.
    for extra, key in (
        ('swap = "é"', "swap"),
        ('swap = "swap#2"', "swap"),
        ('options = ["param_game allow_swap é"]', "options"),
        ('options = ["param_x #1"]', "options"),
    ):
        book = engines_file(tmp_path, extra=extra)
        done = invoke("check", "hexer", "--engines", str(book))
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert f"engines.hexer.{key}" in line and str(book) in line
        assert "ASCII" in line and "Traceback" not in done.stderr


def test_time_families_and_their_commands() -> None:
    listed = {"time_left"}
    assert time_family(Dialect(), listed.__contains__) is TimeFamily.NONE  # PROTOCOL.md 5.2
    both = {"time_settings", "time_left"}
    assert time_family(Dialect(), both.__contains__) is TimeFamily.GTP
    assert time_family(Dialect(time=TimeFamily.GTP), listed.__contains__) is TimeFamily.GTP
    hexv = Variant(4, 11, True)
    tc = TimeControl.parse("40/60+0.5")
    assert setup_commands(Dialect(time=TimeFamily.GTP), listed.__contains__, hexv, tc) == [
        ("boardsize", "11"),
        ("clear_board",),
        ("time_settings", "0", "60", "40"),
    ]
    clocks = [GameClock(tc), GameClock(TimeControl.parse("st=2"))]
    clocks[0].stop(1.0)
    # Overtime stones: moves left in the block, 1 for a fixed time per move.
    # 60.5 s at the start, 1 s used, 0.5 s back: 60 s for the 39 moves left of the block.
    assert time_updates(TimeFamily.GTP, clocks) == [
        ("time_left", "b", "60", "39"),
        ("time_left", "w", "2", "1"),
    ]
    assert time_updates(TimeFamily.ATOLL, clocks) == [
        ("atoll-time_left", "b", "60000"),
        ("atoll-time_left", "w", "2000"),
    ]
    assert time_updates(TimeFamily.NONE, clocks) == []
