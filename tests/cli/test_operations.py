"""The run against an unlucky operator: a rebuilt engine, a harness that is paused, outputs
that close, signals, and limits of the harness's own. Faults are injected on real
processes through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from commands import arbiter, invoke
from paths import BADBOT, ROOT
from processes import wait_until
from stores import games_stored, meta

RANDOM_BOT = ROOT / "arbiter" / "bots" / "random_bot.py"


def two_bots(folder: Path, header: str = "rounds = 1") -> Path:
    """A tournament of two copies of the random bot, each from its own script."""
    lines = ['[tournament]\nname = "t"\nsize = 7\ntc = "10+0.1"\n' + header]
    for name in ("a", "b"):
        script = folder / f"{name}_bot.py"
        shutil.copy(RANDOM_BOT, script)
        lines.append(
            f'[[engine]]\nname = "{name}"\n'
            f"command = {json.dumps([sys.executable, str(script)])}\n"
            f"env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}\n"
        )
    path = folder / "t.toml"
    path.write_text("\n".join(lines))
    return path


# -- a rebuilt engine -------------------------------------------------------------------


@pytest.mark.slow
def test_a_rebuilt_engine_is_refused_on_resume_unless_accepted(tmp_path: Path) -> None:
    t = two_bots(tmp_path)
    done = arbiter("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    store = tmp_path / "t.sqlite"
    assert games_stored(store) == 2
    # A new build at the same path, and one more round to play.
    script = tmp_path / "a_bot.py"
    script.write_text(script.read_text() + "\n# build 2\n")
    t.write_text(t.read_text().replace("rounds = 1", "rounds = 2"))
    before = store.read_bytes()
    refused = invoke("tournament", "run", str(t), "-q")
    assert refused.returncode == 2, refused.stderr
    message = refused.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "the script of engine 'a' changed since the store t.sqlite was started" in message
    assert "--fresh" in message and "new name" in message and "--rebuilt a" in message
    assert store.read_bytes() == before  # refused before anything was written
    # A changed dialect is a changed engine too.
    t.write_text(t.read_text().replace('name = "b"\n', 'name = "b"\nswap = "swap-pieces"\n'))
    changed = invoke("tournament", "run", str(t), "-q", "--rebuilt", "a")
    assert changed.returncode == 2 and "engine 'b'.dialect" in changed.stderr, changed.stderr
    t.write_text(t.read_text().replace('swap = "swap-pieces"\n', ""))
    wrong = invoke("tournament", "run", str(t), "-q", "--rebuilt", "c")
    assert wrong.returncode == 2 and "--rebuilt names c" in wrong.stderr
    accepted = arbiter("tournament", "run", str(t), "-q", "--rebuilt", "a")
    assert accepted.returncode == 0, accepted.stderr
    assert games_stored(store) == 4
    (change,) = json.loads(str(meta(store, "rebuilds")))
    assert change["engine"] == "a" and change["script_sha256"][0] != change["script_sha256"][1]
    # Accepted once: the next run takes the new build as the engine's own.
    t.write_text(t.read_text().replace("rounds = 2", "rounds = 3"))
    again = arbiter("tournament", "run", str(t), "-q")
    assert again.returncode == 0, again.stderr


# -- the harness's own stall ------------------------------------------------------------


def _pause_during_a_game(args: list[str], tmp_path: Path) -> list[object]:
    """Run a match in which one engine, in the middle of a game, stops the process that
    waits for its answer (the harness, or a worker process) with SIGSTOP; continue it 3 s
    later. The match's records."""
    from arbiter.results.records import read_records

    records = tmp_path / "g.jsonl"
    slow = f"{sys.executable} {BADBOT} slow --ms 20"
    stopper = f"{slow.replace('slow', 'stop-parent')} --after 25 --flag {tmp_path / 'flag'}"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arbiter",
            "match",
            f"a={stopper}",
            f"b={slow}",
            "--size",
            "7",
            "--tc",
            "2+0.05",
            "--records",
            str(records),
            "-q",
            "--log",
            str(tmp_path / "log"),
            *args,
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stopped: list[int] = []

        def find_stopped() -> bool:
            family = [
                process.pid,
                *map(
                    int,
                    subprocess.run(
                        ["pgrep", "-P", str(process.pid)],
                        capture_output=True,
                        text=True,
                    ).stdout.split(),
                ),
            ]
            stopped[:] = [pid for pid in family if _state(pid) == "T"]
            return bool(stopped) or process.poll() is not None

        assert wait_until(find_stopped, 60) and stopped, process.communicate()
        # Nothing to synchronise with while the process is stopped: the pause is the test.
        subprocess.run(["sleep", "3"], check=True)
        os.kill(stopped[0], signal.SIGCONT)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return list(read_records(records))


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["-n", "4"], marks=pytest.mark.slow),
        pytest.param(["-n", "6", "-c", "2"], marks=pytest.mark.slow),
    ],
    ids=["harness", "worker"],
)
def test_a_paused_harness_never_charges_an_engine(args: list[str], tmp_path: Path) -> None:
    games = _pause_during_a_game(args, tmp_path)
    rated = [g for g in games if not g.void]  # type: ignore[attr-defined]
    assert rated and all(g.termination.value == "connection" for g in rated), [
        (g.termination, g.reason) for g in games
    ]  # type: ignore[attr-defined]
    # The stall shows: a game it fell in is void and replayed, or its time not charged.
    stalled = [g for g in games if g.stalled_ms >= 2500]  # type: ignore[attr-defined]
    voids = [g for g in games if g.void]  # type: ignore[attr-defined]
    assert stalled or voids, [(g.stalled_ms, g.move_ms) for g in games]  # type: ignore[attr-defined]
    for void in voids:
        assert void.termination.value == "harness"
        assert "the harness itself did not run for" in void.reason
        assert "not charged to" in void.reason and void.evidence.stage == "harness"
    assert len(rated) == int(args[1])


