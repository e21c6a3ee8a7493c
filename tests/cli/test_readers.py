"""What the commands that read results, and the command line itself, say: arena files
read as tournament files are, bad values in one line, values quoted as they were written."""

from __future__ import annotations

import html
import json
import os
import subprocess
from pathlib import Path

import pytest
from commands import invoke
from paths import ROOT

from arbiter.engines import sandbox


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


TOURNAMENT = """\
[tournament]
name = "small"
tc = "5+0.1"
islands = 4
size = 5
engines = ["random", "heuristic"]
output = "small.sqlite"
"""

ARENA = """\
[arena]
name = "ladder"
listen = "127.0.0.1:8080"
islands = 4
size = 5
output = "small.sqlite"
"""


def run_tournament(folder: Path, file: str) -> subprocess.CompletedProcess[str]:
    """`arbiter tournament run FILE -q` from `folder`, in this process: these tests read
    what a run stored (a process of its own costs a second of start-up, and the process
    itself is tested in tests/e2e/)."""
    return invoke("tournament", "run", file, "-q", cwd=folder)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a tournament of two Hex games played, and an arena file whose store
    is that tournament's."""
    folder = tmp_path_factory.mktemp("played")
    (folder / "small.toml").write_text(TOURNAMENT)
    (folder / "arena.toml").write_text(ARENA)
    done = run_tournament(folder, "small.toml")
    assert done.returncode == 0, done.stderr
    return folder


