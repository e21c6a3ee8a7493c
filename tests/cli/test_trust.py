"""Results nobody can doubt: one name per engine per run, one meaning for a record, no
NaN or infinity taken as a number, names from files that cannot forge output, and harness
faults that keep their traceback. Each through the real command line."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from commands import arbiter, invoke
from paths import BADBOT, ROOT

from arbiter.cli import main
from arbiter.results.records import read_records
from arbiter.rules import Game, Variant

ENGINES = ROOT / "arbiter" / "bots" / "engines.toml"


def _toml(words: list[str]) -> str:
    return json.dumps(words)  # a JSON list of strings is a TOML array


# -- one engine, one name ---------------------------------------------------------------


@pytest.mark.slow
def test_an_engine_keeps_one_name_across_worker_processes_and_restarts(tmp_path: Path) -> None:
    # Each process answers `name` with its own pid. The first engine crashes in every
    # game, so it is started afresh for each; two worker processes start their own too.
    odd = f"{sys.executable} {BADBOT} crash --after 2 --name odd-{{pid}}"
    crashy = f"{sys.executable} {BADBOT} ok --name other-{{pid}}"
    records = tmp_path / "g.jsonl"
    done = invoke(
        "match",
        odd,
        crashy,
        "-c",
        "2",
        "-n",
        "6",
        "--tc",
        "5+0.1",
        "--size",
        "7",
        "--records",
        str(records),
        "--json",
        "-q",
    )
    assert done.returncode == 0, done.stderr
    games = list(read_records(records))
    assert len(games) == 6
    answers = {g.answers["seat1"] for g in games} | {g.answers["seat2"] for g in games}
    assert len({a for a in answers if a.startswith("odd-")}) >= 6  # one process a game
    assert len({a for a in answers if a.startswith("other-")}) >= 2  # one a worker
    names = {g.seat1 for g in games} | {g.seat2 for g in games}
    assert len(names) == 2, names
    assert {g.winner for g in games} <= names
    summary = json.loads(done.stdout)
    assert set(summary["engines"]) == names
    rated = invoke("ratings", str(records), "--json")
    assert rated.returncode == 0, rated.stderr
    assert {e["name"] for e in json.loads(rated.stdout)["engines"]} == names


# -- one reader, one meaning ------------------------------------------------------------


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four games of a real match, played once (in this process) for the module's readers."""
    records = tmp_path_factory.mktemp("played") / "r.jsonl"
    done = invoke(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "-n",
        "4",
        "--tc",
        "5+0",
        "--size",
        "7",
        "--records",
        str(records),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    return records


@pytest.fixture
def four_games(played: Path, tmp_path: Path) -> Path:
    """A copy of the four games' records file, for this test to change."""
    return Path(shutil.copy(played, tmp_path / "r.jsonl"))


BROKEN = [
    ("move_ms", ["slow"]),
    ("moves", ["zz99"]),
    ("seat2", None),  # replaced below by seat1: both seats one engine
    ("termination", "setup"),
    ("plies", 999),
    ("winner", "nobody"),
    ("termination", "resign"),  # the moves connect: it cannot have ended by resignation
    ("winner", "loser"),  # replaced below by the loser: the moves connect for the other
    ("moves", "three"),  # replaced below by the first three moves: no connection
    ("moves", "one more"),  # replaced below: a move after the game was won
]


@pytest.mark.parametrize(("key", "value"), BROKEN, ids=[f"{k}={v}" for k, v in BROKEN])
def test_every_command_rejects_the_same_lines(
    tmp_path: Path, four_games: Path, key: str, value: object
) -> None:
    records = four_games
    lines = records.read_text().splitlines()
    # A game won by connection: the cases below break what its moves show.
    base = next(line for line in lines if json.loads(line)["termination"] == "connection")
    data = json.loads(base)
    data[key] = data["seat1"] if key == "seat2" else value
    if value == "loser":
        won = json.loads(base)["winner"]
        data["winner"] = data["seat2"] if won == data["seat1"] else data["seat1"]
    elif value == "three":
        data["moves"] = json.loads(base)["moves"][:3]
    elif value == "one more":
        played = json.loads(base)["moves"]
        game = Game(Variant(**data["variant"]))
        for move in played:
            game.play(move)
        # An empty cell, or on a full board the first stone's: either way the game was
        # already won.
        free = next((n for i, n in enumerate(game.geometry.names) if not game.colors[i]), played[0])
        data["moves"] = [*played, free]
    if key == "moves":
        data["plies"] = len(data["moves"]) if isinstance(data["moves"], list) else 1
    records.write_text("\n".join([*lines, json.dumps(data)]) + "\n")
    before = records.read_bytes()
    # Four rated games, and any void attempt the match replayed (on a loaded machine a
    # stall of the harness voids a game): the broken copy is the line after them all.
    place = f"{records}:{len(lines) + 1}: not a game record"

    shown = invoke("show", str(records))
    assert shown.returncode == 0 and place in shown.stderr, shown.stderr
    assert len(shown.stdout.strip().splitlines()) == 2 + len(lines)  # two heading lines
    rated = invoke("ratings", str(records), "--json")
    assert rated.returncode == 0 and place in rated.stderr, rated.stderr
    assert json.loads(rated.stdout)["games"] == 4
    page = tmp_path / "r.html"
    reported = invoke("report", str(records), "-o", str(page))
    assert reported.returncode == 0 and place in reported.stderr, reported.stderr
    assert "4 rated games" in reported.stderr
    for command in (["ratings"], ["show"], ["report", "-o", str(tmp_path / "s.html")]):
        strict = invoke(*command, str(records), "--strict")
        assert strict.returncode == 2 and place in strict.stderr, (command, strict.stderr)
    assert records.read_bytes() == before


def test_a_line_the_reader_accepts_can_be_shown_rated_and_replayed(four_games: Path) -> None:
    for number in range(1, 5):
        shown = invoke("show", str(four_games), "--game", str(number))
        assert shown.returncode == 0, shown.stderr
        assert "Moves:" in shown.stdout


# -- numbers that are not numbers -------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["match", "random", "skeleton", "--margin"], "--margin"),
        (["check", "random", "--timeout"], "--timeout"),
        (["ratings", "x.jsonl", "--prior"], "--prior"),
        (["report", "x.jsonl", "-o", "x.html", "--prior"], "--prior"),
    ],
)
def test_non_finite_options_are_refused(args: list[str], option: str, value: str) -> None:
    done = invoke(*args, value)
    assert done.returncode == 2, done.stdout + done.stderr
    assert option in done.stderr and "Traceback" not in done.stderr
    assert "harness error" not in done.stdout + done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_in_a_tournament_file_are_refused(tmp_path: Path, value: str) -> None:
    file = tmp_path / "t.toml"
    file.write_text(
        f'[tournament]\nname = "t"\nengines = ["random", "skeleton"]\nmargin = {value}\n'
    )
    for command in (["tournament", "run"], ["tournament", "status"]):
        done = invoke(*command, str(file))
        assert done.returncode == 2, done.stderr
        assert "tournament.margin" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t.sqlite").exists()


