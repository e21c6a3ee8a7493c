"""The arena's port attacked as the internet and a malicious client would: garbage, slow
and oversized input, hostile logins, forged sessions and control messages. Each test
says what must hold: the attacker is refused or dropped, honest sessions go on, and the
server's log holds no traceback (an attacker must not be able to fill it)."""

from __future__ import annotations

import json
import logging
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

from arbiter.arena import net, web
from arbiter.engines.remote import CLOSE_BUSY, CLOSE_REFUSED, CLOSE_RESTART, MAX_FRAME

UPGRADE = (b"connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n"
           b"sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n")  # fmt: skip


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


async def test_hostile_logins_are_refused_in_words_and_leave_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hostile: list[tuple[str | bytes, str]] = [
        (login("alice", name=5), "needs a name and a token"),
        (login("alice", token=["x"]), "needs a name and a token"),
        (login("alice", token=TOKENS["bob"]), "wrong token for alice"),
        (login("bob", token=TOKENS["alice"]), "wrong token for bob"),
        (login("alice", token=None, dialect="x"), "dialect must be a table"),
        (login("alice", dialect={"islands": "x"}), "islands"),
        (login("alice", dialect={"sizes": [10**30]}), "sizes"),
        (login("alice", options={"a": 1}), "options must be a list"),
        (login("alice", protocol="atoll-arena/0"), "log in first"),
        (login("mallory", token="x" * 20), "not a player of this arena"),
        (login("alice", name="\u00e9" * 300), "not a player"),
        ("{{{", "log in first"),
        ("[1, 2]", "log in first"),
        ('{"type": "login", "name": "alice", "token": 1e999}', "log in first"),
        (b"\x00" * 10, "log in first"),
    ]  # fmt: skip
    async with arena_in_process(tmp_path, monkeypatch, players=("alice", "bob"), engines="") as arena:
        async with trio.open_nursery() as nursery:
            for message, words in hostile:
                ws = await open_ws(nursery, arena.port)
                await ws.send_message(message)
                got, code, _ = await until_closed(ws)
                assert code == CLOSE_REFUSED, (message, got)
                refused = json.loads(got[0])
                assert refused["type"] == "refused" and refused["retry"] is False
                assert words in refused["reason"], (message, refused)
            # A client that goes away during its engine's handshake.
            ws = await open_ws(nursery, arena.port)
            await ws.send_message(login("alice"))
            engine = FakeEngine(ws)
            await engine.welcome()
            await engine.command()
            await drop(ws)
            await trio.testing.wait_all_tasks_blocked()
            assert arena.server.gate.total == 0
            assert "alice" not in arena.server.hall.participants
    assert tracebacks(caplog) == []
