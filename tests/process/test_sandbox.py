"""Hostile engines against the sandbox, through the real CLI and real processes.

Each attack runs twice where that is safe: with `--sandbox`, where it must be contained
(the opponent never loses because of it, the referee finishes and records the game, no
file outside the scratch folder changes, nothing connects, nothing survives), and
without, where the test shows the attack working, so that these tests can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from commands import arbiter as _arbiter
from commands import invoke
from paths import BADBOT, ROOT
from processes import pids_matching, running, wait_until
from stores import read_store

from arbiter.engines import sandbox
from arbiter.results.records import GameRecord, read_records
from arbiter.results.store import Store

ATTACKER = ROOT / "tests" / "engines" / "attacker.py"

needs_bwrap = pytest.mark.skipif(
    sandbox.unavailable() is not None,
    reason=f"no sandbox here: {sandbox.unavailable()}",
)


@dataclass
class Played:
    returncode: int
    stderr: str
    records: list[GameRecord]
    bad_lines: list[Any]
    token: str
    log: str = ""  # the harness's log: it keeps the end of each engine's stderr

    @property
    def record(self) -> GameRecord:
        assert len(self.records) == 1, (self.returncode, self.stderr)
        return self.records[0]


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def play(
    tmp_path: Path,
    attack: str,
    *,
    sandboxed: bool,
    limits: dict[str, int] | None = None,
    extra: tuple[str, ...] = (),
    tc: str = "30+0",
) -> Played:
    """One game, the attacker in seat 1 against a well-behaved victim."""
    token = f"tok{uuid.uuid4().hex[:10]}"
    records = tmp_path / f"{token}.jsonl"
    extra = tuple(w.replace("RECORDS", str(records)) for w in extra)
    attacker = ["{python}", str(ATTACKER), attack, "--token", token, *extra]
    book = tmp_path / "engines.toml"
    lines = ["[engines.attacker]", f"command = {_toml(attacker)}"]
    if limits:
        lines.append(f"limits = {_toml(limits)}")
    lines += [
        "[engines.victim]",
        f"command = {_toml(['{python}', str(BADBOT), 'ok', '--name', f'victim-{token}'])}",
    ]
    book.write_text("\n".join(lines) + "\n")
    log = tmp_path / f"{token}.log"
    args = [
        sys.executable,
        "-m",
        "arbiter",
        "match",
        "attacker",
        "victim",
        "--engines",
        str(book),
        "-n",
        "1",
        "--tc",
        tc,
        "--size",
        "7",
        "--random-openings",  # the attacker places the first stone
        "0",
        "--records",
        str(records),
        "-q",
        "--log",
        str(log),
    ]
    if sandboxed:
        args.append("--sandbox")
    done = subprocess.run(
        args, cwd=tmp_path, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
    )
    bad: list[Any] = []
    found = list(read_records(records, bad=bad)) if records.exists() else []
    said = log.read_text(errors="replace") if log.exists() else ""
    return Played(done.returncode, done.stderr, found, bad, token, said)


def attack_said(played: Played, attack: str, *outcomes: str) -> str:
    """What the attacker reported of its attack (its stderr, kept in the harness's log
    when the engine was closed), asserted to be one of `outcomes`: a contained attack
    must have been tried, so an attacker that broke before attacking fails the test."""
    said = [line for line in played.log.splitlines() if line.startswith(f"attack {attack}:")]
    assert said, f"the attacker never reported its {attack!r} attack:\n{played.log[-3000:]}"
    report = said[-1]
    assert any(outcome in report for outcome in outcomes), report
    return report


def victim_not_harmed(played: Played) -> None:
    """The referee finished and recorded the game, and the victim did not lose a fault."""
    assert played.returncode == 0, played.stderr
    record = played.record
    assert not played.bad_lines
    assert not record.void
    assert record.winner is not None
    if record.winner != record.seat2:  # the victim lost: only ever on the board
        assert record.termination == "connection", record


# -- attacks on the other processes ----------------------------------------------------------


@needs_bwrap
def test_killing_the_opponent_is_contained(tmp_path: Path) -> None:
    played = play(tmp_path, "kill-opponent", sandboxed=True)
    victim_not_harmed(played)
    attack_said(played, "kill-opponent", "no target found", "refused")


@pytest.mark.slow  # the control: the attack works where nothing contains it
def test_without_the_sandbox_killing_the_opponent_works(tmp_path: Path) -> None:
    played = play(tmp_path, "kill-opponent", sandboxed=False)
    assert played.record.winner == played.record.seat1
    assert played.record.termination == "crash"


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize(
    "attack", ["kill-referee", pytest.param("term-referee", marks=pytest.mark.slow)]
)
def test_signalling_the_referee_is_contained(tmp_path: Path, attack: str) -> None:
    played = play(tmp_path, attack, sandboxed=True)
    victim_not_harmed(played)
    attack_said(played, attack, "no target found", "refused")


@pytest.mark.slow  # the control: the attack works where nothing contains it
@pytest.mark.parametrize(("attack", "status"), [("kill-referee", -9), ("term-referee", 143)])
def test_without_the_sandbox_signalling_the_referee_erases_the_game(
    tmp_path: Path, attack: str, status: int
) -> None:
    played = play(tmp_path, attack, sandboxed=False)
    assert played.returncode == status
    assert played.records == []


@needs_bwrap
def test_writing_into_the_opponents_pipe_is_contained(tmp_path: Path) -> None:
    played = play(tmp_path, "inject", sandboxed=True)
    victim_not_harmed(played)
    attack_said(played, "inject", "no target found", "refused")


@pytest.mark.slow  # the control: the attack works where nothing contains it
def test_without_the_sandbox_writing_into_the_opponents_pipe_works(tmp_path: Path) -> None:
    played = play(tmp_path, "inject", sandboxed=False)
    record = played.record
    assert record.winner == record.seat1
    assert record.termination != "connection"
    assert record.evidence is not None and "victim" in record.evidence.engine


# -- files, network, processes -------------------------------------------------------------


def _write_targets(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """A file outside the scratch folder, and the records file itself (RECORDS: the
    attacker is told the path, as it could read it from the referee's command line)."""
    target = tmp_path / "outside.txt"
    target.write_text("original\n")
    return target, ("--path", str(target), "--path", "RECORDS")


@needs_bwrap
@pytest.mark.parametrize("attack", ["write", pytest.param("remount", marks=pytest.mark.slow)])
def test_writing_outside_the_scratch_folder_and_to_the_records_is_refused(
    tmp_path: Path, attack: str
) -> None:
    target, extra = _write_targets(tmp_path)
    played = play(tmp_path, attack, sandboxed=True, extra=extra)
    victim_not_harmed(played)  # also: no forged line among the records
    report = attack_said(played, attack, "refused")
    assert "written" not in report
    assert target.read_text() == "original\n"


@pytest.mark.slow  # the control: the attack works where nothing contains it
def test_without_the_sandbox_files_outside_and_the_records_are_written(tmp_path: Path) -> None:
    target, extra = _write_targets(tmp_path)
    played = play(tmp_path, "write", sandboxed=False, extra=extra)
    assert "forged" in target.read_text()
    assert played.bad_lines  # the forged line


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    return server


def _accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@needs_bwrap
def test_no_network_not_even_loopback_to_the_host(tmp_path: Path) -> None:
    with _listener() as server:
        port = str(server.getsockname()[1])
        played = play(tmp_path, "connect", sandboxed=True, extra=("--port", port))
        victim_not_harmed(played)
        attack_said(played, "connect", "refused")
        assert not _accepted(server)


@pytest.mark.slow  # the control: the attack works where nothing contains it
def test_without_the_sandbox_the_engine_reaches_the_network(tmp_path: Path) -> None:
    with _listener() as server:
        port = str(server.getsockname()[1])
        play(tmp_path, "connect", sandboxed=False, extra=("--port", port))
        assert _accepted(server)


@pytest.mark.parametrize("sandboxed", [pytest.param(True, marks=needs_bwrap), pytest.param(False)])
def test_no_process_escapes_into_a_new_session(tmp_path: Path, sandboxed: bool) -> None:
    # Without the sandbox the harness's reaper already finds escaped children while it
    # lives; the sandbox's pid namespace also holds when the harness is killed.
    played = play(tmp_path, "escape", sandboxed=sandboxed)
    victim_not_harmed(played)
    attack_said(played, "escape", "started")
    assert wait_until(
        lambda: not [p for p in pids_matching(played.token) if running(p)], timeout=10
    )


# -- resource limits --------------------------------------------------------------------------


def _lost_by(played: Played, verdict: str) -> GameRecord:
    assert played.returncode == 0, played.stderr
    record = played.record
    assert record.winner == record.seat2, record  # the victim wins, nothing else changes
    assert record.termination == verdict, (record.termination, record.reason)
    return record


@pytest.mark.slow
@needs_bwrap
def test_memory_past_the_limit_loses_by_memory(tmp_path: Path) -> None:
    played = play(tmp_path, "memory", sandboxed=True, limits={"memory_mb": 96})
    if "memory" in sandbox.cgroup_support():
        record = _lost_by(played, "memory")
        assert record.evidence is not None and record.evidence.limit is not None
        assert record.evidence.limit["limit"] == "memory"
        assert record.evidence.limit["oom_kill"] >= 1
    else:  # an address-space rlimit: the engine sees allocations fail and dies
        _lost_by(played, "crash")


@pytest.mark.slow
@needs_bwrap
def test_cpu_past_the_limit_loses_by_cpu(tmp_path: Path) -> None:
    record = _lost_by(play(tmp_path, "cpu", sandboxed=True, limits={"cpu_s": 1}), "cpu")
    assert record.evidence is not None and record.evidence.limit is not None
    assert (record.evidence.limit["limit"], record.evidence.limit["limit_s"]) == ("cpu", 1)


@pytest.mark.slow
def test_the_cpu_limit_holds_without_the_sandbox_too(tmp_path: Path) -> None:
    _lost_by(play(tmp_path, "cpu", sandboxed=False, limits={"cpu_s": 1}), "cpu")


@needs_bwrap
@pytest.mark.skipif(
    "processes" not in sandbox.cgroup_support(), reason="no writable pids cgroup here"
)
def test_a_fork_bomb_stops_at_the_processes_limit(tmp_path: Path) -> None:
    played = play(tmp_path, "fork", sandboxed=True, limits={"processes": 12})
    record = _lost_by(played, "processes")
    assert record.evidence is not None and record.evidence.limit is not None
    assert record.evidence.limit["pids_refused"] >= 1
    assert "refused after" in record.evidence.stderr_tail


@pytest.mark.slow
@needs_bwrap
def test_a_file_past_the_disk_limit_loses_by_disk(tmp_path: Path) -> None:
    _lost_by(play(tmp_path, "disk", sandboxed=True, limits={"disk_mb": 4}), "disk")


@pytest.mark.slow
@needs_bwrap
def test_the_scratch_folder_is_size_capped(tmp_path: Path) -> None:
    record = _lost_by(play(tmp_path, "fill", sandboxed=True, limits={"disk_mb": 8}), "crash")
    assert "stopped after" in record.evidence.stderr_tail  # type: ignore[union-attr]
    said = record.evidence.stderr_tail  # type: ignore[union-attr]
    assert int(said.split("stopped after ")[1].split()[0]) <= 8


@pytest.mark.slow
@needs_bwrap
def test_endless_output_loses_without_harming_anyone(tmp_path: Path) -> None:
    played = play(tmp_path, "flood", sandboxed=True, tc="5+0")
    assert played.returncode == 0, played.stderr
    record = played.record
    assert record.winner == record.seat2
    assert record.termination in ("protocol", "time")


# -- definitions, tournaments, and a sandbox that cannot run ---------------------------------


def _engine(name: str, argv: list[str], extra: str = "") -> str:
    return f"[[engine]]\nname = {json.dumps(name)}\ncommand = {_toml(argv)}\n{extra}\n"


@pytest.mark.parametrize(
    ("table", "where", "what"),
    [
        ("limits = { memory = 5 }", "tournament.limits", "unknown limit(s) memory"),
        ("limits = { cpu_s = -1 }", "tournament.limits.cpu_s", "positive whole number"),
        ("limits = { processes = 2 }", "tournament.limits.processes", "at least 3"),
        ('sandbox = "yes"', "tournament.sandbox", "sandbox"),
    ],
    ids=["unknown", "negative", "processes", "not-bool"],
)
def test_bad_sandbox_settings_are_one_line_and_exit_2(
    tmp_path: Path, table: str, where: str, what: str
) -> None:
    bots = [_engine(n, [sys.executable, str(BADBOT), "ok"]) for n in "ab"]
    path = tmp_path / "t.toml"
    path.write_text(f'[tournament]\nname = "t"\n{table}\n' + "".join(bots))
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert where in line and what in line, line


def test_an_engine_limits_table_is_checked_where_it_is_written(tmp_path: Path) -> None:
    bots = [
        _engine("a", [sys.executable, str(BADBOT), "ok"], "limits = { disk_mb = 0 }"),
        _engine("b", [sys.executable, str(BADBOT), "ok"]),
    ]
    path = tmp_path / "t.toml"
    path.write_text('[tournament]\nname = "t"\n' + "".join(bots))
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2
    assert "engine 'a'.limits.disk_mb" in done.stderr


def test_asking_for_the_sandbox_without_bubblewrap_stops_before_any_game(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {**os.environ, "PATH": str(bare)}
    records = tmp_path / "r.jsonl"
    done = _arbiter(
        "match",
        f"{sys.executable} {BADBOT} ok",
        f"{sys.executable} {BADBOT} ok",
        "--sandbox",
        "--records",
        str(records),
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "bubblewrap (bwrap) is not installed" in line and "apt-get install bubblewrap" in line
    assert not records.exists()  # nothing played, nothing written


@pytest.mark.slow
@needs_bwrap
def test_a_sandboxed_tournament_keeps_its_store_from_its_engines(tmp_path: Path) -> None:
    store = tmp_path / "t.sqlite"
    attacker = [
        sys.executable,
        str(ATTACKER),
        "write",
        "--path",
        str(store),
        "--path",
        f"{store}-wal",
    ]
    bots = [_engine("attacker", attacker), _engine("victim", [sys.executable, str(BADBOT), "ok"])]
    path = tmp_path / "t.toml"
    head = (
        '[tournament]\nname = "t"\nrounds = 2\nconcurrency = 2\ntc = "10+0.1"\nsize = 7\n'
        "sandbox = true\nlimits = { memory_mb = 512, cpu_s = 60 }\n"
    )
    path.write_text(head + "".join(bots))
    done = _arbiter("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = invoke("tournament", "status", str(path), "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert b"forged" not in store.read_bytes()
    with Store.open_read(store) as read:
        assert read.integrity() == [] and read.games_stored() == 4
        definition = json.loads(str(read.meta("definition")))
    assert not read_store(store).damage
    assert definition["engines"]["victim"]["sandbox"] is True
    assert definition["engines"]["victim"]["limits"] == {"memory_mb": 512, "cpu_s": 60}
    # Changing a limit changes the conditions of play: refused on resume, like a tc.
    path.write_text(head.replace("cpu_s = 60", "cpu_s = 61") + "".join(bots))
    refused = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert refused.returncode == 2
    assert "engine 'attacker'.limits" in refused.stderr and "--fresh" in refused.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "sandboxed",
    [
        pytest.param(True, marks=needs_bwrap),
        pytest.param(False, marks=pytest.mark.slow),  # the control: it survives without it
    ],
)
def test_an_escaped_process_with_no_environment_and_a_killed_harness(
    tmp_path: Path, sandboxed: bool
) -> None:
    # A child that left its session and cleared its environment is out of the reach of
    # the harness's watchdog once the harness is gone; in the sandbox's pid namespace it
    # dies with bubblewrap's process group, which the watchdog kills.
    token = f"tok{uuid.uuid4().hex[:10]}"
    attacker = f"{sys.executable} {ATTACKER} escape --token {token}"
    slow = f"{sys.executable} {BADBOT} slow --ms 100 --name victim-{token}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            attacker,
            slow,
            "-n",
            "4",
            "--tc",
            "60+0",
            "--size",
            "7",
            "-q",
            *(["--sandbox"] if sandboxed else []),
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    child = f"time.sleep.600. {token}"  # a regular expression, for pgrep
    try:
        assert wait_until(lambda: bool(pids_matching(child)), timeout=30)
        escaped = pids_matching(child)
        proc.kill()
        proc.wait()
        gone = wait_until(lambda: not any(running(p) for p in escaped), timeout=3)
        assert gone == sandboxed
    finally:
        proc.kill()
        proc.wait()
        for pid in pids_matching(child):
            os.kill(pid, 9)


@needs_bwrap
@pytest.mark.slow  # a long lifetime: a move of more than 10 s
def test_a_sandboxed_game_longer_than_an_idle_thread_lives(tmp_path: Path) -> None:
    # trio starts processes from worker threads that exit after 10 s idle; a sandbox
    # tied to the death of the thread that started it would be killed mid-game.
    played = play(tmp_path, "think", sandboxed=True, tc="60+0")
    victim_not_harmed(played)
    assert played.record.termination == "connection", played.record.reason
    assert played.record.move_ms[0] > 10_500


@pytest.mark.slow  # check on its own and sandboxed games are in the fast run
def test_check_runs_an_engine_the_way_a_sandboxed_tournament_will(tmp_path: Path) -> None:
    engine = f"{sys.executable} {BADBOT} ok"
    if sandbox.unavailable() is None:
        done = _arbiter("check", "--sandbox", engine, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "all required checks passed" in done.stdout
    bare = tmp_path / "bin"
    bare.mkdir()
    refused = _arbiter(
        "check", "--sandbox", engine, cwd=tmp_path, env={**os.environ, "PATH": str(bare)}
    )
    assert refused.returncode == 2 and "bubblewrap (bwrap) is not installed" in refused.stderr


# -- what a sandboxed engine can read ----------------------------------------------------------

SNOOP = ROOT / "tests" / "engines" / "snoop.py"
SKELETON = ROOT / "arbiter" / "bots" / "skeleton.py"
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
AS_ROOT = os.geteuid() == 0


def _bot_folder(parent: Path, name: str) -> Path:
    """A bot's own folder holding the snoop and the skeleton it imports."""
    folder = parent / name
    folder.mkdir(parents=True, exist_ok=True)
    for source in (SNOOP, SKELETON):
        (folder / source.name).write_bytes(source.read_bytes())
    return folder


@dataclass
class Event:
    """An organiser's event folder: bots side by side, the organiser's home and another
    event's store elsewhere, weights in a data folder."""

    folder: Path
    home: Path
    secrets: dict[str, Path]  # what the snoop must not read
    allowed: dict[str, str]  # what it must read: its own file (relative), its read path


def _event(tmp_path: Path) -> Event:
    folder = tmp_path / "event"
    bots = folder / "bots"
    snoop = _bot_folder(bots, "snoop")
    (snoop / "own.txt").write_text("own notes\n")
    alice = bots / "alice"
    alice.mkdir()
    (alice / "weights.bin").write_text("alice's network\n")
    (bots / "rival_book.bin").write_text("rival's opening book\n")
    home = tmp_path / "home" / "organiser"
    home.mkdir(parents=True)
    (home / "secret.txt").write_text("organiser's key\n")
    other = tmp_path / "other-event"
    other.mkdir()
    with sqlite3.connect(other / "other.sqlite") as con:
        con.execute("CREATE TABLE games (id TEXT)")
    data = tmp_path / "data"
    data.mkdir()
    (data / "weights.bin").write_text("snoop's weights\n")
    secrets = {
        "sibling folder": alice / "weights.bin",
        "same parent folder": bots / "rival_book.bin",
        "organiser's home": home / "secret.txt",
        "shadow": Path("/etc/shadow"),
        "another event's store": other / "other.sqlite",
        "tournament file": folder / "engines.toml",
    }
    if AS_ROOT:  # in its own folder, but only root may read it
        (snoop / "root-only.txt").write_text("root's\n")
        (snoop / "root-only.txt").chmod(0o600)
        secrets["root-only file"] = snoop / "root-only.txt"
    return Event(
        folder,
        home,
        secrets,
        {"own.txt": "own notes", str(data / "weights.bin"): "snoop's weights"},
    )


def _snoop_book(
    event: Event, *, read: list[str], extra: str = "", writes: tuple[str, ...] = ()
) -> Path:
    targets = [*event.allowed, *(str(p) for p in event.secrets.values())]
    env = {"SNOOP_TARGETS": os.pathsep.join(targets), "SNOOP_WRITES": os.pathsep.join(writes)}
    book = event.folder / "engines.toml"
    book.write_text(
        "[engines.snoop]\n"
        f"command = {_toml([SYSTEM_PYTHON, 'bots/snoop/snoop.py'])}\n"
        f"env = {_toml(env)}\n"
        f"read = {_toml(read)}\n{extra}"
        "[engines.victim]\n"
        f"command = {_toml(['{python}', str(BADBOT), 'ok', '--name', 'victim'])}\n"
    )
    return book


def _snooped(event: Event, *, sandboxed: bool) -> tuple[dict[str, str], str]:
    """What the snoop said, path by path ("read: ..." or "refused: ..."), and its ids."""
    records = event.folder.parent / "snoop.jsonl"
    records.unlink(missing_ok=True)
    args = [
        "match",
        "snoop",
        "victim",
        "--engines",
        "engines.toml",
        "-n",
        "1",
        "--size",
        "7",
        "--tc",
        "30+0",
        "--records",
        str(records),
        "-q",
    ]
    done = _arbiter(
        *args,
        *(["--sandbox"] if sandboxed else []),
        cwd=event.folder,
        env={**os.environ, "HOME": str(event.home), "ORGANISER_API_TOKEN": "secret"},
    )
    assert done.returncode == 0, done.stderr
    [record] = read_records(records)
    assert record.termination == "crash" and record.evidence is not None, record
    said: dict[str, str] = {}
    ids = ""
    for line in record.evidence.stderr_tail.splitlines():
        for verdict in ("read", "refused", "wrote", "unwritten"):
            if line.startswith(f"snoop {verdict} "):
                path, _, rest = line[len(f"snoop {verdict} ") :].partition(": ")
                key = path if verdict in ("read", "refused") else f"write {path}"
                said[key] = f"{verdict}: {rest}"
        if line.startswith("snoop uid "):
            ids = line
        if line.startswith("snoop environ "):
            said["environ"] = line
    return said, ids


@pytest.mark.slow
@needs_bwrap
def test_a_sandboxed_engine_reads_its_own_files_and_nothing_else(tmp_path: Path) -> None:
    event = _event(tmp_path)
    weights = next(p for p in event.allowed if os.path.isabs(p))
    writes = ("/snoop-was-here", "/etc/snoop-was-here", "own-write.txt", weights)
    _snoop_book(event, read=[weights], writes=writes)
    said, ids = _snooped(event, sandboxed=True)
    for path in writes:  # the root, /etc, its own folder and its read path: all read-only
        assert said[f"write {path}"].startswith("unwritten"), (path, said)
    assert not (event.folder / "bots" / "snoop" / "own-write.txt").exists()
    for path, text in event.allowed.items():  # own.txt is relative: it starts in its folder
        assert said[path] == f"read: {text}", (path, said)
    for what, path in event.secrets.items():
        assert said[str(path)].startswith("refused"), (what, said[str(path)])
    environ = said["environ"].split()[2:]
    assert "ORGANISER_API_TOKEN" not in environ and "HOME" in environ, environ
    assert "SNOOP_TARGETS" in environ  # its definition's own env
    uid = ids.split()[2]
    assert uid == (str(sandbox.ENGINE_UID) if AS_ROOT else str(os.getuid())), ids
    assert ids.endswith(f"cwd {event.folder / 'bots' / 'snoop'}"), ids
    if AS_ROOT:
        assert uid != "0"
        assert said[str(event.secrets["root-only file"])] == "refused: Permission denied"


@pytest.mark.slow  # the control: the attack works where nothing contains it
def test_without_the_sandbox_the_snoop_reads_everything(tmp_path: Path) -> None:
    event = _event(tmp_path)
    _snoop_book(event, read=[], writes=("own-write.txt",))
    said, ids = _snooped(event, sandboxed=False)
    assert said["write own-write.txt"] == "wrote: ok"
    for what, path in event.secrets.items():
        if what != "shadow" or AS_ROOT:
            assert said[str(path)].startswith("read"), (what, said[str(path)])
    assert ids.split()[2] == str(os.getuid())
    assert "ORGANISER_API_TOKEN" in said["environ"].split()  # the whole environment


@pytest.mark.slow
@needs_bwrap
def test_an_engine_refused_its_weights_names_the_path_and_the_read_key(tmp_path: Path) -> None:
    event = _event(tmp_path)
    weights = next(p for p in event.allowed if os.path.isabs(p))
    _snoop_book(event, read=[], extra=f"env = {_toml({'SNOOP_REQUIRE': weights})}\n")
    book = event.folder / "engines.toml"
    book.write_text(book.read_text().replace("env = { SNOOP_TARGETS", "#"))
    done = _arbiter(
        "match",
        "snoop",
        "victim",
        "--engines",
        str(book),
        "-n",
        "1",
        "--size",
        "7",
        "--sandbox",
        "-q",
        cwd=event.folder,
    )
    assert done.returncode == 1
    assert f"could not open {weights!r}" in done.stdout + done.stderr
    assert f'add read = ["{weights}"]' in done.stdout + done.stderr
    book.write_text(book.read_text().replace("read = []", f"read = {_toml([weights])}"))
    done = _arbiter(
        "match",
        "snoop",
        "victim",
        "--engines",
        str(book),
        "-n",
        "1",
        "--size",
        "7",
        "--sandbox",
        "-q",
        cwd=event.folder,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ('"/data"', "read must be a list of paths"),
        ("[1]", "read must be a list of paths"),
        ('["no/such/weights.bin"]', "read path 'no/such/weights.bin' does not exist"),
        ('["/"]', "must not hold /"),
    ],
    ids=["not-a-list", "not-strings", "missing", "root"],
)
def test_a_bad_read_key_is_one_line_and_exit_2(tmp_path: Path, value: str, what: str) -> None:
    bots = [
        _engine("a", [sys.executable, str(BADBOT), "ok"], f"read = {value}"),
        _engine("b", [sys.executable, str(BADBOT), "ok"]),
    ]
    path = tmp_path / "t.toml"
    path.write_text('[tournament]\nname = "t"\n' + "".join(bots))
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert f"{path}: engine 'a'.read" in line and what in line, line


@needs_bwrap
@pytest.mark.slow
def test_engines_sharing_a_folder_are_warned_about(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    one, two = _bot_folder(bots, "one"), _bot_folder(bots, "two")
    (one / "other_bot.py").write_bytes(SKELETON.read_bytes())  # two programs, one folder
    # c and c-seed are one program with other arguments: no secret between them.
    engines = [
        _engine("a", [SYSTEM_PYTHON, f"{one}/skeleton.py"]),
        _engine("b", [SYSTEM_PYTHON, f"{one}/other_bot.py"]),
        _engine("c", [SYSTEM_PYTHON, f"{two}/skeleton.py"]),
        _engine("c-seed", [SYSTEM_PYTHON, f"{two}/skeleton.py", "-s", "2"]),
    ]
    path = tmp_path / "t.toml"
    path.write_text(
        '[tournament]\nname = "t"\nsandbox = true\nsize = 7\ntc = "10+0.1"\n' + "".join(engines)
    )
    done = _arbiter("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: sandboxed engines 'a' and 'b' both read {one}, so each can"
        " read the other's files there; give each engine a folder of its own"
        " to keep them apart"
    ], done.stderr


def test_seeds_of_one_program_share_its_folder_without_a_warning(tmp_path: Path) -> None:
    from arbiter.engines.config import shared_folder_warnings
    from arbiter.engines.process import EngineSpec

    folder = _bot_folder(tmp_path / "bots", "one")
    (folder / "other_bot.py").write_bytes(SKELETON.read_bytes())

    def spec(script: str, *args: str) -> EngineSpec:
        return EngineSpec((sys.executable, str(folder / script), *args), sandbox=True)

    seeds = {f"seed{n}": spec("skeleton.py", "--seed", str(n)) for n in range(3)}
    assert shared_folder_warnings(seeds) == []
    # Another program in the same folder may read their files, and they its.
    [line] = shared_folder_warnings({**seeds, "other": spec("other_bot.py", "--seed", "1")})
    assert "'seed0' and 'other' both read" in line


@needs_bwrap
@pytest.mark.skipif(not AS_ROOT, reason="the engine runs as another user only under root")
def test_a_program_folder_its_user_cannot_read_stops_before_any_game(tmp_path: Path) -> None:
    folder = _bot_folder(tmp_path / "bots", "private")
    folder.chmod(0o700)
    records = tmp_path / "r.jsonl"
    done = _arbiter(
        "match",
        "--sandbox",
        f"{SYSTEM_PYTHON} {folder}/snoop.py",
        f"{sys.executable} {BADBOT} ok",
        "--records",
        str(records),
        cwd=tmp_path,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert f"its program folder '{folder}' cannot be read by uid 65534" in line, line
    assert "chmod o+rX" in line
    assert not records.exists()


# -- real engines still run sandboxed ----------------------------------------------------------


def _played_cleanly(done: subprocess.CompletedProcess[str], records: Path) -> list[GameRecord]:
    assert done.returncode == 0, done.stdout + done.stderr
    found = list(read_records(records))
    assert found and all(not r.void and r.termination == "connection" for r in found), found
    return found


@needs_bwrap
@pytest.mark.slow
def test_the_bundled_bots_play_sandboxed(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    done = _arbiter(
        "match",
        "random",
        "heuristic",
        "--sandbox",
        "-n",
        "2",
        "--size",
        "7",
        "--records",
        str(records),
        "-q",
        cwd=tmp_path,
    )
    _played_cleanly(done, records)


def _play_from_a_venv(tmp_path: Path, venv: Path) -> None:
    """A skeleton bot in its own folder, run sandboxed by the Python of `venv`."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    folder = tmp_path / "bots" / "mine"
    folder.mkdir(parents=True)
    (folder / "bot.py").write_bytes(SKELETON.read_bytes())
    records = tmp_path / "r.jsonl"
    done = _arbiter(
        "match",
        "--sandbox",
        f"mine={venv}/bin/python bots/mine/bot.py",
        f"{sys.executable} {BADBOT} ok",
        "-n",
        "2",
        "--size",
        "7",
        "--records",
        str(records),
        "-q",
        cwd=tmp_path,
    )
    _played_cleanly(done, records)


@pytest.mark.slow
@needs_bwrap
def test_a_python_bot_from_a_venv_outside_the_project_plays_sandboxed(tmp_path: Path) -> None:
    _play_from_a_venv(tmp_path, tmp_path / "venv")


@needs_bwrap
@pytest.mark.slow  # another venv (one plays in the default run)
def test_a_world_readable_venv_under_tmp_plays_beside_staged_folders(tmp_path: Path) -> None:
    # A CI clone's venv in /tmp that the engine's user can read, while another folder
    # the engine needs (this test's private folder, a Python under /root) is staged:
    # staging hides the launcher's /tmp, so the venv must be staged as well.
    shared = Path(tempfile.mkdtemp(prefix="arbiter-venv-", dir="/tmp"))
    try:
        shared.chmod(0o755)
        _play_from_a_venv(tmp_path, shared / "venv")
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _compile(folder: Path, compiler: str, source: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    instant = folder / "instant_bot.o"
    subprocess.run(
        [
            "cc",
            "-O2",
            "-Dmain=instant_main",
            "-c",
            "-o",
            str(instant),
            str(ROOT / "bench" / "instant_bot.c"),
        ],
        check=True,
        timeout=120,
    )
    binary = folder / name
    subprocess.run(
        [compiler, "-O2", "-o", str(binary), str(source), str(instant)], check=True, timeout=120
    )
    return binary


@pytest.mark.slow
@needs_bwrap
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_a_compiled_engine_with_its_weights_in_read_plays_sandboxed(tmp_path: Path) -> None:
    binary = _compile(
        tmp_path / "bots" / "wb", "cc", ROOT / "tests" / "engines" / "weights_bot.c", "weights_bot"
    )
    weights = tmp_path / "data" / "w.bin"
    weights.parent.mkdir()
    weights.write_bytes(b"\x01" * 100)
    book = tmp_path / "engines.toml"
    table = (
        f"[engines.wb]\ncommand = {_toml([str(binary)])}\n"
        f"env = {_toml({'WEIGHTS': str(weights)})}\n"
    )
    victim = f"[engines.victim]\ncommand = {_toml([sys.executable, str(BADBOT), 'ok'])}\n"
    book.write_text(table + victim)
    records = tmp_path / "r.jsonl"
    args = (
        "match",
        "wb",
        "victim",
        "--engines",
        str(book),
        "--sandbox",
        "-n",
        "2",
        "--size",
        "7",
        "--records",
        str(records),
        "-q",
    )
    refused = _arbiter(*args, cwd=tmp_path)
    assert refused.returncode == 1
    assert f'add read = ["{weights}"]' in refused.stdout, refused.stdout + refused.stderr
    book.write_text(table + f"read = {_toml([str(weights)])}\n" + victim)
    _played_cleanly(_arbiter(*args, cwd=tmp_path), records)


@needs_bwrap
@pytest.mark.slow  # another compiled engine (a C one plays in the default run)
@pytest.mark.skipif(
    shutil.which("c++") is None or shutil.which("cc") is None,
    reason="needs a C++ compiler (c++) and cc",
)
def test_a_dynamically_linked_cxx_engine_plays_sandboxed(tmp_path: Path) -> None:
    binary = _compile(
        tmp_path / "bots" / "cxx", "c++", ROOT / "tests" / "engines" / "cxx_bot.cpp", "cxx_bot"
    )
    if shutil.which("ldd"):
        linked = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
        assert "libstdc++" in linked, linked
    records = tmp_path / "r.jsonl"
    done = _arbiter(
        "match",
        "--sandbox",
        str(binary),
        f"{sys.executable} {BADBOT} ok",
        "-n",
        "2",
        "--size",
        "7",
        "--records",
        str(records),
        "-q",
        cwd=tmp_path,
    )
    _played_cleanly(done, records)
