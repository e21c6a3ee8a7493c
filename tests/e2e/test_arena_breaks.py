"""Breaks of the arena found by using it as CGOS users and an attacker would: each test
failed on the arena before its fix."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from arena_attack import (
    FakeEngine,
    arena_in_process,
    drop,
    login,
    open_ws,
    raw_exchange,
    until_closed,
)
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


@pytest.mark.parametrize("frontends", [0, 2])
async def test_a_client_that_delays_its_pongs_gains_no_thinking_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frontends: int
) -> None:
    """alice's client (the real one, in this process) answers every ping 200 ms late;
    its engine thinks 60 ms a move. The allowance was the pings' round trip: nearly all
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
    spec = resolve_engine(f"slow={sys.executable} {BADBOT} slow --ms 60", known_engines(None))
    async with (
        arena_in_process(
            tmp_path, monkeypatch, players=("alice",), extra=f"{ALLOWANCE}\nfrontends = {frontends}"
        ) as arena,
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
    assert free and max(free) < 30, free


async def test_a_flood_of_requests_from_one_address_is_limited_while_play_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests for ever new pages of the games list, eight at a time from one address,
    while alice plays the anchor: the address is answered 429 with Retry-After past its
    burst, the store is read for few of them, and games keep finishing meanwhile (each
    such request used to read the store on the loop that plays the games)."""
    spec = resolve_engine("random", known_engines(None))
    async with (
        arena_in_process(
            tmp_path, monkeypatch, players=("alice",), extra="requests_per_minute = 60"
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        hall = arena.server.hall
        games = Games(hall)
        reads = []
        recent_games = hall.store.recent_games

        def counted(limit: int, before: int | None) -> Any:
            reads.append(before)
            return recent_games(limit, before)

        monkeypatch.setattr(hall.store, "recent_games", counted)
        url = f"ws://127.0.0.1:{arena.port}/engine"
        nursery.start_soon(Client(url, "alice", TOKENS["alice"], spec, lambda line: None).run)
        await games.first()
        answers: list[bytes] = []

        async def flood(worker: int) -> None:
            for k in itertools.count():
                target = f"/api/games?limit=200&before={1000 + 8 * k + worker}"
                got, _ = await raw_exchange(
                    arena.port, f"GET {target} HTTP/1.1\r\nhost: x\r\n\r\n".encode()
                )
                answers.append(got.split(b"\r\n\r\n")[0])

        began = trio.current_time()
        async with trio.open_nursery() as flooding:
            for worker in range(8):
                flooding.start_soon(flood, worker)
            await games.first(len(games.games) + 2)  # play went on: two more games
            flooding.cancel_scope.cancel()
        took = trio.current_time() - began
        nursery.cancel_scope.cancel()
    limited = [a for a in answers if a.startswith(b"HTTP/1.1 429")]
    served = [a for a in answers if a.startswith(b"HTTP/1.1 200")]
    # A burst of 15 (a quarter of the minute's 60), then one a second.
    assert limited and len(served) <= 15 + took + 1, (len(limited), len(served), took)
    assert all(b"retry-after: " in a.lower() for a in limited)
    # The store read for the answers served, and at most the 8 in flight when the flood
    # was stopped (read by the server, their answers never received).
    assert len(reads) <= len(served) + 8, (len(reads), len(served), len(limited))


async def register(nursery: trio.Nursery, port: int, name: str, token: str) -> tuple[Any, str]:
    """Log in as `name` under open registration: the first message, and the connection."""
    ws = await open_ws(nursery, port)
    await ws.send_message(login("alice", name=name, token=token))
    return ws, json.loads(await ws.get_message())


@pytest.mark.smoke
async def test_look_alike_names_cannot_register_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of these reads as alice's or is not what it looks like; all were accepted."""
    refused = {
        "alice ": "space",
        " alice": "space",
        "\u0430lice": "mixes scripts",  # a Cyrillic a
        "\u0430\u04cf\u0456\u0441\u0435": "looks like 'alice'",  # all Cyrillic
        "\uff41\uff4c\uff49\uff43\uff45": "plainer form",  # full-width
        "ali\u0301ce": "plainer form",  # a combining accent
        "alic\u0435\u0301": "combining mark",
        "al\u200bice": "control character",  # a zero-width space (refused before)
        "Alice": "looks like 'alice'",
        "ALICE": "looks like 'alice'",
    }
    async with (
        arena_in_process(
            tmp_path, monkeypatch, players=("alice",), engines="", extra="open_registration = true"
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        for name, words in refused.items():
            ws, reply = await register(nursery, arena.port, name, "t" * 20)
            assert reply["type"] == "refused" and words in reply["reason"], (name, reply)
            await until_closed(ws)
        ws, reply = await register(nursery, arena.port, "Zoë", "t" * 20)
        assert reply["type"] == "welcome", reply
        await drop(ws)
        ws, reply = await register(nursery, arena.port, "zoe\u0308", "u" * 20)
        assert reply["type"] == "refused", reply
        await until_closed(ws)


@pytest.mark.smoke
async def test_a_name_that_never_plays_is_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `registration_hours = 0` a registered name that has not played is free as
    soon as it is not connected: another token registers it (it was kept for ever)."""
    extra = "open_registration = true\nregistration_hours = 0"
    async with (
        arena_in_process(tmp_path, monkeypatch, players=(), engines="", extra=extra) as arena,
        trio.open_nursery() as nursery,
    ):
        ws, reply = await register(nursery, arena.port, "zed", "first-token-of-zed")
        assert reply["type"] == "welcome", reply
        # While it is connected the name is its own.
        other, refused = await register(nursery, arena.port, "zed", "other-token-of-zed")
        assert refused["type"] == "refused" and "wrong token" in refused["reason"]
        await until_closed(other)
        await drop(ws)
        await trio.testing.wait_all_tasks_blocked()
        other, reply = await register(nursery, arena.port, "zed", "other-token-of-zed")
        assert reply["type"] == "welcome", reply
        await drop(other)


@pytest.mark.smoke
async def test_a_client_flooding_control_messages_has_them_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """500 stderr messages at once, the limit 10 a second in bursts of 20: what is kept
    is what the limit allows for the time it took; the session goes on."""
    async with (
        arena_in_process(
            tmp_path, monkeypatch, players=("alice",), engines="", extra="messages_per_second = 10"
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(login("alice"))
        engine = FakeEngine(ws)
        await engine.welcome()
        await engine.handshake()
        began = trio.current_time()
        for _ in range(500):
            await ws.send_message('{"type":"stderr","text":"0123456789"}')
        await trio.testing.wait_all_tasks_blocked()
        took = trio.current_time() - began
        (link,) = arena.server.links["alice"]
        assert link.stderr.total <= 10 * (20 + 10 * took + 1), (link.stderr.total, took)
        assert link.dropped > 0
        assert link.dead is None and link.connected
        await drop(ws)
