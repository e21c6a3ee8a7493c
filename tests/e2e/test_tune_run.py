"""An SPSA tune end to end: real engines started per game with their values, a kill -9
mid-run, the resume, and what the store and status then say."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from commands import invoke
from paths import ENGINES
from processes import killed_after_games
from stores import meta, read_store

from arbiter.results.store import Store
from arbiter.runs.tournament import load_tournament
from arbiter.runs.tune import TuneSchedule

TUNEBOT = ENGINES / "tunebot.py"


def tune_file(folder: Path, games: int, output: str = "t.sqlite", file: str = "t.toml") -> Path:
    path = folder / file
    command = json.dumps([sys.executable, str(TUNEBOT), "{X}", "{Y}"])
    path.write_text(
        f'[tournament]\nname = "t"\nformat = "spsa"\ngames = {games}\nislands = 4\nsize = 5\n'
        f'seed = 3\ntc = "30+1"\nconcurrency = 2\noutput = "{output}"\n\n'
        '[tune]\nengine = "tb"\nbatch = 2\n\n'
        "[tune.params.X]\nmin = 0\nmax = 100\nstart = 20\n\n"
        "[tune.params.Y]\nmin = 0\nmax = 100\nstart = 80\n\n"
        f'[[engine]]\nname = "tb"\ncommand = {command}\n'
    )
    return path


def test_a_tune_killed_with_sigkill_resumes_on_its_trajectory(tmp_path: Path) -> None:
    t = tune_file(tmp_path, 12)
    killed_after_games(t, 5)  # mid-batch: a batch is 2 iterations, 4 games
    resumed = invoke("tournament", "run", str(t))
    assert resumed.returncode == 0, resumed.stderr
    stored = read_store(tmp_path / "t.sqlite")
    ids = Counter(str(row.game_id) for row in stored.games)
    assert len(ids) == 12 and set(ids.values()) == {1}  # every game, none twice
    assert not stored.voids
    rounds = Counter(str(row.game_id).split("-")[0] for row in stored.games)
    assert set(rounds.values()) == {2}  # whole pairs only
    for r in stored.records:
        # The template and the values are kept; the two seats played different values.
        assert r["commands"]["seat1"][-2:] == ["{X}", "{Y}"]
        assert set(r["params"]) == {"seat1", "seat2"}
        assert r["params"]["seat1"] != r["params"]["seat2"]
    # The values are those the stored results give, from the start.
    tournament = load_tournament(t)
    with Store.open_read(tmp_path / "t.sqlite") as store:
        again = TuneSchedule(
            "t", tournament.tune, 12, tournament.variant, tournament.openings, 3, store.results()
        )
    status = invoke("tournament", "status", str(t), "--json")
    tune = json.loads(status.stdout)["tune"]
    assert tune["iteration"] == 6 and tune["games"] == 12
    assert tune["params"] == again.current()
    text = invoke("tournament", "status", str(t)).stdout
    assert "SPSA tune of tb: iteration 6 of 6" in text and "Tuned values: X = " in text
    # A bigger budget would change every iteration's gains: refused on this store.
    t.write_text(t.read_text().replace("games = 12", "games = 16"))
    refused = invoke("tournament", "run", str(t))
    assert refused.returncode == 2 and "tune" in refused.stderr, refused.stderr
    t.write_text(t.read_text().replace("games = 16", "games = 12"))
    # The report plots each parameter's trajectory.
    page = tmp_path / "report.html"
    assert invoke("report", str(t), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert html.count('<polyline class="trajectory"') == 2
    assert "X after each batch, from 20 to " in html


def test_a_tune_on_two_dask_workers_stores_the_games_a_local_run_stores(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    local = tune_file(tmp_path, 8, "local.sqlite")
    on_dask = tune_file(tmp_path, 8, "dask.sqlite", "d.toml")
    assert invoke("tournament", "run", str(local)).returncode == 0
    with distributed.LocalCluster(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        ran = invoke("tournament", "run", str(on_dask), "--dask", str(cluster.scheduler_address))
    assert ran.returncode == 0, ran.stderr

    def games(store: str) -> list[tuple[object, ...]]:
        kept = read_store(tmp_path / store)
        assert not kept.voids
        return sorted(
            (r["game_id"], r["seat1"], r["seat2"], r["winner"], r["moves"], str(r["params"]))
            for r in kept.records
        )

    assert games("local.sqlite") == games("dask.sqlite") and len(games("local.sqlite")) == 8


def test_the_bundled_mcts_is_tuned_by_protocol_in_warm_processes(tmp_path: Path) -> None:
    """Its `explore` has no placeholder: each game's value is told with atoll-set-param,
    and each seat's process plays all its games. An engine that cannot be told stops
    the run before its first game, saying why."""
    path = tmp_path / "m.toml"
    path.write_text(
        '[tournament]\nname = "m"\nformat = "spsa"\ngames = 4\nislands = 4\nsize = 4\n'
        'tc = "inf"\n\n[tune]\nengine = "mcts"\n\n'
        "[tune.params.explore]\nmin = 0.0\nmax = 2.0\nstart = 1.0\n\n"
        '[[engine]]\nname = "mcts"\ncommand = ["{python}", "-m", "arbiter.bots.mcts_bot",'
        ' "--playouts", "5"]\n'
    )
    ran = invoke("tournament", "run", str(path))
    assert ran.returncode == 0, ran.stderr
    records = read_store(tmp_path / "m.sqlite").records
    assert len(records) == 4
    told = {r["params"]["seat1"]["explore"] for r in records}
    assert len(told) > 1  # the values changed from game to game ...
    assert all(r["commands"]["seat1"][-2:] == ["--playouts", "5"] for r in records)
    hosts = read_store(tmp_path / "m.sqlite").engines
    assert {e["name"] for e in hosts} == {"mcts+", "mcts-"}
    starts = json.loads(meta(tmp_path / "m.sqlite", "engine_starts") or "{}")
    assert starts["count"] == 2  # one process a seat, for the check and every game
    # ... and an engine that lists no atoll-set-param cannot be tuned this way.
    stop = tune_file(tmp_path, 4, "stop.sqlite", "stop.toml")
    stop.write_text(stop.read_text().replace('"{Y}"', '"30"'))
    stopped = invoke("tournament", "run", str(stop))
    assert stopped.returncode == 2 and "lists no atoll-set-param to be given Y" in stopped.stderr
    assert not read_store(tmp_path / "stop.sqlite").records
