"""Breaks of the arena found by using it as CGOS users and an attacker would: each test
failed on the arena before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from arena_attack import FakeEngine, arena_in_process, drop, login, open_ws


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
