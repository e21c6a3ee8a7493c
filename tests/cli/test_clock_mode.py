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

import pytest
from commands import invoke
from files import write_tournament
from paths import BOTS

from arbiter.engines.calibration import MOVES, REFERENCE_WORK_S
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


@pytest.mark.slow
def test_calibrate_measures_the_reference_workload_and_min_speed_refuses(
    tmp_path: Path,
) -> None:
    header = 'engines = ["random", "skeleton"]\nrounds = 1\nsize = 5\nislands = 4\n'
    path = write_tournament(tmp_path, header + "min_speed = 1000\n", [])
    refused = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert refused.returncode == 2
    assert "tournament.min_speed: this host's speed factor is" in refused.stderr, refused.stderr
    assert "below min_speed = 1000" in refused.stderr
    status = invoke("tournament", "status", str(path), cwd=tmp_path)
    assert "Speed factor by host: " in status.stdout, status.stdout

    done = invoke("calibrate", "--json", "--moves", "1")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
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
