"""`clock = "cpu"` and `match --clock cpu` through the command line: records keep what
each seat's clock charged and the wall time per move, and a store never mixes CPU-clock
games with wall-clock ones (nor with a store started before clocks were named)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from commands import arbiter, invoke
from files import write_tournament
from paths import BOTS
from stores import read_store

from arbiter.engines import calibration
from arbiter.engines.calibration import MOVES, REFERENCE_WORK_S
from arbiter.executors.jobs import machine
from arbiter.results.records import GameRecord
from arbiter.rules.clock import TimeControl
from arbiter.runs.tournament import load_tournament


def records(path: Path) -> list[GameRecord]:
    return [GameRecord.from_json(json.loads(line)) for line in path.read_text().splitlines()]


def match(tmp_path: Path, *extra: str) -> tuple[int, str]:
    done = invoke(
        "match",
        "random",
        "skeleton",
        "--size",
        "5",
        "--islands",
        "4",
        "--games",
        "2",
        "--tc",
        "5+0.05",
        "--store",
        "m.sqlite",
        *extra,
        cwd=tmp_path,
    )
    return done.returncode, done.stderr


def test_match_on_cpu_clocks_records_both_times_and_refuses_a_wall_rerun(tmp_path: Path) -> None:
    rc, err = match(tmp_path, "--clock", "cpu", "--records", "r.jsonl", "-q")
    assert rc == 0, err
    games = records(tmp_path / "r.jsonl")
    assert len(games) == 2
    for game in games:
        assert game.clock == {"seat1": "cpu", "seat2": "cpu"}
        assert len(game.wall_ms) == len(game.move_ms) == game.plies
    rc, err = match(tmp_path, "--games", "4")
    assert rc == 2
    assert "--clock: changed from 'cpu' to 'wall'" in err and "--fresh" in err, err


def test_a_tournament_store_never_mixes_clocks(tmp_path: Path) -> None:
    header = 'engines = ["random", "skeleton"]\nrounds = 1\nsize = 5\nislands = 4\ntc = "5+0"\n'
    path = write_tournament(tmp_path, header, [])
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # As a store started before clocks were named keeps its conditions: without the key.
    store = tmp_path / f"{path.stem}.sqlite"
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'conditions'").fetchone()
        conditions = json.loads(text)
        assert conditions.pop("clock") == "wall"
        db.execute("UPDATE meta SET value = ? WHERE key = 'conditions'", (json.dumps(conditions),))
    write_tournament(tmp_path, header + 'clock = "cpu"\n', [])
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2
    assert "tournament.clock: changed from 'wall' to 'cpu'" in done.stderr, done.stderr


def test_an_unknown_clock_is_refused_with_the_choices(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, 'engines = ["random", "skeleton"]\nclock = "cpu-time"\n', [])
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2
    assert "tournament.clock" in done.stderr and '"wall", "cpu"' in done.stderr, done.stderr


# A bot whose `version` answer is the cores it may run on, as its own /proc says.
PINNED = f"""
import re, sys
sys.path.insert(0, {str(BOTS)!r})
import skeleton as sk
class Bot(sk.Bot):
    def cmd_version(self, args):
        status = open("/proc/self/status").read()
        return "cpus " + re.search(r"Cpus_allowed_list:\\s*(\\S+)", status).group(1)
sys.exit(Bot().run())
"""


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_affinity_gives_each_slot_its_own_cores(tmp_path: Path) -> None:
    (tmp_path / "pinned.py").write_text(PINNED)
    engines = [
        f'[[engine]]\nname = "{name}"\ncommand = ["{sys.executable}", "pinned.py"]\n'
        for name in ("a", "b")
    ]
    header = "rounds = 4\nconcurrency = 2\naffinity = true\nsize = 5\nislands = 4\n"
    path = write_tournament(tmp_path, header + 'tc = "5+0"\nrandom_openings = 1\n', engines)
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "affinity: slot 1 on core" in done.stderr and "warning" not in done.stderr
    exported = invoke("tournament", "export", str(path), "-o", "r.jsonl", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    seen = {v for game in records(tmp_path / "r.jsonl") for v in game.versions.values()}
    cores = [set(v.removeprefix("cpus ").split(",")) for v in seen]
    assert len(cores) == 2, seen  # each slot's engines on one core, the slots on two
    assert not cores[0] & cores[1], seen
    status = invoke("tournament", "status", str(path), cwd=tmp_path)
    assert "Last run's affinity: slot 1 on core" in status.stdout, status.stdout


def kept_speed(cache: Path) -> dict[str, Any]:
    """This host's entry in the speed cache."""
    entry: dict[str, Any] = json.loads((cache / "atoll-arbiter" / "speed.json").read_text())[
        calibration.host_key(machine())
    ]
    return entry