@pytest.mark.parametrize(
    "tc",
    ["9" * 400 + "+0", "1+" + "9" * 400, "99999999/1+0", "9" * 5000 + ":00+1", "st=1e400"],
    ids=["base", "increment", "moves", "minutes", "per-move"],
)
def test_time_controls_out_of_range_are_refused(tmp_path: Path, tc: str) -> None:
    done = invoke("match", "random", "skeleton", "--tc", tc, "-n", "1")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "time" in done.stderr and "Started game" not in done.stderr
    book = tmp_path / "e.toml"
    book.write_text(
        f'[engines.r]\ncommand = ["{{python}}", "{ROOT}/arbiter/bots/random_bot.py"]\ntc = "{tc}"\n'
    )
    done = invoke("match", "--engines", str(book), "r", "r", "-n", "1")
    assert done.returncode == 2 and "engines.r.tc" in done.stderr, done.stderr
    assert "Started game" not in done.stderr


# -- names from files -------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["two\\nlines", "\\u001b[31mred", "tab\\there", "bidi\\u202e"])
def test_names_from_files_cannot_reach_the_terminal_raw(tmp_path: Path, bad: str) -> None:
    book = tmp_path / "e.toml"
    book.write_text(
        f'[engines.r]\ncommand = ["{{python}}", "{ROOT}/arbiter/bots/random_bot.py"]\n'
        f'name = "{bad}"\n'
    )
    done = invoke("match", "--engines", str(book), "r", "random", "-n", "1", "-q")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "engines.r.name" in done.stderr and "control character" in done.stderr
    assert "\x1b" not in done.stderr and "\u202e" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    file = tmp_path / "t.toml"
    file.write_text(
        f'[tournament]\nname = "t"\n[[engine]]\nname = "{bad}"\n'
        f'command = ["{{python}}", "{ROOT}/arbiter/bots/random_bot.py"]\n'
        '[[engine]]\nname = "b"\n'
        f'command = ["{{python}}", "{ROOT}/arbiter/bots/random_bot.py"]\n'
    )
    done = invoke("tournament", "run", str(file))
    assert done.returncode == 2 and "control character" in done.stderr, done.stderr
    assert "\x1b" not in done.stderr and "\u202e" not in done.stderr
    file.write_text(f'[tournament]\nname = "{bad}"\nengines = ["random", "skeleton"]\n')
    done = invoke("tournament", "status", str(file))
    assert done.returncode == 2 and "tournament.name" in done.stderr, done.stderr


