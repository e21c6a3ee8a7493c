"""Breaks of the arena found by using it as CGOS users and an attacker would: each test
failed on the arena before its fix."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from arena_attack import FakeEngine, arena_in_process, drop, login, open_ws
from arena_helpers import TOKENS
from paths import BADBOT
from trio_websocket import WebSocketConnection

from arbiter.arena.client import Client
from arbiter.cli.options import known_engines
from arbiter.engines.config import resolve_engine

ALLOWANCE = "latency_allowance = 0.25"


class Games:
    """The games a hall finishes, as it publishes them (installed before they end)."""

    def __init__(self, hall: Any) -> None:
        self.games: list[dict[str, Any]] = []
        self._more = trio.Event()
        publish = hall.publish

        def spy(event: str, data: Any) -> None:
            publish(event, data)
            if event == "game":
                self.games.append(dict(data))
                self._more.set()

        hall.publish = spy

    async def first(self, count: int = 1) -> list[dict[str, Any]]:
        with trio.fail_after(60):
            while len(self.games) < count:
                self._more = trio.Event()
                await self._more.wait()
        return self.games[:count]


@pytest.mark.smoke
async def test_a_connection_dropped_while_on_move_is_a_disconnect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's socket closes after the turn was sent, and the grace outlasts the
    clock: the referee's deadline passes first, and still the verdict is `disconnect`
    (it was `time`: the referee kills the engine before asking what it awaited)."""
    async with (
        arena_in_process(
            tmp_path,
            monkeypatch,
            players=("alice",),
            tc="1+0",
            extra="disconnect_grace = 60",
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        games = Games(arena.server.hall)
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(login("alice"))
        engine = FakeEngine(ws)
        await engine.welcome()
        await engine.handshake()
        while True:  # the set-up and the moves it is told of are agreed to
            number, word = (await engine.command()).split()[:2]
            if word == "genmove":
                break
            await ws.send_message(f"={number}\n\n".encode())
        await drop(ws)
        game = (await games.first())[0]
    assert game["termination"] == "disconnect", game
    assert game["winner"] == "random"
    assert "connection" in game["reason"], game


@pytest.mark.smoke
async def test_a_client_that_delays_its_pongs_gains_no_thinking_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice's client (the real one, in this process) answers every ping 200 ms late;
    its engine thinks 100 ms a move. The allowance was the pings' round trip: nearly all
    of each move's thinking was free. The server's own measurement (the kernel's round
    trip, on this machine well under a millisecond) leaves it charged."""

    async def late_pong(self: Any, event: Any) -> None:
        async def later() -> None:
            await trio.sleep(0.2)
            with contextlib.suppress(Exception):  # the connection may have ended meanwhile
                await self._send(event.response())

        trio.lowlevel.spawn_system_task(later)

    # Only the client receives pings: the server's connections send them.
    monkeypatch.setattr(WebSocketConnection, "_handle_ping_event", late_pong)
    spec = resolve_engine(f"slow={sys.executable} {BADBOT} slow --ms 100", known_engines(None))
    async with (
        arena_in_process(tmp_path, monkeypatch, players=("alice",), extra=ALLOWANCE) as arena,
        trio.open_nursery() as nursery,
    ):
        games = Games(arena.server.hall)
        url = f"ws://127.0.0.1:{arena.port}/engine"
        nursery.start_soon(Client(url, "alice", TOKENS["alice"], spec, lambda line: None).run)
        game = (await games.first())[0]
        ((_, record),) = arena.server.hall.store.recent_games(1, None)
        nursery.cancel_scope.cancel()
    assert record.game_id == game["game"] and record.plies > 2
    opening = record.opening
    movers = [record.seat1 if ply % 2 == 0 else record.seat2 for ply in range(record.plies)]
    free = [
        a
        for m, a in zip(movers[opening:], record.allowance_ms[opening:], strict=True)
        if m == "alice"
    ]
    assert free and max(free) < 50, free