@pytest.mark.slow
def test_runs_record_the_host_speed_measured_once_and_calibrate_refreshes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.delenv("ARBITER_CALIBRATE")  # measured, as outside the tests
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr(calibration, "_known", None)  # nothing measured in this process
    header = 'engines = ["random", "skeleton"]\nrounds = 1\nsize = 5\nislands = 4\n'
    # Nothing kept: the run measures this host, keeps the factor, and every record has it.
    first = write_tournament(tmp_path, header, [], name="first")
    assert invoke("tournament", "run", str(first), "-q", cwd=tmp_path).returncode == 0
    kept = kept_speed(cache)
    assert kept["factor"] > 0 and kept["cpu_factor"] > 0 and kept["moves"] == MOVES
    played = read_store(tmp_path / "first.sqlite").records
    assert len(played) == 2 and {r["speed"] for r in played} == {kept["factor"]}
    # Kept: a new process takes the cache's factors (here made up), the CPU one for CPU
    # clocks, and measures nothing.
    path = cache / "atoll-arbiter" / "speed.json"
    made_up = json.loads(path.read_text())
    made_up[calibration.host_key(machine())].update(factor=7.5, cpu_factor=9.25)
    path.write_text(json.dumps(made_up))
    second = write_tournament(tmp_path, header + 'clock = "cpu"\n', [], name="second")
    env = {k: v for k, v in os.environ.items() if k != "ARBITER_CALIBRATE"}
    done = arbiter("tournament", "run", str(second), "-q", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert {r["speed"] for r in read_store(tmp_path / "second.sqlite").records} == {9.25}

    path = write_tournament(tmp_path, header + "min_speed = 1000\n", [])
    refused = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert refused.returncode == 2
    assert "tournament.min_speed: this host's speed factor is" in refused.stderr, refused.stderr
    assert "below min_speed = 1000" in refused.stderr
    status = invoke("tournament", "status", str(path), cwd=tmp_path)
    assert "Speed factor by host: " in status.stdout, status.stdout

    # `calibrate` measures again and replaces the kept factor.
    done = invoke("calibrate", "--json", "--moves", "1")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert kept_speed(cache)["factor"] == result["factor"] != 7.5
    assert result["moves"] == 1 and result["work_s"] > 0 and result["round_trip_us"] > 0
    # The bot's own CPU was measured, and is no more than the wall time it took.
    assert 0 < result["cpu_s"] <= result["work_s"] * 1.05 + 0.02
    expected = REFERENCE_WORK_S / MOVES / result["work_s"]  # one move of MOVES
    assert abs(result["factor"] - expected) <= 0.01 * expected + 0.001, (result, expected)


def test_scale_tc_divides_the_time_controls_and_keeps_the_conditions(tmp_path: Path) -> None:
    engine = '[[engine]]\nname = "own"\ncommand = ["python3", "x.py"]\ntc = "4+0.2"\n'
    header = 'engines = ["random"]\nscale_tc = true\ntc = "10+0.1"\n'
    t = load_tournament(write_tournament(tmp_path, header, [engine]), engines_here=False)
    assert t.name == "t"  # not an engine's: the clocks' loop over engines keeps its own names
    slow = t.on_host(0.5)
    assert str(slow.tc) == "20+0.2" and str(slow.engines["own"].tc) == "8+0.4"
    assert slow.conditions() == t.conditions() and t.conditions()["scale_tc"] is True
    assert str(t.on_host(2.0).tc) == "5+0.05"
    assert TimeControl.parse("st=1").scaled(4) == TimeControl.parse("st=0.25")
    assert TimeControl.parse("40/60+0").scaled(2) == TimeControl.parse("40/30+0")


def test_min_speed_is_refused_for_a_cluster_before_anything_is_written(tmp_path: Path) -> None:
    header = 'engines = ["random", "skeleton"]\nmin_speed = 0.5\n'
    path = write_tournament(tmp_path, header, [])
    refused = invoke("tournament", "run", str(path), "--dask", "tcp://127.0.0.1:1", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "tournament.min_speed: min_speed refuses the host that runs a tournament" in (
        refused.stderr
    )
    assert "status --by-host" in refused.stderr and not (tmp_path / "t.sqlite").exists()