# -- harness faults ---------------------------------------------------------------------


def test_a_harness_fault_keeps_its_traceback_and_logs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.rules.clock import GameClock

    def broken(self: GameClock, elapsed: float) -> bool:
        raise TypeError("a clock that cannot count")

    # One slot in this process, so the fault is injected where the referee runs.
    monkeypatch.setattr(GameClock, "stop", broken)
    records = tmp_path / "g.jsonl"
    log = tmp_path / "arbiter.log"
    runner = CliRunner()
    done = runner.invoke(
        main,
        [
            "match",
            "--engines",
            str(ENGINES),
            "random",
            "skeleton",
            "-n",
            "1",
            "--tc",
            "5+0",
            "--size",
            "7",
            "--records",
            str(records),
            "--log",
            str(log),
        ],
    )
    assert done.exit_code == 1, done.output
    voids = [r for r in read_records(records) if r.void]
    assert voids and all(r.termination.value == "harness" for r in voids)
    for void in voids:
        assert "TypeError: a clock that cannot count" in void.reason
        assert f"the traceback is in the record's evidence and in the log {log}" in void.reason
        assert void.evidence is not None and void.evidence.engine == "harness"
        assert "in broken" in void.evidence.traceback
        assert "raise TypeError" in void.evidence.traceback
    text = log.read_text()
    assert "harness error in game" in text and "Traceback (most recent call last)" in text
    assert text.count("TypeError: a clock that cannot count") >= len(voids)
    # Without --log, nothing of the log is printed, and the reason says how to keep one.
    quiet = runner.invoke(
        main,
        [
            "match",
            "--engines",
            str(ENGINES),
            "random",
            "skeleton",
            "-n",
            "1",
            "--tc",
            "5+0",
            "--size",
            "7",
        ],
    )
    assert quiet.exit_code == 1
    assert "Traceback" not in quiet.output
    assert "run with --log FILE to keep one" in quiet.output


def test_verbose_logs_to_stderr_and_a_log_never_overwrites_another_file(tmp_path: Path) -> None:
    done = arbiter(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "-n",
        "1",
        "--tc",
        "5+0",
        "--size",
        "7",
        "-q",
        "-v",
    )
    assert done.returncode == 0, done.stderr
    assert "arbiter.runs.driver INFO game " in done.stderr
    store = tmp_path / "records.jsonl"
    store.write_text('{"schema": 1}\n')
    done = invoke(
        "match", "--engines", str(ENGINES), "random", "skeleton", "-n", "1", "--log", str(store)
    )
    assert done.returncode == 2 and "not a log" in done.stderr, done.stderr
    assert store.read_text() == '{"schema": 1}\n'