# -- signals and outputs ----------------------------------------------------------------


# Slow: engines that ignore `quit` make each shutdown last seconds. A stop by a signal is
# checked in the default run by test_cli.py (test_a_signal_stops_cleanly_with_the_score_so_far).
@pytest.mark.slow
@pytest.mark.parametrize(
    "signals",
    [
        [signal.SIGHUP],
        [signal.SIGTERM, signal.SIGTERM],
        [signal.SIGHUP, signal.SIGTERM, signal.SIGINT],
    ],
    ids=["hup", "term-twice", "three"],
)
def test_stop_signals_always_end_with_the_final_lines(
    signals: list[signal.Signals], tmp_path: Path
) -> None:
    # Engines that ignore `quit` make the clean shutdown last, so the later signals
    # arrive while it is under way.
    stubborn = f"{sys.executable} {BADBOT} ignore-sigterm"
    log = tmp_path / "log"
    t = tmp_path / "t.toml"
    t.write_text(
        '[tournament]\nname = "t"\nsize = 7\ntc = "60+0"\nrounds = 1000\n'
        f'[[engine]]\nname = "a"\ncommand = {json.dumps(stubborn.split())}\n'
        f'[[engine]]\nname = "b"\ncommand = {json.dumps(stubborn.split())}\n'
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arbiter",
            "tournament",
            "run",
            str(t),
            "--every",
            "0",
            "--log",
            str(log),
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("Finished game 2 "):
            break
    for signum in signals:
        process.send_signal(signum)
        # Each signal once the harness has taken the one before: the later ones arrive
        # while the engines are being shut down.
        assert wait_until(lambda: " received: stopping" in log.read_text(), 30)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signals[0], err
    assert "Interrupted; engines were stopped." in err
    assert "Stopped: games in flight were not stored and are replayed on resume." in out
    stored = games_stored(tmp_path / "t.sqlite")
    assert stored >= 2
    assert f"over {stored} games" in out  # the table of what was stored


def test_progress_into_a_closed_pipe_never_stops_the_run(tmp_path: Path) -> None:
    t = two_bots(tmp_path, "rounds = 3")
    # `arbiter tournament run t.toml 2>&1 | head -3`, with the reader gone after 3 lines.
    reader = subprocess.Popen(["head", "-3"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert reader.stdin is not None
    harness = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "tournament", "run", str(t), "--every", "1"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=reader.stdin,
        stderr=subprocess.STDOUT,
    )
    reader.stdin.close()  # only the harness writes to the pipe now
    assert reader.stdout is not None
    shown = reader.stdout.read()
    reader.stdout.close()
    assert reader.wait(timeout=60) == 0 and len(shown.splitlines()) == 3
    assert harness.wait(timeout=120) == 0
    assert games_stored(tmp_path / "t.sqlite") == 6


# -- limits of the harness's own --------------------------------------------------------


def _limited(resource_name: str, value: int) -> object:
    import resource

    def apply() -> None:
        limit = getattr(resource, resource_name)
        resource.setrlimit(limit, (value, resource.getrlimit(limit)[1]))

    return apply


def test_too_few_file_descriptors_names_the_harness_not_the_engine(tmp_path: Path) -> None:
    t = two_bots(tmp_path)
    done = arbiter("tournament", "run", str(t), "-c", "2", preexec_fn=_limited("RLIMIT_NOFILE", 16))
    assert done.returncode == 1, done.stderr
    assert "the harness itself has too many open files (its limit, ulimit -n, is 16)" in (
        done.stdout + done.stderr
    )
    assert "Traceback" not in done.stderr


def test_an_address_space_limit_is_not_an_abort(tmp_path: Path) -> None:
    t = two_bots(tmp_path)
    done = arbiter("tournament", "run", str(t), preexec_fn=_limited("RLIMIT_AS", 200_000 * 1024))
    assert "OpenBLAS" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0 and "Seat 1 advantage" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ("26", "tournament.limits: must be a table, not 26"),
        ("[1, 2]", "tournament.limits: must be a table, not [1, 2]"),
        ("{ cpu_s = 9223372036854775808 }", "cpu_s = 9223372036854775808 is out of range"),
        ("{ memory_mb = 9223372036854775807 }", "memory_mb = 9223372036854775807 is out of range"),
    ],
)
def test_bad_limits_are_one_line(tmp_path: Path, limits: str, message: str) -> None:
    t = two_bots(tmp_path, f"limits = {limits}")
    for command in (["run"], ["status"]):
        done = invoke("tournament", *command, str(t))
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_show_takes_only_ascii_digits_as_numbers(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    done = invoke(
        "match",
        "random",
        "skeleton",
        "-n",
        "1",
        "--size",
        "7",
        "--tc",
        "5+0",
        "--records",
        str(records),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    # Superscript two, Arabic-Indic three, fullwidth one: digits to str.isdigit only.
    for number in ("\u00b2", "\u0663", "\uff11"):
        shown = invoke("show", str(records), "--game", number)
        assert shown.returncode == 2 and f"no game {number!r}" in shown.stderr, shown.stderr


# -- found in review --------------------------------------------------------------------


def test_a_rebuilt_script_without_a_suffix_is_refused_too(tmp_path: Path) -> None:
    t = two_bots(tmp_path)
    script = tmp_path / "a_bot.py"
    bare = tmp_path / "a_bot"
    script.rename(bare)
    t.write_text(t.read_text().replace(json.dumps(str(script)), json.dumps(str(bare))))
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    bare.write_text(bare.read_text() + "\n# build 2\n")
    t.write_text(t.read_text().replace("rounds = 1", "rounds = 2"))
    refused = invoke("tournament", "run", str(t), "-q")
    assert refused.returncode == 2 and "the script of engine 'a' changed" in refused.stderr


@pytest.mark.parametrize("command", [["ratings"], ["show"], ["report", "-o", "x.html"]])
def test_a_device_is_not_read_as_records(tmp_path: Path, command: list[str]) -> None:
    done = invoke(command[0], "/dev/zero", *command[1:], cwd=tmp_path)
    assert done.returncode == 2 and "a device, not a records file" in done.stderr


def test_definition_files_that_are_devices_are_refused(tmp_path: Path) -> None:
    t = tmp_path / "t.toml"
    t.write_text(
        '[tournament]\nname = "t"\nopenings = "/dev/zero"\nengines = ["random"]\n'
        f"engines_file = {json.dumps(str(ROOT / 'arbiter' / 'bots' / 'engines.toml'))}\n"
    )
    done = invoke("tournament", "status", str(t))
    assert done.returncode == 2 and "not a regular file" in done.stderr
    done = invoke("match", "random", "skeleton", "--engines", "/dev/zero")
    assert done.returncode == 2 and "not a regular file" in done.stderr


def test_a_log_on_a_pipe_is_written_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    done = arbiter(
        "match",
        "random",
        "skeleton",
        "-n",
        "1",
        "--size",
        "7",
        "--tc",
        "5+0",
        "-q",
        "--log",
        str(fifo),
        timeout=60,
    )
    out, _ = reader.communicate(timeout=30)
    assert done.returncode == 0, done.stderr
    assert "arbiter.runs.driver INFO game" in out
