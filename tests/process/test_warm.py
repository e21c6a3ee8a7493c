"""Warm engines: a pool of engines starts each engine about once per slot, through the CLI."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import trio
import trio.testing
from commands import arbiter as run
from files import logged_pool
from paths import BADBOT
from processes import running, wait_until
from stores import read_store

from arbiter.engines import sandbox
from arbiter.executors.jobs import Preflight
from arbiter.executors.local import LocalExecutor
from arbiter.results.store import Store
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl
from arbiter.runs.run import Unheard
from arbiter.runs.run import run as run_plan
from arbiter.runs.tournament import load_tournament


@pytest.mark.slow
def test_a_pool_starts_each_engine_at_most_once_per_slot(tmp_path: Path) -> None:
    engines = 6
    header = 'rounds = 1\nconcurrency = 2\ntc = "10+0.1"\nsize = 7\nseed = 3'
    path, log = logged_pool(tmp_path, engines, header)
    done = run("tournament", "run", str(path), "-q")
    assert done.returncode == 0, done.stderr
    starts = log.read_text().split("\n")[:-1]
    # Every start is a different (engine, starting process) pair: the two worker processes
    # check the engines before the first game (a share each, kept warm for their games),
    # then each keeps whatever it started for the rest of the run (a pool of 6 fits a
    # slot's budget); the harness itself starts none.
    assert len(starts) == len(set(starts)), Counter(starts).most_common(3)
    by_process = Counter(line.split()[1] for line in starts)
    assert len(by_process) == 2
    assert len(starts) <= engines * 2
    status = json.loads(run("tournament", "status", str(path), "--json").stdout)
    games = engines * (engines - 1)
    assert status["done"] == games and status["voids"] == [], status
    # The store counts every start, and `status` shows them to the organiser.
    counted = status["engine_starts"]
    assert counted["count"] == len(starts) and counted["seconds"] > 0
    assert counted["per_game"] == round(counted["count"] / games, 3)
    shown = run("tournament", "status", str(path)).stdout
    assert f"Engines were started {counted['count']} times" in shown


def _starts(path: Path) -> int:
    status = json.loads(run("tournament", "status", str(path), "--json").stdout)
    assert status["voids"] == [], status
    return int(status["engine_starts"]["count"])


@pytest.mark.slow  # a dozen sandboxed starts; the sandbox and the warm budget each have fast tests
@pytest.mark.skipif(sandbox.unavailable() is not None, reason="no sandbox (bubblewrap) here")
def test_a_sandboxed_engine_is_fresh_every_game_unless_kept_for_its_pairing(
    tmp_path: Path,
) -> None:
    engines = "\n".join(
        f'[[engine]]\nname = "{n}"\ncommand = {json.dumps([sys.executable, str(BADBOT), "ok"])}\n'
        for n in ("a", "b", "c")
    )
    header = 'rounds = 2\nconcurrency = 1\ntc = "10+0.1"\nsize = 7\nseed = 3\nsandbox = true'
    per_game = tmp_path / "per_game.toml"
    per_game.write_text(f'[tournament]\nname = "g"\n{header}\n\n{engines}')
    per_pairing = tmp_path / "per_pairing.toml"
    kept = 'confine_per = "pairing"'
    per_pairing.write_text(f'[tournament]\nname = "p"\n{header}\n{kept}\n\n{engines}')
    for path in (per_game, per_pairing):
        done = run("tournament", "run", str(path), "-q")
        assert done.returncode == 0, done.stderr
    # 3 pairings x 2 rounds x 2 seats = 12 games, after an engine check that starts each
    # engine once. By default each game starts both of its engines afresh; kept for a
    # pairing, an engine starts at most once for that pairing's 4 games in a row (the
    # slot takes them one after the other): at most twice per pairing.
    assert _starts(per_game) == 3 + 24
    assert _starts(per_pairing) <= 3 + 2 * 3
    # Changing how limits count is a change of conditions: refused on resume.
    per_pairing.write_text(per_pairing.read_text().replace(kept, ""))
    refused = run("tournament", "run", str(per_pairing), "-q")
    assert refused.returncode == 2 and "confine_per" in refused.stderr, refused.stderr


@pytest.mark.slow
def test_a_worker_process_that_dies_after_the_engine_check_costs_no_game(
    tmp_path: Path,
) -> None:
    # Two worker processes check the engines and keep them; one then dies (killed, as
    # by the OOM killer) before the run sends it anything. Its slot starts a new worker
    # and the run plays every game, instead of failing on the dead worker's pipe.
    path, log = logged_pool(tmp_path, 4, 'rounds = 1\nconcurrency = 2\ntc = "10+0.1"\nsize = 7')
    t = load_tournament(path)

    class KilledAfterCheck(LocalExecutor):
        async def preflight(
            self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
        ) -> Preflight:
            checked = await super().preflight(keys, variant, tcs)
            worker = int(log.read_text().split()[1])  # the process that started an engine
            os.kill(worker, signal.SIGKILL)
            # Dead, all its threads too (until then its exit cannot be collected).
            tasks = Path(f"/proc/{worker}/task")
            assert wait_until(
                lambda: (
                    not running(worker) and (not tasks.exists() or len(list(tasks.iterdir())) <= 1)
                ),
                timeout=10,
            )
            return checked

    with Store.open(t.output) as store:
        plan = t.plan(store)
        executor = KilledAfterCheck(plan.settings, 2)
        outcome = trio.run(run_plan, plan, executor, Unheard())
    assert not outcome.aborted, outcome.aborted
    stored = read_store(t.output)
    assert len(stored.games) == 12 and not stored.voids


def counted_pool(folder: Path, engines: int, header: str, extra: str = "") -> tuple[Path, Path]:
    """A round-robin of `engines` test bots (each with `extra` in its table), each noting
    as it starts how many of the pool's engines are running beside it; the folder of
    their pids is `folder / "alive"`."""
    alive = folder / "alive"
    alive.mkdir()
    seen = folder / "seen.log"
    wrapper = folder / "counted.sh"
    wrapper.write_text(
        "#!/bin/sh\nn=0\n"
        f'for f in "{alive}"/*; do [ -e "$f" ] || continue\n'
        '  grep -qs "^State:[[:space:]]*[RSD]" "/proc/${f##*/}/status" && n=$((n+1))\n'
        f'done\necho "$n" >> "{seen}"\ntouch "{alive}/$$"\nexec "$@"\n'
    )
    wrapper.chmod(0o755)
    tables = []
    for i in range(engines):
        argv = [str(wrapper), sys.executable, str(BADBOT), "ok", "--name", f"bot{i}"]
        tables.append(f'[[engine]]\nname = "e{i}"\ncommand = {json.dumps(argv)}\n{extra}')
    path = folder / "pool.toml"
    path.write_text(f'[tournament]\nname = "pool"\n{header}\n\n' + "\n".join(tables))
    return path, seen


def alive_engines(folder: Path) -> int:
    return sum(running(int(f.name)) for f in (folder / "alive").iterdir())


@pytest.mark.slow
def test_the_engine_check_keeps_no_more_engines_running_than_the_budget(
    tmp_path: Path,
) -> None:
    # The slot (in this process, at concurrency 1) checks 8 engines at most 2 at a time;
    # with a budget of 2 warm engines it may keep 2, so no start ever sees more than 3
    # others running: not all 8 at once, as if the budget did not hold in the check.
    header = 'rounds = 1\nconcurrency = 1\ntc = "10+0.1"\nsize = 7\nwarm_engines = 2'
    path, seen = counted_pool(tmp_path, 8, header)
    done = run("tournament", "run", str(path), "-q")
    assert done.returncode == 0, done.stderr
    counts = [int(n) for n in seen.read_text().split()]
    assert max(counts) <= 3, counts


def test_the_engines_kept_after_the_check_fit_the_memory_budget(tmp_path: Path) -> None:
    # Limited engines kept per pairing, each declaring 1000 MB, on a slot whose warm
    # engines may declare 2000 MB: the check may keep two of the three, not all three.
    header = (
        'rounds = 1\nconcurrency = 1\ntc = "10+0.1"\nsize = 7\nwarm_memory_mb = 2000\n'
        'confine_per = "pairing"'
    )
    path, _ = counted_pool(tmp_path, 3, header, "limits = { memory_mb = 1000 }\n")
    t = load_tournament(path)
    after_check: list[int] = []

    class Counted(LocalExecutor):
        async def preflight(
            self, keys: Sequence[str], variant: Variant, tcs: Mapping[str, TimeControl]
        ) -> Preflight:
            checked = await super().preflight(keys, variant, tcs)
            after_check.append(alive_engines(tmp_path))
            return checked

    with Store.open(t.output) as store:
        plan = t.plan(store)
        outcome = trio.run(run_plan, plan, Counted(plan.settings, 1), Unheard())
    assert not outcome.aborted, outcome.aborted
    assert after_check == [2]
    assert len(read_store(t.output).games) == 6


async def test_a_game_no_slot_suits_is_not_passed_over_for_ever() -> None:
    from arbiter.executors.dispatch import Dispatcher
    from arbiter.executors.jobs import GameJob
    from arbiter.games.referee import GameSpec
    from arbiter.rules import Variant
    from arbiter.rules.clock import TimeControl

    tc = TimeControl.parse("1+0")

    def job(number: int, engines: tuple[str, str]) -> GameJob:
        return GameJob(number, GameSpec(f"g{number}", Variant(), (tc, tc)), engines)

    send, receive = trio.open_memory_channel[GameJob](1000)
    send.send_nowait(job(0, ("x", "y")))  # first in the schedule, fits nobody's engines
    for number in range(1, 301):
        send.send_nowait(job(number, ("a", "b")))  # each fits the slot perfectly
    send.close()
    dispatcher = Dispatcher(receive, slots=1)
    order = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(dispatcher.fill)
        await trio.testing.wait_all_tasks_blocked()  # the window has been read full
        while (taken := await dispatcher.take({"a", "b"})) is not None:
            order.append(taken.number)
            await trio.testing.wait_all_tasks_blocked()  # the slot plays; the window refills
    assert sorted(order) == list(range(301))  # every game, once
    # Passed over while better-fitting games kept coming, but only for a window's worth.
    assert order.index(0) == dispatcher.lookahead