def test_the_readers_take_an_arena_file_as_they_take_a_tournament_file(played: Path) -> None:
    by_arena = invoke("ratings", "arena.toml", "--json", cwd=played)
    by_file = invoke("ratings", "small.toml", "--json", cwd=played)
    assert by_arena.returncode == 0, by_arena.stderr
    assert json.loads(by_arena.stdout) == json.loads(by_file.stdout)
    assert json.loads(by_arena.stdout)["games"] == 2

    status = invoke("tournament", "status", "arena.toml", "--json", cwd=played)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["games"] == 2

    report = invoke("report", "arena.toml", "-o", "arena.html", cwd=played)
    assert report.returncode == 0, report.stderr
    assert "2 rated games" in report.stderr
    assert "heuristic" in (played / "arena.html").read_text()

    export = invoke("tournament", "export", "arena.toml", "--records", "a.jsonl", cwd=played)
    assert export.returncode == 0, export.stderr
    assert len((played / "a.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("arena.toml", "an arena file"),
        ("small.toml", "a tournament file"),
        ("small.sqlite", "a store"),
    ],
)
def test_show_names_a_file_that_is_not_records_as_what_it_is(
    played: Path, source: str, what: str
) -> None:
    done = invoke("show", source, cwd=played)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"Error: {source}: {what}, not a records file (write its games as records first:"
        f" arbiter tournament export {source} --records games.jsonl)"
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["ratings", "S"],
        ["tournament", "status", "S"],
        ["report", "S", "-o", "r.html"],
        ["show", "S"],
    ],
)
def test_a_text_file_named_as_a_store_is_said_not_to_be_one(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "games.sqlite").write_text("hello\n")
    done = invoke(*("games.sqlite" if a == "S" else a for a in command), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: games.sqlite: not a SQLite store")
    assert "TOML" not in lines[0]
    assert (tmp_path / "games.sqlite").read_text() == "hello\n"  # a reader changes nothing


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("rounds = true", "tournament.rounds: must be an integer, not true"),
        ("pie = 1", "tournament.pie: must be a boolean (true or false), not 1"),
        ('margin = "1"', 'tournament.margin: must be a number, not "1"'),
        ("sprt = false", "tournament.sprt: must be a table, not false"),
        ("sprt = { elo0 = 0, elo1 = true }", "SPRT elo1 must be a number, not true"),
        ('sprt = { elo0 = 0, elo1 = 5, "a b" = 1 }', 'unknown SPRT key "a b"'),
        ("format = false", "unknown format false"),
        ("limits = [1, 2]", "tournament.limits: must be a table, not [1, 2]"),
        ('format = "gauntlet"\nchallenger = "nobody"', 'no engine named "nobody"'),
        ('engines = ["random", "nope"]', 'no engine "nope" in the bundled bots'),
    ],
)
def test_errors_quote_the_value_as_toml(tmp_path: Path, line: str, said: str) -> None:
    engines = "" if line.startswith("engines") else 'engines = ["random", "mc"]\n'
    (tmp_path / "t.toml").write_text(f"[tournament]\n{engines}{line}\n")
    done = invoke("tournament", "status", "t.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert said in done.stderr, done.stderr
    for python in ("True", "False", "None", "'", "bool ", "int ", "str ", "list "):
        assert python not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("islands = [5]", "islands = [5]: 5 is not an island count of a variant: 8 (Atoll) or 4"),
        ("islands = [8, true]", "islands must be a non-empty list of integers, not [8, true]"),
        ("sizes = [11, 40]", "sizes = [11, 40]: 40 is not a board size (2 to 26)"),
        ("time = false", "time must be atoll, gtp or none, not false"),
    ],
)
def test_an_engine_entry_error_says_which_value_is_wrong(
    tmp_path: Path, line: str, said: str
) -> None:
    (tmp_path / "e.toml").write_text(f'[engines.x]\ncommand = ["x"]\n{line}\n')
    done = invoke("check", "x", "--engines", "e.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert said in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["tournament", "export", "small.toml", "--format", "sgf", "--out", "-"], "(;FF[4]"),
        (["tournament", "export", "arena.toml", "--records", "-"], '{"'),
        (["report", "small.toml", "-o", "-"], "<!DOCTYPE html>"),
        (["show", "games.jsonl", "--game", "1", "--svg", "-"], "<?xml"),
        (["show", "games.jsonl", "--sgf", "-"], "(;FF[4]"),
        (["new", "bot", "-"], "#!/usr/bin/env python3"),
        (["new", "tournament", "-"], "# A round-robin"),
    ],
)
def test_dash_is_standard_output_for_every_output_path(
    played: Path, tmp_path: Path, args: list[str], starts: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("small.toml", "arena.toml", "small.sqlite"):
        (work / name).write_bytes((played / name).read_bytes())
    exported = invoke("tournament", "export", "small.toml", "--records", "games.jsonl", cwd=work)
    assert exported.returncode == 0, exported.stderr
    done = invoke(*args, cwd=work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(starts), done.stdout[:200]
    assert "standard output" in done.stderr
    assert not (work / "-").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["match", "random", "random", "--records", "-"],
        ["match", "random", "random", "--store", "-"],
        ["tournament", "run", "--example", "demo", "--log", "-"],
        ["tournament", "run", "--example", "demo", "--transcripts", "-"],
    ],
)
def test_an_output_that_cannot_go_to_standard_output_refuses_dash(
    tmp_path: Path, args: list[str]
) -> None:
    done = invoke(*args, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "- is standard output" in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing named -, no store, nothing played


def test_a_new_league_says_which_bundled_bots_it_plays_and_how_long_it_may_take(
    tmp_path: Path,
) -> None:
    (tmp_path / "mine.py").write_text("")
    done = invoke("new", "tournament", "league.toml", "--bot", "mine.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "league.toml").read_text()
    assert "the bundled ladder, one bot per strength" in text
    assert "(mc, mc-fast, skeleton)" in text  # the bundled bots it leaves out, named
    status = invoke("tournament", "status", "league.toml", "--json", cwd=tmp_path)
    games = json.loads(status.stdout)["scheduled"]
    assert games == 120
    # Derived from the file's own clock and game count: two clocks of 5+0.05 on the
    # 104 cells of Atoll 11 hold at most 15.2 seconds a game.
    concurrency = max(1, (os.cpu_count() or 2) // 2)
    minutes = round(games * (2 * 5 + 104 * 0.05) / concurrency / 60)
    said = f"It plays {games} games: an estimate of at most {minutes} minutes"
    assert said in done.stderr, done.stderr
    flat = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert f"{games} games: an estimate of at most {minutes} minutes" in flat


@pytest.mark.parametrize(
    ("rounds", "state"), [(1, "inconclusive (the rounds cap came first)"), (2, "going on")]
)
def test_a_pairing_test_reads_the_same_in_status_and_the_report(
    played: Path, tmp_path: Path, rounds: int, state: str
) -> None:
    """One pair played and no decision: with one round the cap came first (inconclusive),
    with two the pairing still has a pair to play (going on); both views say the same."""
    text = TOURNAMENT.replace("[tournament]", f"[tournament]\nrounds = {rounds}")
    text = text.replace('output = "small.sqlite"', f'output = "{played / "small.sqlite"}"')
    tested = tmp_path / "tested.toml"
    tested.write_text(text + "sprt = { elo0 = 0, elo1 = 10 }\n")
    status = invoke("tournament", "status", str(tested), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "random vs heuristic: SPRT (pairs): LLR" in status.stdout
    assert f", {state}; pairs" in status.stdout, status.stdout
    report = invoke("report", str(tested), "-o", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text()
    assert f">{state}<" in page
    other = {"going on", "inconclusive (the rounds cap came first)"} - {state}
    assert not any(f">{word}<" in page for word in other)


HEX5 = 'tc = "5+0.1"\nislands = 4\nsize = 5\n'


def _reported(folder: Path, file: str, text: str) -> str:
    """Play the tournament `text` as `file` and return its report page."""
    (folder / file).write_text(text)
    done = run_tournament(folder, file)
    assert done.returncode == 0, done.stderr
    assert invoke("report", file, "-o", f"{file}.html", cwd=folder).returncode == 0
    return (folder / f"{file}.html").read_text()


def test_the_report_shows_a_swiss_standings_with_its_tie_breaks(tmp_path: Path) -> None:
    """The Swiss's own order (points, Buchholz, Sonneborn-Berger), as status has it."""
    page = _reported(
        tmp_path,
        "sw.toml",
        '[tournament]\nname = "sw"\nformat = "swiss"\nrounds = 1\n'
        + HEX5
        + 'engines = ["random", "skeleton", "heuristic"]\n',
    )
    swiss = json.loads(invoke("tournament", "status", "sw.toml", "--json", cwd=tmp_path).stdout)
    assert 'id="format">Format results' in page and "Buchholz" in page
    start = page.index('<table class="swiss">')
    rows = page[start : page.index("</table>", start)].split("<tr>")[2:]
    assert len(rows) == len(swiss["swiss"]["standings"]) == 3
    for row, standing in zip(rows, swiss["swiss"]["standings"], strict=True):
        assert f'class="name">{standing["name"]}</th>' in row
        assert f"<td>{standing['points']:g}</td><td>{standing['buchholz']:g}</td>" in row
        assert f"<td>{standing['sonneborn_berger']:g}</td>" in row
    assert "1 of 1 rounds complete" in page


@pytest.mark.slow
def test_the_report_states_an_adaptive_runs_budget_and_stop_rule(tmp_path: Path) -> None:
    """Its result as status gives it, and its conditions without rounds (it has none)."""
    page = _reported(
        tmp_path,
        "ad.toml",
        '[tournament]\nname = "ad"\nformat = "adaptive"\ngames = 4\nuntil = "top:1"\n'
        + HEX5
        + 'engines = ["random", "heuristic"]\n',
    )
    status = invoke("tournament", "status", "ad.toml", cwd=tmp_path).stdout
    adaptive = next(line for line in status.splitlines() if line.startswith("Adaptive:"))
    assert f"ad.toml: {adaptive}</p>" in html.unescape(page)
    assert "adaptive: a budget of 4 games" in page and "stop rule until = top:1" in page
    assert "1 round" not in page


def test_the_report_shows_each_engines_options_dialect_and_the_limits_that_applied(
    tmp_path: Path,
) -> None:
    """What the store keeps of an engine's definition is in the report's engine table,
    escaped: its options, its swap spelling, that it is never told its clock; and a
    sandboxed engine's limits are those that applied (the sandbox's disk default)."""
    (tmp_path / "eng.toml").write_text(
        '[engines.mo]\ncommand = ["{python}", "-m", "arbiter.bots.random_bot"]\n'
        'options = ["version"]\nswap = "swap-pieces"\ntime = "none"\n'
    )
    sandboxed = sandbox.unavailable() is None
    tmp_path.chmod(0o755)  # readable by the sandbox's unprivileged user
    (tmp_path / "sk.py").write_bytes((ROOT / "arbiter" / "bots" / "skeleton.py").read_bytes())
    (tmp_path / "o.toml").write_text(
        '[tournament]\nname = "o"\ntc = "5+0.1"\nislands = 4\nsize = 5\n'
        'engines_file = "eng.toml"\nengines = ["mo"]\n'
        '[[engine]]\nname = "sk"\ncommand = ["{python}", "sk.py"]\n'
        f"sandbox = {str(sandboxed).lower()}\n"
    )
    done = run_tournament(tmp_path, "o.toml")
    assert done.returncode == 0, done.stderr
    assert invoke("report", "o.toml", "-o", "o.html", cwd=tmp_path).returncode == 0
    page = html.unescape((tmp_path / "o.html").read_text())
    assert 'options: version; swap spelled "swap-pieces"; never told its clock' in page
    assert "none declared (the protocol's defaults)" in page  # sk declares nothing
    if sandboxed:
        assert "sandboxed, limits: disk 64 MB (the sandbox's default)" in page
        assert "sandboxed, no limits" not in page


def test_running_an_arena_file_as_a_tournament_says_what_it_is(played: Path) -> None:
    done = invoke("tournament", "run", "arena.toml", cwd=played)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: arena.toml: an arena file, not a tournament file")
    assert "arbiter arena serve arena.toml" in done.stderr
