"""The command line end to end: real engines, real files, real exit codes; `arbiter` as a
process of its own where the process is the point (signals, pipes, kill -9, what reaches
which stream), in this process otherwise (commands.invoke)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from commands import arbiter, invoke
from paths import BADBOT, ROOT
from processes import running, wait_until

from arbiter.cli import main
from arbiter.engines import sandbox
from arbiter.results.records import GameRecord, Termination, read_records
from arbiter.rules import Game, Variant

ENGINES = ROOT / "arbiter" / "bots" / "engines.toml"
GNUGO = shutil.which("gnugo") or shutil.which("/usr/games/gnugo")


def test_match_end_to_end_writes_records_and_a_summary(tmp_path: Path) -> None:
    records = tmp_path / "games.jsonl"
    done = arbiter(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "4",
        "--tc",
        "5+0.05",
        "--concurrency",
        "2",
        "--records",
        str(records),
        "--seed",
        "3",
    )
    assert done.returncode == 0, done.stderr
    for n in range(1, 5):
        assert f"Started game {n} of 4" in done.stderr
        assert f"Finished game {n} (" in done.stderr
    assert "Score of random vs skeleton:" in done.stdout
    assert "Elo difference:" in done.stdout and "LOS:" in done.stdout
    assert "Seat 1 wins:" in done.stdout and "Terminations:" in done.stdout
    games = list(read_records(records))
    assert len(games) == 4 and len({g.game_id for g in games}) == 4
    seat1 = sorted(g.seat1 for g in games)
    assert seat1 == ["random", "random", "skeleton", "skeleton"]  # seat-swapped pairs
    for g in games:
        assert g.winner in ("random", "skeleton") and not g.void
        assert g.termination.value == "connection"
        replay = Game(Variant(**g.variant))
        for move in g.moves:
            replay.play(move)
        assert replay.winner is not None and replay.winner.name.lower() == g.winner_color
        assert len(g.move_ms) == g.plies
        assert (g.black if g.winner_color == "black" else g.white) == g.winner
    # The same file shows as a board.
    shown = invoke("show", str(records), "--game", games[0].game_id, "--ply", "3")
    assert shown.returncode == 0, shown.stderr
    assert "Position after 3 of" in shown.stdout and "a  b  c" in shown.stdout
    assert "X black stone, O white stone" in shown.stdout  # the legend
    board = shown.stdout.split("to move\n")[1].split("last move")[0]
    stones = sum(board.count(c) for c in "XOxo")
    assert stones == 3 - games[0].moves[:3].count("swap")
    assert board.count("x") + board.count("o") == 1  # the last stone is marked
    moves = shown.stdout.split("Moves:\n")[1].split()
    assert moves[:3] == [
        f"1.{games[0].moves[0]}",
        f"2.{games[0].moves[1]}",
        f"3.{games[0].moves[2]}<",
    ]
    by_number = invoke("show", str(records), "--game", games[0].game_id.rsplit("-", 1)[1])
    assert by_number.stdout.splitlines()[0] == shown.stdout.splitlines()[0]
    ambiguous = invoke("show", str(records), "--game", games[0].game_id[:-1])
    assert ambiguous.returncode == 2 and "4 games start with" in ambiguous.stderr
    final = invoke("show", str(records), "--game", games[0].game_id)
    assert "*" in final.stdout.split("Moves:")[0] and "the winning chain" in final.stdout
    listing = invoke("show", str(records))
    assert listing.returncode == 0
    for g in games:
        assert g.game_id in listing.stdout
    assert len(listing.stdout.splitlines()) == 2 + len(games)


def test_match_json_summary_and_hex(tmp_path: Path) -> None:
    done = arbiter(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "2",
        "--islands",
        "4",
        "--size",
        "5",
        "--tc",
        "st=1",
        "--json",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["games"] == 2 and summary["engines"] == ["random", "skeleton"]
    assert sum(summary["wins"].values()) == 2 and summary["void"] == 0
    assert done.stderr == ""


def test_equal_engine_names_get_suffixes() -> None:
    cmd = f"{sys.executable} {ROOT / 'arbiter' / 'bots' / 'random_bot.py'}"
    done = invoke("match", cmd, cmd, "--games", "2", "--tc", "5+0", "--json", "-q")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["engines"] == ["random", "random#2"]
    assert summary["wins"] == {cmd: summary["wins"][cmd], f"{cmd}#2": 2 - summary["wins"][cmd]}


@pytest.mark.slow
def test_wins_are_keyed_by_the_engine_as_given_not_by_its_name_answer(tmp_path: Path) -> None:
    # Each process of this engine answers another name (its pid): the scores must not care.
    shifty = f"sh -c 'exec {sys.executable} {BADBOT} ok --name shifty-$$'"
    loser = f"{sys.executable} {BADBOT} resign --name loser"
    records = tmp_path / "r.jsonl"
    done = invoke(
        "match",
        shifty,
        loser,
        "--games",
        "6",
        "--tc",
        "10+0.1",
        "-c",
        "2",
        "--json",
        "-q",
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["wins"] == {shifty: 6, loser: 0}
    assert summary["games"] == 6
    games = list(read_records(records))
    names = {g.seat1 for g in games} | {g.seat2 for g in games}
    answers = {g.answers["seat1"] for g in games} | {g.answers["seat2"] for g in games}
    assert len(answers - {"loser"}) == 2  # two worker processes, two different answers
    assert len(names - {"loser"}) == 1  # one name for the run: the first answer


def test_a_misbehaving_engine_forfeits_with_evidence(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    bad = f"{sys.executable} {BADBOT} crash --after 2"
    done = invoke(
        "match",
        bad,
        "--engines",
        str(ENGINES),
        "random",
        "--games",
        "2",
        "--tc",
        "5+0",
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stderr
    assert "forfeits (crash" in done.stderr
    games = list(read_records(records))
    assert [g.winner for g in games] == ["random", "random"]
    assert all(g.termination.value == "crash" for g in games)
    evidence = games[0].evidence
    assert evidence is not None and "boom" in evidence.stderr_tail
    assert evidence.returncode == 1 and any("genmove" in t for t in evidence.transcript)
    shown = invoke("show", str(records), "--game", games[0].game_id)
    assert "Evidence against badbot (exit status 1):" in shown.stdout
    assert "stderr: boom" in shown.stdout and "> " in shown.stdout
    # The list shows every result whole: the evidence is for `--game`.
    listed = invoke("show", str(records)).stdout.splitlines()
    assert len(listed) == 4
    assert all("random wins: badbot forfeits (crash)  " in line for line in listed[2:])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["random", "nosuchengine"], "unknown engine 'nosuchengine'"),
        (["random", "./missing_bot.py"], "does not exist"),
        (["random", "mc", "--tc", "fast"], "cannot read time control 'fast'"),
        (["random", "mc", "--tc", "1+0", "--tc", "2+0", "--tc", "3+0"], "more than twice"),
        (["random", "mc", "--size", "12"], "Atoll size 12 is not supported"),
        (["random", "mc", "--islands", "4", "--size", "40"], "Hex size 40"),
        (["random", "mc", "--records", "/nonexistent/dir/r.jsonl"], "cannot open records file"),
        (["random", "mc", "--fresh"], "--fresh is given without --store"),
        (["random", "mc", "--dask", "not an address"], "is not a Dask scheduler address"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["match", "--engines", str(ENGINES), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_unknown_name_says_which_engines_files_were_read(tmp_path: Path) -> None:
    # ./engines.toml defines the name, but only engines/engines.toml is read unasked.
    (tmp_path / "engines.toml").write_text('[engines.mine]\ncommand = "python3 mine.py"\n')
    done = invoke("match", "mine", "random", cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "unknown engine 'mine': not in the bundled bots (no engines file was read)" in line
    assert f"{tmp_path / 'engines.toml'} is not read" in line
    assert "give --engines engines.toml" in line
    # A tournament file names it with engines_file.
    t = tmp_path / "t.toml"
    t.write_text('[tournament]\nname = "t"\nengines = ["mine", "random"]\n')
    done = invoke("tournament", "run", str(t), cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert 'no engine "mine" in the bundled bots' in line
    assert 'is not read: set engines_file = "engines.toml"' in line
    # With engines/engines.toml there, the message names the file it read.
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "engines.toml").write_text('[engines.other]\ncommand = "x"\n')
    done = invoke("match", "mine", "random", cwd=tmp_path)
    assert "not in engines/engines.toml and the bundled bots" in done.stderr.replace(
        str(tmp_path) + "/", ""
    )


def test_a_missing_engines_file_of_a_tournament_names_its_key(tmp_path: Path) -> None:
    t = tmp_path / "t.toml"
    t.write_text('[tournament]\nname = "t"\nengines_file = "nofile.toml"\nengines = ["a", "b"]\n')
    done = invoke("tournament", "run", str(t), cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "nofile.toml" in line and "cannot read engines file" in line
    assert f"check the path given with {t}: tournament.engines_file" in line
    assert "--engines" not in line


def test_bad_engines_file_names_the_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "e.toml"
    bad.write_text('[engines.x]\ncommand = ["python3", "x.py"]\ncolour = "red"\n')
    result = CliRunner().invoke(main, ["match", "--engines", str(bad), "x", "x"])
    assert result.exit_code == 2
    assert f"{bad}: engines.x: unknown key(s) colour" in result.output
    bad.write_text("[engines.x\n")
    result = CliRunner().invoke(main, ["match", "--engines", str(bad), "x", "x"])
    assert result.exit_code == 2 and "not valid TOML" in result.output
    result = CliRunner().invoke(main, ["match", "--engines", str(tmp_path / "no.toml"), "x", "x"])
    assert result.exit_code == 2 and "cannot read engines file" in result.output


def test_show_reports_bad_files(tmp_path: Path) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"schema": 1}\n')
    result = CliRunner().invoke(main, ["show", str(bad)])
    assert result.exit_code == 2 and f"{bad}:1: not a game record" in result.output
    assert "holds no games" in result.output
    # Foreign lines among good records: the good ones show, each bad one is named.
    good = GameRecord(
        game_id="m-1",
        variant={"size": 11, "islands": 8, "pie": True},
        seat1="a",
        seat2="b",
        tc={"seat1": "1+0", "seat2": "1+0"},
        started="s",
        moves=["f5"],
        winner="a",
        termination=Termination.RESIGN,
    )
    broken_variant = dict(good.to_json(), variant={"size": 12, "islands": 8, "pie": True})
    bad.write_text(
        "\n".join(
            [
                good.dumps(),
                "[1, 2]",
                "null",
                json.dumps(broken_variant),
                "{not json",
                good.dumps().replace("m-1", "m-2"),
            ]
        )
        + "\n"
    )
    done = invoke("show", str(bad))
    assert done.returncode == 0, done.stderr
    assert "m-1" in done.stdout and "m-2" in done.stdout and "Traceback" not in done.stderr
    for line in (2, 3, 4, 5):
        assert f"{bad}:{line}: not a game record" in done.stderr
    assert "Atoll size" in done.stderr or "size" in done.stderr.split(f"{bad}:4:")[1]
    result = CliRunner().invoke(main, ["show", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2 and "cannot read records" in result.output


def test_records_file_is_appended_not_replaced(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text("")
    for _ in range(2):
        done = invoke(
            "match",
            "--engines",
            str(ENGINES),
            "random",
            "skeleton",
            "--games",
            "1",
            "--tc",
            "5+0",
            "--records",
            str(records),
            "-q",
        )
        assert done.returncode == 0, done.stderr
    assert len(list(read_records(records))) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "skeleton",
        pytest.param("random", marks=pytest.mark.slow),  # the bundled bots pass the same checks
        pytest.param("mc-fast", marks=pytest.mark.slow),
    ],
)
def test_check_passes_the_skeleton_and_bundled_bots_on_every_variant(name: str) -> None:
    done = invoke("check", "--engines", str(ENGINES), name, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)
    variants = {r["name"] for r in results if r["name"].startswith("positions:")}
    sizes = [("atoll-8", n) for n in (7, 11, 15, 19, 23)] + [("hex", n) for n in (2, 5, 11, 19, 26)]
    assert variants == {
        f"positions: {kind}/{n}{pie}" for kind, n in sizes for pie in ("", " no-pie")
    }
    assert all(r["passed"] for r in results if r["required"])


CHECKBOTS = ROOT / "tests" / "engines" / "checkbots.py"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("engine", "check", "hint"),
    [
        ("badbot garbage", "positions: atoll-8/11", "send logs to stderr"),
        pytest.param(
            "badbot wrong-id",
            "positions: atoll-8/11",
            "followed by the command's id",
            marks=pytest.mark.slow,
        ),  # the positions checks: one fast case each
        pytest.param(  # illegal answers lose games in test_faults.py, fast
            "badbot illegal-offboard",
            "positions: atoll-8/11",
            "must answer an empty cell",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "checkbots ignores-boardsize",
            "positions: atoll-8/15",
            "rebuild the board on boardsize",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "checkbots ignores-clear-board",
            "positions: atoll-8/11",
            "honour boardsize and clear",
            marks=pytest.mark.slow,
        ),
        ("checkbots transposed", "positions: atoll-8/11", "rank 1 the bottom cell of its file"),
        pytest.param(  # test_check_mistakes.py has a swap without the pie rule, fast
            "checkbots swaps-without-pie",
            "positions: atoll-8/11 no-pie",
            "never answer swap",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "checkbots debug-stdout",
            "positions: atoll-8/11",
            "send logs to stderr",
            marks=pytest.mark.slow,
        ),
        pytest.param(  # test_check.py tells an engine over its clock to budget, fast
            "checkbots overruns-time",
            "within its clock: fischer 1.5 s + 0",
            "budget each move",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "checkbots no-pipelining",
            "start-up handshake",
            "read stdin line by line",
            marks=pytest.mark.slow,
        ),
        # It waits out the quit deadline; an engine ignoring quit is also stopped in
        # test_faults.py (test_no_process_survives_its_engine).
        pytest.param(
            "checkbots ignores-quit",
            "exit on quit",
            "exit after answering quit",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_check_fails_each_bot_author_mistake_with_a_true_hint(
    engine: str, check: str, hint: str
) -> None:
    program, mode = engine.split()
    path = BADBOT if program == "badbot" else CHECKBOTS
    start = time.monotonic()
    done = invoke("check", f"{sys.executable} {path} {mode}", "--json", "--timeout", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert time.monotonic() - start < 15  # seconds, even against an engine ignoring quit
    results = {r["name"]: r for r in json.loads(done.stdout)}
    assert not results[check]["passed"], results[check]
    assert hint in results[check]["hint"]
    for other in ("start-up handshake", "known_command"):
        if other != check and check != "start-up handshake":
            assert results[other]["passed"]  # only the mistake fails, not everything


def test_check_honours_the_engine_definition(tmp_path: Path) -> None:
    book = tmp_path / "engines.toml"
    hexer = [sys.executable, str(ROOT / "tests" / "engines" / "gtphex.py"), "--always-swap"]
    book.write_text(
        f"[engines.hexer]\ncommand = {json.dumps(hexer)}\nislands = [4]\n"
        'sizes = [7, 11]\nswap = "swap-pieces"\n'
        'options = ["param_game allow_swap 1"]\n'
    )
    done = invoke("check", "hexer", "--engines", str(book), "--json")
    assert done.returncode == 0, done.stdout
    results = {r["name"]: r for r in json.loads(done.stdout)}
    assert {n for n in results if n.startswith("positions")} == {
        "positions: hex/7",
        "positions: hex/11",
    }
    assert "not told its time" in results["within its clock: fischer 1.5 s + 0"]["detail"]


@pytest.mark.skipif(GNUGO is None, reason="gnugo is not installed")
def test_an_engine_that_cannot_play_the_variant_is_a_config_error() -> None:
    assert GNUGO is not None
    done = invoke(
        "match",
        f"{GNUGO} --mode gtp",
        "--engines",
        str(ENGINES),
        "random",
        "--islands",
        "4",
        "--size",
        "5",
        "-q",
    )
    assert done.returncode == 2
    assert "GNU Go does not list atoll-islands" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("concurrency", "signum", "as_json"),
    [
        ("1", signal.SIGTERM, True),
        pytest.param("2", signal.SIGTERM, False, marks=pytest.mark.slow),
        pytest.param("2", signal.SIGINT, True, marks=pytest.mark.slow),
    ],
)
def test_a_signal_stops_cleanly_with_the_score_so_far(
    concurrency: str, signum: signal.Signals, as_json: bool, tmp_path: Path
) -> None:
    marker = f"term-{uuid.uuid4().hex[:8]}"
    slow = f"{sys.executable} {BADBOT} slow --ms 20 --name {marker}"
    records = tmp_path / "r.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            slow,
            "random",
            "--engines",
            str(ENGINES),
            "--games",
            "1000000000",
            "--tc",
            "60+0",
            "-c",
            concurrency,
            "--records",
            str(records),
            *(["--json", "--sprt", "elo0=0,elo1=5"] if as_json else []),
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # a billion games start at once: the schedule is not a list
        if line.startswith("Finished game"):
            break
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert "Interrupted; engines were stopped." in err
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert [int(p) for p in left.stdout.split() if running(int(p))] == [], "engines survived"
    lines = records.read_text().splitlines()
    assert lines and all(line.endswith("}") for line in lines)  # whole records only
    rated = [r for r in read_records(records) if not r.void]
    if as_json:
        summary = json.loads(out)
        assert summary["games"] == len(rated) >= 1  # the score matches the records
        assert sum(summary["wins"].values()) == len(rated)
        assert "interrupted" in summary["aborted"]
        # Where the test stood when the match was stopped.
        assert summary["sprt"]["result"] == "inconclusive" and summary["sprt"]["model"] == "pairs"
        assert summary["sprt"]["games"] == 2 * sum(summary["sprt"]["pairs"]) <= len(rated)
    else:
        assert f"over {len(rated)} games" in out and "Match stopped: interrupted" in out


def _children(pid: int, pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid), "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


# Slow: kill -9 of a worker mid-game; the fast run's dead-worker case is in test_warm.py.
@pytest.mark.slow
def test_a_killed_worker_process_takes_its_engines_and_only_its_game(tmp_path: Path) -> None:
    marker = f"wk-{uuid.uuid4().hex[:8]}"
    slow = f"{sys.executable} {BADBOT} slow --ms 20 --name {marker}"
    records = tmp_path / "r.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            slow,
            slow,
            "--games",
            "4",
            "--tc",
            "60+0",
            "-c",
            "2",
            "--records",
            str(records),
            "--json",
            "-q",
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        workers: list[int] = []
        worker = "arbiter.executors.worker"
        assert wait_until(
            lambda: (
                len(workers := _children(proc.pid, worker)) == 2
                and all(len(_children(w, marker)) == 2 for w in workers)
            )
        )
        workers = _children(proc.pid, worker)
        victim = workers[0]
        engines = _children(victim, marker)
        os.kill(victim, signal.SIGKILL)
        assert wait_until(lambda: not any(running(pid) for pid in engines)), "engines survived"
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["games"] == 4 and summary["void"] >= 1
    voids = [r for r in read_records(records) if r.void]
    assert voids and all(r.termination.value == "harness" for r in voids)
    assert "worker process" in voids[0].reason


@pytest.mark.skipif(sandbox.unavailable() is not None, reason="no sandbox (bubblewrap) here")
@pytest.mark.slow
def test_a_worker_that_dies_starting_a_games_engines_names_them_as_the_match_does(
    tmp_path: Path,
) -> None:
    # A match's engines are named from their answers. Sandboxed, each game starts both
    # afresh (slowly); the worker is killed while it starts its first game's two (the
    # check started one there). The void record names the seats as every other record.
    marker = f"wn-{uuid.uuid4().hex[:8]}"
    bot = f"{sys.executable} {BADBOT} slow-start --ms 1500 --name {marker}"
    records = tmp_path / "r.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            bot,
            bot,
            "--games",
            "2",
            "--sandbox",
            "--tc",
            "60+0",
            "-c",
            "2",
            "--records",
            str(records),
            "--json",
            "-q",
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        worker = "arbiter.executors.worker"
        victims: list[int] = []

        def starting_a_game() -> bool:
            victims[:] = [w for w in _children(proc.pid, worker) if len(_children(w, marker)) == 2]
            return bool(victims)

        assert wait_until(starting_a_game, timeout=60)
        os.kill(victims[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    played = list(read_records(records))
    voids = [r for r in played if r.void]
    assert voids and "worker process" in voids[0].reason
    named = {r.seat1 for r in played if not r.void} | {r.seat2 for r in played if not r.void}
    assert named == {marker, f"{marker}#2"}
    assert all({v.seat1, v.seat2} == named for v in voids), [(v.seat1, v.seat2) for v in voids]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_clear_line_not_a_traceback() -> None:
    done = arbiter(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "2",
        "--tc",
        "5+0",
        "--records",
        "/dev/full",
        "-q",
    )
    assert done.returncode == 1
    assert "No space left on device" in done.stderr and "Traceback" not in done.stderr


def test_a_write_that_fails_part_way_leaves_whole_lines_only(tmp_path: Path) -> None:
    """A file size limit makes the kernel accept part of a record and then refuse the rest,
    as a full disk or a quota does."""
    import resource

    records = tmp_path / "r.jsonl"
    first = invoke(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "1",
        "--tc",
        "5+0",
        "--records",
        str(records),
        "-q",
    )
    assert first.returncode == 0, first.stderr
    kept = records.read_bytes()
    limit = len(kept) + 300  # room for part of the next record, not all of it

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            "--engines",
            str(ENGINES),
            "random",
            "skeleton",
            "--games",
            "4",
            "--tc",
            "5+0",
            "--records",
            str(records),
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        preexec_fn=small_files,
    )
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert "cannot append to" in line and "intact" in line and "Traceback" not in line
    assert records.read_bytes() == kept  # the torn line was cut back
    again = invoke(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "1",
        "--tc",
        "5+0",
        "--records",
        str(records),
        "-q",
    )
    assert again.returncode == 0
    assert len(list(read_records(records))) == 2


def test_an_engine_that_cannot_start_stops_the_match_with_its_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken_bot.py"
    broken.write_text("import sys\ndef broken(:\n")
    done = invoke(
        "match",
        f"{sys.executable} {broken}",
        "--engines",
        str(ENGINES),
        "random",
        "--games",
        "4",
        "--tc",
        "5+0",
    )
    assert done.returncode == 1
    assert "broken_bot could not be started" in done.stdout
    assert "SyntaxError" in done.stdout and "exit status 1" in done.stdout
    # It stopped before any game: nothing was played or voided.
    assert "Finished game" not in done.stdout + done.stderr


# Slow: repeated kill -9 of a whole match; tournaments' kill -9 case runs in the fast run.
@pytest.mark.slow
def test_a_match_with_a_store_resumes_after_kill_9_and_refuses_changes(tmp_path: Path) -> None:
    from arbiter.results.store import Store

    store = tmp_path / "m.sqlite"
    engines = [f"slow={sys.executable} {BADBOT} slow --ms 20", f"ok={sys.executable} {BADBOT} ok"]
    args = [
        "match",
        *engines,
        "--size",
        "7",
        "--tc",
        "10+0.1",
        "--seed",
        "4",
        "--store",
        str(store),
    ]

    def stored() -> set[str]:
        with Store.open_read(store) as reader:
            return reader.done_ids()

    with subprocess.Popen(
        [sys.executable, "-m", "arbiter", *args, "--games", "8", "-c", "2"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as first:
        assert first.stderr is not None
        finished = 0
        for line in first.stderr:
            finished += line.startswith("Finished game")
            if finished == 2:
                break
        first.kill()  # SIGKILL: no clean-up at all
    before = stored()
    assert 2 <= len(before) < 8
    # The rest runs in this process (the kill above needed a process of its own).

    # Changed conditions are refused, naming the option and the way out; nothing changes.
    for option, value, where in (
        ("--tc", "5+0.1", "ENGINE1 'slow': --tc"),
        ("--size", "11", "--size"),
        ("--seed", "5", "--seed"),
    ):
        at = args.index(option) + 1
        refused = invoke(*args[:at], value, *args[at + 1 :], "--games", "8")
        assert refused.returncode == 2, refused.stderr
        assert where in refused.stderr and "changed from" in refused.stderr
        assert "--fresh" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    swapped = invoke(*args[:1], engines[1], engines[0], *args[3:], "--games", "8")
    assert swapped.returncode == 2 and "ENGINE1 'ok': name" in swapped.stderr
    assert stored() == before

    done = invoke(*args, "--games", "8", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Started game") == 8 - len(before)  # only the games not stored
    assert f"{len(before)} stored, {8 - len(before)} to play" in done.stderr
    after = stored()
    assert len(after) == 8 and before <= after
    summary = json.loads(done.stdout)
    assert summary["games"] == 8 and summary["resumed"] == len(before)
    assert summary["engines"] == ["slow", "ok"] and sum(summary["wins"].values()) == 8

    # Fewer games is not a change; the store reads as a tournament's does.
    fewer = invoke(*args, "--games", "4", "-q")
    assert fewer.returncode == 0 and "over 4 games" in fewer.stdout
    assert fewer.stderr == ""  # nothing left to play: no engine was even started
    status = invoke("tournament", "status", str(store))
    assert status.returncode == 0, status.stderr
    assert "4 of 4 games played, 0 left" in status.stdout and "slow" in status.stdout
    ratings = invoke("ratings", str(store), "--json")
    assert ratings.returncode == 0
    assert {e["name"] for e in json.loads(ratings.stdout)["engines"]} == {"slow", "ok"}
    assert sum(e["games"] for e in json.loads(ratings.stdout)["engines"]) == 2 * 8
    page = tmp_path / "m.html"
    report = invoke("report", str(store), "-o", str(page))
    assert report.returncode == 0 and "8 rated games" in report.stderr and page.exists()
    records = tmp_path / "m.jsonl"
    export = invoke("tournament", "export", str(store), "--records", str(records))
    assert export.returncode == 0, export.stderr
    assert len([r for r in read_records(records) if not r.void]) == 8
    refused = invoke("tournament", "export", str(store), "--records", str(store))
    assert refused.returncode == 2 and "own files" in refused.stderr


def test_a_match_refuses_a_tournament_store_and_leaves_it_alone(tmp_path: Path) -> None:
    from arbiter.results.store import Store

    path = tmp_path / "t.sqlite"
    with Store.open(path) as store:
        store.begin("league", {"format": "round-robin"}, {"name": "league"}, {})
    before = path.read_bytes()
    result = CliRunner().invoke(
        main, ["match", "--engines", str(ENGINES), "random", "mc", "--store", str(path)]
    )
    assert result.exit_code == 2, result.output
    assert "holds tournament 'league', not a match" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert path.read_bytes() == before


@pytest.mark.slow
def test_a_decided_sprt_in_a_store_plays_nothing_more(tmp_path: Path) -> None:
    store = tmp_path / "m.sqlite"
    args = [
        "match",
        "--engines",
        str(ENGINES),
        "mc-fast",
        "random",
        "--size",
        "7",
        "--tc",
        "5+0.05",
        "--sprt",
        "elo0=0,elo1=400",
        "--store",
        str(store),
        "--json",
    ]
    first = invoke(*args, "--games", "40", "-c", "2")
    assert first.returncode == 0, first.stderr
    decided = json.loads(first.stdout)
    assert decided["sprt"]["result"] == "H1" and decided["games"] < 40
    again = invoke(*args, "--games", "60")
    assert again.returncode == 0, again.stderr
    assert "Started game" not in again.stderr  # the test had decided: no game, no engine
    summary = json.loads(again.stdout)
    assert summary["sprt"] == decided["sprt"] and summary["resumed"] == decided["games"]


@pytest.mark.slow
def test_a_rebuilt_engine_is_refused_on_resuming_a_match_unless_accepted(tmp_path: Path) -> None:
    from arbiter.results.store import Store

    script = tmp_path / "a_bot.py"  # its own script, running the test bot
    script.write_text(
        f"import runpy, sys\nsys.path.insert(0, {str(BADBOT.parent)!r})\n"
        f"runpy.run_path({str(BADBOT)!r}, run_name='__main__')\n"
    )
    store = tmp_path / "m.sqlite"
    args = [
        "match",
        f"a={sys.executable} {script} ok",
        f"b={sys.executable} {BADBOT} ok",
        "--size",
        "7",
        "--store",
        str(store),
        "-q",
    ]
    assert invoke(*args, "--games", "2").returncode == 0
    script.write_text(script.read_text() + "\n# build 2\n")
    refused = invoke(*args, "--games", "4")
    assert refused.returncode == 2, refused.stderr
    changed = "ENGINE1 'a': the script of engine 'a' changed since the store m.sqlite"
    assert changed in refused.stderr
    assert "--rebuilt a" in refused.stderr and "--fresh" in refused.stderr
    wrong = invoke(*args, "--games", "4", "--rebuilt", "c")
    assert wrong.returncode == 2
    assert "--rebuilt names c, not an engine of this match" in wrong.stderr
    accepted = invoke(*args, "--games", "4", "--rebuilt", "a")
    assert accepted.returncode == 0, accepted.stderr
    with Store.open_read(store) as reader:
        assert len(reader.done_ids()) == 4
        assert json.loads(reader.meta("rebuilds") or "[]")[0]["engine"] == "a"


FIRSTCELL = ROOT / "tests" / "engines" / "firstcell.py"


def test_a_match_varies_its_pairs_with_openings_as_a_tournament_does(tmp_path: Path) -> None:
    first = f"{sys.executable} {FIRSTCELL}"
    pair = ("--games", "6", "--size", "7", "--tc", "5+0.05", "-q")

    def openings(records: Path) -> list[tuple[str, ...]]:
        games = list(read_records(records))
        assert len(games) == 6 and not any(g.void for g in games)
        assert games[0].moves[: games[0].opening] == games[1].moves[: games[1].opening]
        return [tuple(g.moves[: g.opening]) for g in games[::2]]

    # By default each pair starts from its own random stone: two deterministic
    # engines no longer replay one pair of games; the same seed draws the same stones.
    for name in ("a", "b"):
        done = invoke(
            "match",
            first,
            first,
            *pair,
            "--seed",
            "7",
            "--records",
            str(tmp_path / f"{name}.jsonl"),
        )
        assert done.returncode == 0, done.stderr
    drawn = openings(tmp_path / "a.jsonl")
    assert drawn == openings(tmp_path / "b.jsonl")
    assert all(len(o) == 1 for o in drawn) and len(set(drawn)) > 1
    # --random-openings 0 plays from the empty board; without the pie rule, N plies.
    done = invoke(
        "match",
        first,
        first,
        *pair,
        "--random-openings",
        "0",
        "--records",
        str(tmp_path / "empty.jsonl"),
    )
    assert done.returncode == 0, done.stderr
    assert all(g.opening == 0 for g in read_records(tmp_path / "empty.jsonl"))
    done = invoke(
        "match",
        first,
        first,
        *pair,
        "--random-openings",
        "3",
        "--no-pie",
        "--records",
        str(tmp_path / "three.jsonl"),
    )
    assert done.returncode == 0, done.stderr
    assert all(len(o) == 3 for o in openings(tmp_path / "three.jsonl"))
    # An openings file: one line a pair, in order, cycling.
    book = tmp_path / "book.txt"
    book.write_text("d4  # the centre\nb2 swap\n")
    done = invoke(
        "match",
        first,
        first,
        *pair,
        "--openings",
        str(book),
        "--records",
        str(tmp_path / "book.jsonl"),
    )
    assert done.returncode == 0, done.stderr
    assert openings(tmp_path / "book.jsonl") == [("d4",), ("b2", "swap"), ("d4",)]
    # Mistakes are one line, exit 2, naming the file and line.
    book.write_text("d4 e5\n")
    done = invoke("match", first, first, *pair, "--openings", str(book))
    assert done.returncode == 2 and f"{book}" in done.stderr and "line 1" in done.stderr
    done = invoke("match", first, first, *pair, "--openings", str(book), "--random-openings", "2")
    assert done.returncode == 2 and "choose one" in done.stderr


def test_a_match_store_refuses_other_openings_on_resume(tmp_path: Path) -> None:
    first = f"{sys.executable} {FIRSTCELL}"
    store = tmp_path / "m.sqlite"
    args = ("match", first, first, "--games", "2", "--size", "7", "--store", str(store), "-q")
    assert invoke(*args).returncode == 0
    done = invoke(*args[:4], "4", *args[5:], "--random-openings", "2")
    assert done.returncode == 2 and "--random-openings" in done.stderr
    assert "--fresh" in done.stderr
    assert invoke(*args[:4], "4", *args[5:]).returncode == 0  # the same openings: resumed


@pytest.mark.slow
def test_more_games_than_cores_is_warned_about_once(tmp_path: Path) -> None:
    # One engine of a game thinks at a time: as many games as cores fit (the demo's two
    # games on two cores), one more does not.
    cores = len(os.sched_getaffinity(0))
    first = f"{sys.executable} {FIRSTCELL}"
    more = str(cores + 1)
    done = invoke("match", first, first, "--games", more, "--size", "7", "-q", "-c", more)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("warning: --concurrency") == 1, done.stderr
    assert f"plays {more} games at once on {cores} core" in done.stderr
    assert f"at most {cores} game" in done.stderr
    fit = str(cores)
    done = invoke("match", first, first, "--games", fit, "--size", "7", "-q", "-c", fit)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    # Only the games there are to play count: one game needs one slot.
    done = invoke("match", first, first, "--games", "1", "--size", "7", "-q", "-c", "8")
    assert "warning" not in done.stderr


def test_a_match_refuses_more_random_plies_than_its_board_allows() -> None:
    first = f"{sys.executable} {FIRSTCELL}"
    done = invoke("match", first, first, "--size", "7", "--no-pie", "--random-openings", "7")
    assert done.returncode == 2 and "--random-openings" in done.stderr
    assert "too many for size 7" in done.stderr and "Traceback" not in done.stderr
