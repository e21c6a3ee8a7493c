"""The arena with front ends (`frontends = 2`): processes that hold the engines'
connections. Most of what they do is tested by running arena tests with and without
them (test_arena.py, test_arena_life.py); here, a front end that dies mid-game."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
import trio
from arena_attack import FakeEngine, arena_in_process, drop, login, open_ws, until_closed
from arena_helpers import Server, arena_file, client, events, wait_games
from commands import invoke
from paths import BADBOT
from processes import running, wait_until

from arbiter.engines.remote import MAX_FRAME


@pytest.mark.smoke
async def test_the_gate_counts_a_connection_a_front_end_holds_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server hands the socket over and closes its own copy, but the connection
    still counts against the limits until its front end says it ended; the session's
    network time is what the front end measured."""
    async with (
        arena_in_process(
            tmp_path, monkeypatch, players=("alice",), engines="", extra="frontends = 1"
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        gate = arena.server.gate
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(login("alice"))
        engine = FakeEngine(ws)
        await engine.welcome()
        assert gate.total == 1 and gate.open["127.0.0.1"] == 1
        (link,) = arena.server.links["alice"]
        assert link.stats.kernel() is not None  # read by the front end as the login came
        await drop(ws)
        with trio.fail_after(10):
            while gate.total:  # noqa: ASYNC110 (a counter, and the front end is a process)
                await trio.sleep(0.01)
        assert not gate.open and link.dead is not None
        nursery.cancel_scope.cancel()


@pytest.mark.smoke
async def test_a_login_whose_refusal_would_be_huge_does_not_take_its_front_end_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown name of 16,000 emoji: the login is under the frame limit, but its
    refusal echoed the name, escaped to three times the size, and the front end died
    on the oversized frame with every connection it held. The refusal's reason is now
    a line, and a message too big for the relay ends only its own connection."""
    async with (
        arena_in_process(
            tmp_path, monkeypatch, players=("alice",), engines="", extra="frontends = 1"
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        assert arena.server.frontends is not None
        (front,) = arena.server.frontends.fronts
        name = "\U0001f600" * 16_000
        # UTF-8 in the login (4 bytes an emoji): under the 64 KiB a message may have.
        message = json.dumps(
            json.loads(login("alice", token="x" * 20, name=name)), ensure_ascii=False
        )
        assert len(message.encode()) < MAX_FRAME
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(message)
        got, code, _ = await until_closed(ws)
        refusal = json.loads(got[0])
        assert refusal["type"] == "refused" and len(refusal["reason"]) <= 300
        assert code is not None and code != 1006  # closed by the server, not dropped
        other = await open_ws(nursery, arena.port)  # the same front end takes the next
        await other.send_message(login("alice"))
        await FakeEngine(other).welcome()
        assert front.starts == 1, "the front end was restarted"
        await drop(other)
        nursery.cancel_scope.cancel()


def front_ends(server: int) -> set[int]:
    """The live front-end processes of the server `server`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == server and b"arbiter.arena.frontend" in cmdline and running(int(entry.name)):
            found.add(int(entry.name))
    return found


def test_a_front_end_killed_mid_game_is_restarted_and_the_game_resumes(tmp_path: Path) -> None:
    """SIGKILL to a front end holding an engine's connection mid-game: that connection
    drops, the client reconnects and resumes its session through the other front end,
    the game ends as it would have, the server starts the front end again, and the
    store reads as any arena's."""
    file = arena_file(tmp_path, players=("alice", "bob"), engines="", extra="frontends = 2")
    server = Server(file)
    slow = f"slow={sys.executable} {BADBOT} slow --ms 150"
    alice = client(server.port, "alice", "heuristic", tmp_path)
    bob = client(server.port, "bob", slow, tmp_path)
    seen: set[int] = set()
    try:
        first = front_ends(server.popen.pid)
        seen |= first
        assert len(first) == 2
        with events(server.port) as stream:
            for name, data in stream:
                if name == "move" and data["ply"] >= 4:
                    game = data["game"]
                    break
            victim = min(first)
            os.kill(victim, signal.SIGKILL)
            assert wait_until(lambda: "resumed as" in alice.out.text() + bob.out.text())
            finished = wait_games(stream, 1, lambda g: g["game"] == game)[0]
            assert wait_until(lambda: len(front_ends(server.popen.pid) - {victim}) == 2)
            seen |= front_ends(server.popen.pid)
            wait_games(stream, 1)  # play goes on
        assert finished["termination"] in ("connection", "resign"), finished
        assert not finished["void"]
    finally:
        for p in (alice, bob):
            p.stop()
        assert server.stop() in (0, 130, 143), server.out.text()
    assert "Traceback" not in server.out.text()
    assert wait_until(lambda: not any(running(pid) for pid in seen), timeout=10)
    rated = invoke("ratings", str(tmp_path / "test-arena.sqlite"), "--json")
    assert rated.returncode == 0, rated.stderr
    assert {e["name"] for e in json.loads(rated.stdout)["engines"]} == {"alice", "bob"}
