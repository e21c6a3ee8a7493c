"""Rooms: one server, several variants and sizes, each with its own pairing, store,
leaderboard and pages, through the real server and clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from arena_attack import arena_in_process, get, refusal
from arena_helpers import TOKENS

from arbiter.arena.client import Client
from arbiter.cli.options import known_engines
from arbiter.engines.config import resolve_engine

ROOMS = """
[[room]]
name = "atoll7"

[[room]]
name = "hex5"
islands = 4
size = 5
tc = "20+0.1"
"""


async def test_rooms_keep_their_own_games_stores_and_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = resolve_engine("random", known_engines(None))
    games: dict[str, list[dict[str, Any]]] = {"atoll7": [], "hex5": []}
    both = trio.Event()
    refusals: list[str] = []

    async def refused(room: str | None) -> None:
        client = Client(arena.url, "alice", TOKENS["alice"], spec, lambda line: None, room)
        reason = await refusal(client)
        if reason is not None:
            refusals.append(reason)

    async with (
        arena_in_process(
            tmp_path,
            monkeypatch,
            players=("alice", "bob", "carol", "dave"),
            engines="",
            extra=ROOMS,
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        for room, (_, hall) in arena.server.rooms.items():

            def spy(event: str, data: Any, room: str = room, publish: Any = hall.publish) -> None:
                publish(event, data)
                if event == "game" and not data["void"]:
                    games[room].append(dict(data))
                    if all(games.values()):
                        both.set()

            hall.publish = spy
        await refused(None)
        await refused("nope")
        assert "this arena has rooms (atoll7, hex5): choose one" in refusals[0]
        assert "no room 'nope' here; its rooms: atoll7, hex5" in refusals[1]
        for name, room in (
            ("alice", "atoll7"),
            ("bob", "atoll7"),
            ("carol", "hex5"),
            ("dave", "hex5"),
        ):
            client = Client(arena.url, name, TOKENS[name], spec, lambda line: None, room)
            nursery.start_soon(client.run)
        with trio.fail_after(60):
            await both.wait()
        assert {g["seat1"] for g in games["atoll7"]} <= {"alice", "bob"}
        assert {g["seat1"] for g in games["hex5"]} <= {"carol", "dave"}

        status, _, body = await get(arena.port, "/api/rooms")
        rooms = {r["room"]: r for r in json.loads(body)["rooms"]}
        assert rooms["atoll7"]["game"] == "Atoll 7" and rooms["hex5"]["game"] == "Hex 5"
        assert rooms["hex5"]["tc"] == "20+0.1" and rooms["atoll7"]["tc"] == "10+0.1"
        status, _, index = await get(arena.port, "/")
        assert 'href="room/hex5/"' in index.decode() and 'href="room/atoll7/"' in index.decode()
        status, _, page = await get(arena.port, "/room/hex5/")
        assert status.startswith("HTTP/1.1 200") and "test-arena hex5" in page.decode()
        assert 'id="rooms" href="../../"' in page.decode()  # back to the list of rooms
        status, _, body = await get(arena.port, "/room/hex5/api/games")
        listed = json.loads(body)["games"]
        assert listed and all({g["seat1"], g["seat2"]} == {"carol", "dave"} for g in listed)
        number = listed[0]["number"]
        status, _, sgf = await get(arena.port, f"/room/hex5/game/{number}.sgf")
        assert sgf.startswith(b"(;FF[4]") and b"SZ[5]" in sgf
        assert (await get(arena.port, f"/room/atoll7/game/{number}.sgf"))[0].endswith("404 ")
        status, _, page = await get(arena.port, "/room/atoll7/engine/alice")
        assert status.startswith("HTTP/1.1 200")
        assert (await get(arena.port, "/api/live"))[0].startswith("HTTP/1.1 404")
        nursery.cancel_scope.cancel()
    assert (tmp_path / "test-arena-atoll7.sqlite").exists()
    assert (tmp_path / "test-arena-hex5.sqlite").exists()
