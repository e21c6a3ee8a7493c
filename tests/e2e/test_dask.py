"""Tournaments on a Dask cluster: the same games as locally, nothing lost or doubled.

An in-process cluster (worker threads in this process) checks that the Dask executor
plays the same schedule as the local one, bounds the games in flight, and stops when no
worker can start an engine. A real `dask scheduler` with two `dask worker` processes on
127.0.0.1 checks the rest through the command line: an engine that cannot start on one
worker, the driver killed and re-run, and a worker killed mid-game.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from commands import arbiter, invoke
from files import logged_pool
from paths import BADBOT, ROOT
from processes import running, wait_until
from stores import games_stored, read_store
from transcripts import check_transcript

from arbiter.engines import calibration, sandbox
from arbiter.engines.calibration import HostSpeed, host_key
from arbiter.executors.jobs import GameJob, machine
from arbiter.results.records import GameRecord
from arbiter.results.store import Store
from arbiter.runs.driver import Driver
from arbiter.runs.run import Plan, Unheard, open_executor, run
from arbiter.runs.schedule import ScheduledGame
from arbiter.runs.tournament import load_tournament

try:
    import distributed
except ImportError:  # pragma: no cover - the test extra installs it
    distributed = None

needs_dask = pytest.mark.skipif(
    distributed is None, reason="needs the distributed package (pip install -e '.[dask]')"
)

NO_ENGINE = "ARBITER_TEST_NO_ENGINE"  # a worker started with it cannot start "picky" engines


def bot(name: str, *args: str) -> str:
    argv = [sys.executable, str(BADBOT), *(args or ("ok",)), "--name", f"reply-{name}"]
    return f"[[engine]]\nname = {json.dumps(name)}\ncommand = {json.dumps(argv)}\n"


def picky_bot(name: str) -> str:
    """An engine whose command does not resolve on a worker that has NO_ENGINE set."""
    script = f'[ -z "${NO_ENGINE}" ] || exit 3; exec "$0" "$@"'
    argv = ["sh", "-c", script, sys.executable, str(BADBOT), "ok", "--name", f"reply-{name}"]
    return f"[[engine]]\nname = {json.dumps(name)}\ncommand = {json.dumps(argv)}\n"


def write_tournament(
    folder: Path, name: str, header: str, engines: list[str], file: str = ""
) -> Path:
    path = folder / (file or f"{name}.toml")
    path.write_text(
        f'[tournament]\nname = "{name}"\nsize = 7\ntc = "10+0.1"\n'
        f"random_openings = 1\nseed = 3\n{header}\n" + "\n".join(engines)
    )
    return path


# ------------------------------------------------------------ in-process cluster


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[str]:
    """Two worker threads in this process, shared by the module's tests (each test's
    games have their own ids and store, so nothing of one reaches another)."""
    if distributed is None:
        pytest.skip("needs the distributed package (pip install -e '.[dask]')")
    with distributed.LocalCluster(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        yield str(cluster.scheduler_address)


def _run(path: Path, dask: str | None = None) -> Any:
    t = load_tournament(path, engines_here=dask is None)
    with Store.open(t.output) as store:
        plan = t.plan(store)
        return trio.run(run, plan, open_executor(plan, dask=dask), Unheard()), plan.left


@needs_dask
def test_the_cluster_plays_the_same_games_as_the_local_executor(
    tmp_path: Path, local_cluster: str
) -> None:
    engines = [bot("alpha"), bot("beta"), bot("gamma")]
    local = write_tournament(
        tmp_path, "t", 'rounds = 2\nconcurrency = 2\noutput = "local.sqlite"', engines
    )
    dask = write_tournament(tmp_path, "t", 'rounds = 2\noutput = "dask.sqlite"', engines, "d.toml")
    local_outcome, left = _run(local)
    dask_outcome, dask_left = _run(dask, dask=local_cluster)
    assert left == dask_left == 12
    assert not local_outcome.aborted and not dask_outcome.aborted, dask_outcome.aborted
    played, on_dask = read_store(tmp_path / "local.sqlite"), read_store(tmp_path / "dask.sqlite")
    ids = set(played.ids)
    assert len(ids) == 12 and set(on_dask.ids) == ids and len(on_dask.ids) == 12
    assert on_dask.pairings() == played.pairings()
    assert on_dask.voids == []
    # Every record names the machine that played it, locally as on the cluster.
    for record in played.records + on_dask.records:
        assert record["host"] == os.uname().nodename and record["cpu"]
    # The engines' answers reached the store from the workers.
    names = {(e["name"], e["reply_name"]) for e in on_dask.engines}
    assert names == {(n, f"reply-{n}") for n in ("alpha", "beta", "gamma")}


def test_status_splits_the_standings_by_host(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from arbiter.cli import main

    t = write_tournament(tmp_path, "t", "rounds = 2\nconcurrency = 2", [bot("p"), bot("q")])
    result = CliRunner().invoke(main, ["tournament", "run", str(t), "-q"])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(tmp_path / "t.sqlite") as con:  # as if a second machine played some
        con.execute(
            "UPDATE games SET record = json_set(record, '$.host', 'node-2', '$.cpu',"
            " 'Slow CPU') WHERE number % 2 = 0"
        )
    result = CliRunner().invoke(main, ["tournament", "status", str(t), "--by-host", "--json"])
    assert result.exit_code == 0, result.output
    hosts = {h["host"]: h for h in json.loads(result.output)["hosts"]}
    assert set(hosts) == {os.uname().nodename, "node-2"}
    assert hosts["node-2"]["cpu"] == "Slow CPU" and hosts["node-2"]["games"] == 2
    assert sum(h["games"] for h in hosts.values()) == 4
    assert all(h["mean_move_ms"] is not None and h["time_losses"] == 0 for h in hosts.values())
    assert {e["name"] for e in hosts["node-2"]["engines"]} == {"p", "q"}
    result = CliRunner().invoke(main, ["tournament", "status", str(t), "--by-host"])
    assert "Host node-2 (Slow CPU): 2 games, 0 lost on time, mean move time" in result.output
    assert result.output.count("rank") == 3  # the whole standings, then one table per host


@needs_dask
def test_a_match_plays_on_the_cluster_and_resumes_from_its_store(
    tmp_path: Path, local_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from arbiter.cli import main
    from arbiter.executors import dask

    played: list[str] = []  # the Dask workers that played a game or checked the engines
    where = dask._where

    def counted() -> tuple[str, str]:
        played.append(where()[0])
        return played[-1], "here"

    monkeypatch.setattr(dask, "_where", counted)  # the in-process workers call it
    engines = [f"{name}={sys.executable} {BADBOT} ok --name reply-{name}" for name in "ab"]
    store = tmp_path / "m.sqlite"
    args = [
        "match",
        *engines,
        "--size",
        "7",
        "--tc",
        "10+0.1",
        "--seed",
        "3",
        "--dask",
        local_cluster,
        "--store",
        str(store),
        "--json",
        "-q",
    ]
    first = CliRunner().invoke(main, [*args, "--games", "2"])
    assert first.exit_code == 0, first.output
    # Each of the two workers checked the engines, then the cluster played both games.
    assert len(played) == 4 and all(w.startswith("inproc://") for w in played)
    # The same match with more games: only the new ones are played, on the cluster.
    more = CliRunner().invoke(main, [*args, "--games", "4"])
    assert more.exit_code == 0, more.output
    summary = json.loads(more.stdout)
    assert summary["games"] == 4 and summary["resumed"] == 2 and len(played) == 4 + 4
    assert summary["engines"] == ["a", "b"] and sum(summary["wins"].values()) == 4
    with Store.open_read(store) as stored:
        assert len(stored.done_ids()) == 4 and stored.void_count() == 0
        assert {e["name"]: e["reply_name"] for e in stored.engines()} == {
            "a": "reply-a",
            "b": "reply-b",
        }  # answers reached the store from the workers
    # Engines are looked for on the workers, not here: each worker's failure is named.
    missing = CliRunner().invoke(
        main, ["match", engines[0], f"gone={tmp_path / 'no-bot'}", "--dask", local_cluster, "-q"]
    )
    assert missing.exit_code == 1, missing.output
    assert "Match stopped: no Dask worker can start gone: on inproc://" in missing.stdout


@needs_dask
def test_bundled_bots_play_on_workers_whose_paths_differ_from_the_client(
    tmp_path: Path, local_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client resolves a bundled name to its own interpreter and package; a worker
    installed elsewhere starts the bot from its own."""
    import dataclasses

    from arbiter.engines import config

    class Elsewhere(config.EnginesFile):
        def spec(self, key: str, *, local: bool = True) -> Any:
            spec = super().spec(key, local=False)
            return dataclasses.replace(
                spec,
                argv=("/client/bin/python", *spec.argv[1:]),
                cwd="/client/site-packages/arbiter/bots",
            )

    monkeypatch.setattr(config, "bundled", lambda: Elsewhere(config.BUNDLED_FILE, bundled=True))
    done = invoke(
        "match",
        "random",
        "skeleton",
        "--dask",
        local_cluster,
        "--games",
        "2",
        "--size",
        "7",
        "--tc",
        "5+0",
        "--json",
        "-q",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["games"] == 2 and summary["void"] == 0, summary
    assert summary["engines"] == ["random", "skeleton"]


@needs_dask
def test_each_games_transcript_comes_back_from_the_cluster(
    tmp_path: Path, local_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With scale_tc each worker divides the time controls by its host's factor: here the
    # in-process workers' host is made twice as slow as the reference on wall clocks.
    monkeypatch.setattr(calibration, "_known", HostSpeed(0.5, 4.0))
    header = "rounds = 1\nscale_tc = true"
    path = write_tournament(tmp_path, "tr", header, [bot("alpha"), bot("beta")])
    folder = tmp_path / "transcripts"
    done = invoke(
        "tournament",
        "run",
        str(path),
        "--dask",
        local_cluster,
        "--transcripts",
        str(folder),
        "-q",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stored = read_store(tmp_path / "tr.sqlite")
    assert len(stored.records) == 2
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{i}.log" for i in stored.ids)
    for data in stored.records:
        record = GameRecord.from_json(data)
        check_transcript(folder / f"{record.game_id}.log", record)
        assert record.speed == 0.5 and record.tc == {"seat1": "20+0.2", "seat2": "20+0.2"}


@needs_dask
def test_an_engine_that_stops_starting_on_every_worker_stops_the_run(
    tmp_path: Path, local_cluster: str
) -> None:
    from arbiter.executors.dask import DaskExecutor
    from arbiter.executors.jobs import ExecutorSettings

    script = tmp_path / "vanishing.py"
    script.symlink_to(BADBOT)
    # It crashes in its first game, so it must be started again (the workers keep the
    # engines of the check warm, and an engine that plays on is never restarted).
    argv = [sys.executable, str(script), "crash", "--after", "2"]
    path = write_tournament(
        tmp_path,
        "t",
        "rounds = 2",
        [bot("steady"), f'[[engine]]\nname = "vanishing"\ncommand = {json.dumps(argv)}\n'],
    )
    t = load_tournament(path)
    executor = DaskExecutor(ExecutorSettings(engines=t.engines), local_cluster)

    async def main() -> Any:
        with Store.open(t.output) as store:
            store.begin(t.name, t.conditions(), t.definition(), t.entries())
            try:
                checked = await executor.preflight(
                    list(t.engines), t.variant, {n: t.tc for n in t.engines}
                )
                assert not checked.problem and checked.info.keys() == t.engines.keys()
                script.unlink()  # gone after the check: no worker can start it any more
                plan = t.plan(store)
                return await Driver(
                    plan.games, plan.game_spec, executor, plan.sinks, Unheard()
                ).run()
            finally:
                await executor.aclose()

    outcome = trio.run(main)
    assert outcome.aborted.startswith("no Dask worker can start vanishing: on inproc://")
    stored = read_store(t.output)
    assert stored.voids and all(
        v["termination"] == "setup" and "on Dask worker inproc://" in v["reason"]
        for v in stored.voids
    )
    # Its first games were lost by its crash (one on each worker at most) before it had
    # to start again.
    assert len(stored.games) <= 2
    assert all(g.termination == "crash" and "vanishing" in (g.seat1, g.seat2) for g in stored.games)


@needs_dask
def test_an_engine_no_worker_can_start_stops_the_run_naming_each_worker(
    tmp_path: Path, local_cluster: str
) -> None:
    missing = str(tmp_path / "no-such-python")
    t = write_tournament(
        tmp_path,
        "t",
        "",
        [bot("ok"), bot("gone").replace(json.dumps(sys.executable), json.dumps(missing))],
    )
    outcome, _ = _run(t, dask=local_cluster)
    assert outcome.aborted.startswith("no Dask worker can start gone: on inproc://")
    assert outcome.aborted.count("could not be started") == 2  # both workers named
    assert "the engine's command must resolve on every worker" in outcome.aborted
    assert not outcome.config_error
    assert games_stored(tmp_path / "t.sqlite") == 0


@needs_dask
def test_games_in_flight_are_bounded_and_a_stop_ends_the_run(
    tmp_path: Path, local_cluster: str
) -> None:
    from arbiter.executors.dask import DaskExecutor
    from arbiter.executors.dispatch import LOOKAHEAD
    from arbiter.executors.jobs import ExecutorSettings

    path = write_tournament(tmp_path, "t", "rounds = 500", [bot("a"), bot("b")])
    t = load_tournament(path, engines_here=False)
    pulled = 0

    def games() -> Iterator[ScheduledGame]:
        nonlocal pulled
        for game in t.games():
            pulled += 1
            yield game

    stored: list[str] = []

    class Sink:
        def begin(self, names: dict[str, str]) -> None:
            pass

        def write(self, game: ScheduledGame, record: GameRecord) -> None:
            stored.append(game.game_id)

        def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
            pass

        def engine_started(self, name: str, seconds: float) -> None:
            pass

    executor = DaskExecutor(ExecutorSettings(engines=t.engines), local_cluster, window=3)
    plan = Plan(ExecutorSettings(engines=t.engines), games(), t.total, t.total, t.variant, t.tc)
    driver = Driver(
        plan.games, plan.game_spec, executor, [Sink()], Unheard(), stop=lambda: len(stored) >= 2
    )

    async def main() -> Any:
        try:
            return await driver.run()
        finally:
            await executor.aclose()

    outcome = trio.run(main)
    assert stored and len(stored) == len(set(stored)) == 2 and not outcome.aborted
    # Of the 1000 games, only those in flight were ever taken from the schedule: the two
    # stored, at most three more in flight, the dispatcher's window read ahead of the
    # workers, one waiting in the driver's hand.
    assert pulled <= 2 + 3 + LOOKAHEAD + 1
    # Games already being played when the run stopped finish on their workers (their
    # results are dropped), and the workers then close their engines.
    assert wait_until(lambda: not _engine_children(os.getpid(), b"--name\0reply-"), 30)


@needs_dask
def test_a_task_that_fails_on_its_worker_is_a_void_harness_fault(
    tmp_path: Path, local_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.executors import game_worker

    async def broken(self: Any, job: GameJob, demand: Any = None) -> None:
        raise RuntimeError("the referee broke")

    # The in-process workers run this module's code: every game's task raises.
    monkeypatch.setattr(game_worker.GameWorker, "play", broken)
    t = write_tournament(tmp_path, "t", "rounds = 5", [bot("a"), bot("b")])
    outcome, _ = _run(t, dask=local_cluster)
    assert outcome.aborted.startswith(
        "6 games in a row were void; last: the game's task"
        " failed on the cluster: RuntimeError: the referee broke"
    )
    stored = read_store(tmp_path / "t.sqlite")
    assert len(stored.voids) == 6 and {v["termination"] for v in stored.voids} == {"harness"}
    assert stored.games == []


@pytest.mark.smoke
@needs_dask
def test_an_unreachable_scheduler_or_a_bad_address_is_one_line(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, "t", "", [bot("a"), bot("b")])
    bad = invoke("tournament", "run", str(t), "--dask", "not an address")
    assert bad.returncode == 2 and "--dask" in bad.stderr and "tcp://HOST:PORT" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    t.write_text(t.read_text().replace("size = 7", 'size = 7\ndask = "127.0.0.1:8786"'))
    bad = invoke("tournament", "run", str(t))
    assert bad.returncode == 2 and "tournament.dask" in bad.stderr


def _said(stderr: str) -> list[str]:
    """What a run wrote on stderr after its header line."""
    return [line for line in stderr.splitlines() if not line.startswith("Tournament ")]


@needs_dask
def test_a_scheduler_that_accepts_and_never_answers_is_given_up_after_its_timeout(
    tmp_path: Path,
) -> None:
    # The kernel completes the TCP handshake for a listening socket that never accepts
    # nor speaks: the client's own timeout is not kept there. A real process, so that a
    # connect thread left blocked is seen not to hold up its exit.
    t = write_tournament(tmp_path, "t", "", [bot("a"), bot("b")])
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        done = subprocess.run(
            [sys.executable, "-m", "arbiter", "tournament", "run", str(t), "--dask", address],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "ARBITER_DASK_TIMEOUT": "0.5"},
        )
    assert done.returncode == 2, done.stderr
    assert len(_said(done.stderr)) == 1
    assert address in done.stderr and "within 0.5 s" in done.stderr
    assert "ARBITER_DASK_TIMEOUT" in done.stderr
    assert not (tmp_path / "t.sqlite").exists() or games_stored(tmp_path / "t.sqlite") == 0


@pytest.mark.smoke
@needs_dask
def test_a_closed_port_or_an_error_while_connecting_is_cannot_reach_not_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = write_tournament(tmp_path, "t", "", [bot("a"), bot("b")])
    monkeypatch.setenv("ARBITER_DASK_TIMEOUT", "5")
    with socket.socket() as closed:  # bound, never listening: the port refuses
        closed.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{closed.getsockname()[1]}"
        bad = invoke("tournament", "run", str(t), "--dask", address)
    assert bad.returncode == 2 and len(_said(bad.stderr)) == 1
    assert f"cannot reach the Dask scheduler at {address} within 5 s" in bad.stderr

    # The installed distributed can raise MemoryError from numpy when its handshake
    # times out: that is a scheduler not reached, not the harness out of memory.
    def fails(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 16.0 EiB for an array with shape (2**61,)")

    monkeypatch.setattr(distributed, "Client", fails)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        address = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
        bad = invoke("tournament", "run", str(t), "--dask", address)
    assert bad.returncode == 2 and len(_said(bad.stderr)) == 1
    assert f"cannot reach the Dask scheduler at {address} within 5 s" in bad.stderr
    assert "MemoryError" in bad.stderr and "ran out of memory" not in bad.stderr


@needs_dask
def test_a_memory_error_raised_in_distributed_is_not_called_the_harnesss_own() -> None:
    import click
    from click.testing import CliRunner

    from arbiter.cli import handle_errors

    raised_in_distributed = compile(
        "raise MemoryError('Unable to allocate')", "distributed/comm/tcp.py", "exec"
    )

    @click.command()
    @click.argument("where")
    @handle_errors
    def command(where: str) -> None:
        if where == "distributed":
            exec(raised_in_distributed, {"__name__": "distributed.comm.tcp"})
        raise MemoryError

    theirs = CliRunner().invoke(command, ["distributed"])
    assert theirs.exit_code == 1 and "ran out of memory" not in theirs.output
    assert "Dask's client failed with MemoryError" in theirs.output
    assert "distributed.comm.tcp:1" in theirs.output
    ours = CliRunner().invoke(command, ["here"])
    assert ours.exit_code == 1 and "the harness itself ran out of memory" in ours.output


# ------------------------------------------------------- scheduler and workers


@dataclass
class Cluster:
    address: str
    workers: dict[str, subprocess.Popen[bytes]]  # by name
    addresses: dict[str, str]  # worker name -> address
    cache: Path  # the workers' cache folder (XDG_CACHE_HOME), where their speed is kept


def _spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dask", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A scheduler and two single-threaded workers on 127.0.0.1, ports chosen by the OS;
    worker "b" cannot start picky engines. The workers measure their host's speed (the
    driver, as every test's, does not), kept in a cache folder of their own."""
    if distributed is None:
        pytest.skip("needs the distributed package (pip install -e '.[dask]')")
    folder = tmp_path_factory.mktemp("cluster")
    file = folder / "scheduler.json"
    measured = {"ARBITER_CALIBRATE": "1", "XDG_CACHE_HOME": str(folder / "cache")}
    scheduler = _spawn(
        "scheduler",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--no-dashboard",
        "--scheduler-file",
        str(file),
    )
    workers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        assert wait_until(lambda: file.exists() and file.stat().st_size > 0, 60)
        address = json.loads(file.read_text())["address"]
        for name, env in (("a", measured), ("b", {**measured, NO_ENGINE: "1"})):
            workers[name] = _spawn(
                "worker",
                address,
                "--name",
                name,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                env=env,
            )
        with distributed.Client(address, timeout=30, set_as_default=False) as client:
            assert wait_until(lambda: len(client.nthreads()) == 2, 60), "workers did not join"
            info = client.scheduler_info()["workers"]
            addresses = {str(w["name"]): str(a) for a, w in info.items()}
        yield Cluster(address, workers, addresses, folder / "cache")
    finally:
        for process in workers.values():
            _stop(process)
        _stop(scheduler)


def _engine_children(pid: int, needle: bytes = b"badbot") -> list[int]:
    """The engines a worker process is running (or with another `needle`, its watchdog)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == pid and needle in cmdline and running(int(entry.name)):
            found.append(int(entry.name))
    return found


@needs_dask
def test_on_a_cluster_of_processes_nothing_is_lost_or_doubled(
    tmp_path: Path, cluster: Cluster
) -> None:
    # An engine that cannot start on worker b: its games are played on a, the run says so.
    t = write_tournament(tmp_path, "picky", "rounds = 1", [picky_bot("fussy"), bot("plain")])
    done = arbiter("tournament", "run", str(t), "--dask", cluster.address, "-q")
    assert done.returncode == 0, done.stderr
    assert f"fussy cannot start on Dask worker(s) {cluster.addresses['b']}" in done.stdout
    assert games_stored(tmp_path / "picky.sqlite") == 2
    # The workers measured their host's speed when they joined the run (one measured, the
    # other found it kept), and each game records it.
    kept = json.loads((cluster.cache / "atoll-arbiter" / "speed.json").read_text())
    assert len(kept) == 1 and set(kept) == {host_key(machine())}, kept
    factor = next(iter(kept.values()))["factor"]
    assert factor > 0 and {r["speed"] for r in read_store(tmp_path / "picky.sqlite").records} == {
        factor
    }
    # A match on the same cluster: played on a, and its summary says so.
    script = f'[ -z "${NO_ENGINE}" ] || exit 3; exec "$0" "$@"'
    fussy = shlex.join(["sh", "-c", script, sys.executable, str(BADBOT), "ok"])
    done = arbiter(
        "match",
        f"fussy={fussy}",
        f"plain={sys.executable} {BADBOT} ok",
        "--size",
        "7",
        "--games",
        "2",
        "--dask",
        cluster.address,
        "--json",
        "-q",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["games"] == 2 and summary["void"] == 0
    assert summary["notes"] == [
        f"fussy cannot start on Dask worker(s) {cluster.addresses['b']}:"
        " its games were played on the others"
    ]

    # The driver killed mid-run (SIGKILL: no clean-up at all), then run again.
    slow = [bot("x", "slow", "--ms", "10"), bot("y", "slow", "--ms", "10")]
    t = write_tournament(tmp_path, "t", "rounds = 4", slow)
    db = tmp_path / "t.sqlite"
    command = [
        sys.executable,
        "-m",
        "arbiter",
        "tournament",
        "run",
        str(t),
        "--dask",
        cluster.address,
    ]
    with subprocess.Popen(
        command,
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
        first.kill()
    before = set(read_store(db).ids)
    assert 2 <= len(before) < 8

    # The run again, with a worker killed in the middle of a game: that game is played
    # again on the other worker.
    with subprocess.Popen(
        command,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as again:
        assert again.stderr is not None
        lines = []
        for line in again.stderr:
            lines.append(line)
            if line.startswith("Finished game"):
                break  # the engine check is over: a's engines are now playing games
        victim = cluster.workers["a"]
        assert wait_until(lambda: len(_engine_children(victim.pid)) == 2, 60)
        engines = _engine_children(victim.pid)
        # The worker guards its engines as the command line does: a watchdog process.
        assert _engine_children(victim.pid, b"arbiter.engines.reaper")
        victim.kill()
        victim.wait()
        lines += list(again.stderr)
        assert again.wait(timeout=60) == 0, "".join(lines)
    # Its engines did not outlive it (its watchdog killed their process groups).
    assert wait_until(lambda: not any(running(pid) for pid in engines), 20)
    stored = read_store(db)
    ids = stored.ids
    assert len(ids) == len(set(ids)) == 8 and before <= set(ids)
    assert stored.pairings() == Counter({("x", "y"): 4, ("y", "x"): 4})
    voids = len(stored.voids)
    assert sum(line.startswith("Started game") for line in lines) == 8 - len(before) + voids
    assert sum(line.startswith("Finished game") for line in lines) == 8 - len(before) + voids


@needs_dask
@pytest.mark.skipif(sandbox.unavailable() is not None, reason="no sandbox (bubblewrap) here")
def test_sandbox_and_limits_apply_on_the_workers(tmp_path: Path, local_cluster: str) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("original\n")
    attacker = [
        sys.executable,
        str(ROOT / "tests" / "engines" / "attacker.py"),
        "write",
        "--path",
        str(target),
    ]
    engines = [f'[[engine]]\nname = "attacker"\ncommand = {json.dumps(attacker)}\n', bot("b")]
    path = write_tournament(
        tmp_path, "t", "rounds = 1\nsandbox = true\nlimits = { cpu_s = 30 }", engines
    )
    outcome, left = _run(path, dask=local_cluster)
    assert left == 2 and not outcome.aborted, outcome.aborted
    assert target.read_text() == "original\n"  # refused inside the sandbox on the worker
    assert games_stored(tmp_path / "t.sqlite") == 2


@needs_dask
def test_workers_keep_engines_warm_between_tasks(tmp_path: Path, local_cluster: str) -> None:

    engines = 4
    path, log = logged_pool(tmp_path, engines, "rounds = 1\nsize = 7\nseed = 3")
    outcome, left = _run(path, dask=local_cluster)
    assert left == 12 and not outcome.aborted, outcome.aborted
    starts = log.read_text().split("\n")[:-1]
    # Each of the two workers starts every engine once, for the engine check, and keeps
    # it for its games (a task used to start both of its own, after a check of its own).
    assert len(starts) == engines * 2, Counter(starts)
    # The run's end released the workers' engines: none of them outlives it.
    assert wait_until(lambda: not _engine_children(os.getpid(), b"--name\0bot"), timeout=10)


@pytest.mark.smoke
@needs_dask
def test_a_run_stopped_during_the_engine_check_leaves_no_engine_on_the_workers(
    tmp_path: Path, local_cluster: str
) -> None:
    # Engines that start only when told (a file appears); the run is stopped (Ctrl-C)
    # once a worker has begun starting one, and only then are they let up. The workers
    # finish their checks, but the run has ended: they keep nothing. Every step waits on
    # what the processes wrote, never on how long anything takes.
    from arbiter.executors.dask import DaskExecutor
    from arbiter.executors.jobs import ExecutorSettings

    begun, go, up = tmp_path / "begun.log", tmp_path / "go", tmp_path / "up.log"
    script = (
        f'echo begun >> "{begun}"; while [ ! -e "{go}" ]; do sleep 0.02; done;'
        f' echo up >> "{up}"; exec "$0" "$@"'
    )
    slow = ["sh", "-c", script, sys.executable, str(BADBOT), "ok", "--name", "slowbot"]
    engines = [f'[[engine]]\nname = "s{i}"\ncommand = {json.dumps(slow)}\n' for i in range(2)]
    t = load_tournament(write_tournament(tmp_path, "t", "rounds = 1", engines))
    executor = DaskExecutor(ExecutorSettings(engines=t.engines), local_cluster)

    async def main() -> None:
        async with executor.session(), trio.open_nursery() as nursery:

            async def check() -> None:
                await executor.preflight(list(t.engines), t.variant, {n: t.tc for n in t.engines})
                raise AssertionError("the check was not stopped")

            nursery.start_soon(check)
            # A worker is starting an engine (the file is polled in a thread).
            assert await trio.to_thread.run_sync(wait_until, begun.exists, 60)
            nursery.cancel_scope.cancel()

    trio.run(main)
    go.touch()  # the run is over: let the engines under way come up
    assert wait_until(up.exists, timeout=60)
    assert wait_until(lambda: not _engine_children(os.getpid(), b"slowbot"), timeout=60)


@needs_dask
def test_a_run_that_ends_does_not_wait_for_another_runs_game(tmp_path: Path) -> None:
    # Two runs share a worker of two threads: B plays a slow game on one while A plays a
    # quick one on the other and ends. A's end releases its own engines; it does not hold
    # up the worker (nor itself) until B's game is over, nor close B's engines.
    from arbiter.executors.dask import DaskExecutor
    from arbiter.executors.jobs import ExecutorSettings

    folders = {"a": tmp_path / "a", "b": tmp_path / "b"}
    for folder in folders.values():
        folder.mkdir()
    quick = write_tournament(folders["a"], "a", "rounds = 1", [bot("x"), bot("y")])
    log = tmp_path / "b-engines.log"
    slow_bots = []
    for name in ("s", "t"):
        argv = [
            "sh",
            "-c",
            f'echo up >> "{log}"; exec "$0" "$@"',
            sys.executable,
            str(BADBOT),
            "slow",
            "--ms",
            "600",
            "--name",
            name,
        ]
        slow_bots.append(f"[[engine]]\nname = {json.dumps(name)}\ncommand = {json.dumps(argv)}\n")
    slow = write_tournament(folders["b"], "b", "rounds = 1", slow_bots)
    slow.write_text(slow.read_text().replace('tc = "10+0.1"', 'tc = "300+1"'))
    stored: dict[str, list[str]] = {"a": [], "b": []}
    a_closed_before_b: list[bool] = []
    closing: dict[str, float] = {}

    def sink(name: str) -> Any:
        class Sink:
            def begin(self, names: dict[str, str]) -> None:
                pass

            def write(self, game: ScheduledGame, record: GameRecord) -> None:
                assert not record.void, record.reason
                stored[name].append(game.game_id)

            def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
                pass

            def engine_started(self, name: str, seconds: float) -> None:
                pass

        return Sink()

    with distributed.LocalCluster(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"
    ) as cluster:
        address = str(cluster.scheduler_address)

        async def play(name: str, path: Path, reporter: Unheard) -> None:
            t = load_tournament(path)
            executor = DaskExecutor(ExecutorSettings(engines=t.engines), address, window=1)
            plan = Plan(ExecutorSettings(engines=t.engines), t.games(), 1, 1, t.variant, t.tc)
            try:
                await Driver(
                    plan.games,
                    plan.game_spec,
                    executor,
                    [sink(name)],
                    reporter,
                    stop=lambda: len(stored[name]) >= 1,
                ).run()
            finally:
                began = trio.current_time()
                await executor.aclose()
                closing[name] = trio.current_time() - began

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(play, "b", slow, Unheard())
                # B's game is under way once both its engines have started.
                up = await trio.to_thread.run_sync(
                    wait_until, lambda: len(log.read_text().split()) == 2 if log.exists() else False
                )
                assert up and not stored["b"]
                await play("a", quick, Unheard())
                a_closed_before_b.append(not stored["b"])

        trio.run(main)
    assert len(stored["a"]) == 1 and len(stored["b"]) == 1
    assert a_closed_before_b == [True]
    # Its end took no longer than a look at the cluster (the release waits for no game).
    assert closing["a"] < 2.5, closing
