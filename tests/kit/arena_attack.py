"""Hostile peers for the arena's tests: raw sockets and hand-made relay clients that say
what `arbiter arena connect` never would, against a server in this trio run.

The server runs in-process (`arena_in_process`) where a test must know that the server
has finished handling what it sent (`trio.testing.wait_all_tasks_blocked`) or must read
its log; the tests that measure play under attack run a real server process instead.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from arena_helpers import TOKENS, arena_file
from trio_websocket import ConnectionClosed, WebSocketConnection, connect_websocket_url

from arbiter.arena import net
from arbiter.arena.config import load_arena
from arbiter.arena.serve import serve
from arbiter.engines.remote import ENGINE_PATH, MAX_FRAME, PROTOCOL

COMMANDS = (
    "protocol_version",
    "name",
    "version",
    "known_command",
    "list_commands",
    "quit",
    "boardsize",
    "clear_board",
    "play",
    "genmove",
    "atoll-islands",
    "atoll-pie",
)


@dataclass
class Running:
    """An arena served in this trio run: its port, its `Server` and its log lines."""

    port: int
    server: net.Server
    said: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{ENGINE_PATH}"


@asynccontextmanager
async def arena_in_process(folder: Path, monkeypatch: Any, **kwargs: Any) -> AsyncIterator[Running]:
    """`arbiter arena serve` on an arena file, in this trio run (stopped at the end)."""
    arena = load_arena(arena_file(folder, **kwargs))
    servers: list[net.Server] = []

    class Kept(net.Server):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            servers.append(self)

    monkeypatch.setattr("arbiter.arena.serve.Server", Kept)
    said: list[str] = []
    listening = trio.Event()

    def say(line: str) -> None:
        said.append(line)
        listening.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, arena, say)
        await listening.wait()
        port = int(said[0].split("http://127.0.0.1:")[1].split("/")[0])
        try:
            yield Running(port, servers[0], said)
        finally:
            nursery.cancel_scope.cancel()


def login(who: str, token: Any = None, **fields: Any) -> str:
    """A login message as `who`, with `fields` put in or over its fields."""
    message = {
        "type": "login",
        "protocol": PROTOCOL,
        "name": who,
        "token": TOKENS[who] if token is None else token,
        "session": None,
        "received": 0,
        **fields,
    }
    return json.dumps(message)


async def open_ws(nursery: trio.Nursery, port: int) -> WebSocketConnection:
    return await connect_websocket_url(
        nursery,
        f"ws://127.0.0.1:{port}{ENGINE_PATH}",
        subprotocols=[PROTOCOL],
        max_message_size=4 * MAX_FRAME,
    )


async def until_closed(ws: WebSocketConnection) -> tuple[list[Any], int | None, str]:
    """Every message the server sends, then its close code and reason."""
    got: list[Any] = []
    try:
        while True:
            got.append(await ws.get_message())
    except ConnectionClosed as exc:
        reason = exc.reason
        await drop(ws)
        return got, (reason.code if reason else None), (reason.reason or "" if reason else "")


async def drop(ws: WebSocketConnection) -> None:
    """Close the connection's socket, as a killed client does (the library keeps it open
    after a close from the server)."""
    await trio.aclose_forcefully(ws._stream)


class FakeEngine:
    """The engine's end of a relayed session, answered by hand: the handshake, and then
    whatever commands come, each line as it is (`commands`)."""

    def __init__(self, ws: WebSocketConnection, name: str = "fake", version: str = "1.0") -> None:
        self.ws = ws
        self.name = name
        self.version = version
        self.received = 0  # bytes received in the session, as a client counts them
        self.commands: list[str] = []
        self.session = ""
        self._buffer = b""

    async def welcome(self) -> dict[str, Any]:
        reply = json.loads(await self.ws.get_message())
        assert reply["type"] == "welcome", reply
        self.session = reply["session"]
        return dict(reply)

    async def command(self) -> str:
        """The next command line the server sends to the engine."""
        while b"\n" not in self._buffer:
            data = await self.ws.get_message()
            assert isinstance(data, bytes), data
            self.received += len(data)
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.commands.append(line.decode())
        return line.decode()

    async def agree(self) -> None:
        """Answer every command with an empty success, until the connection ends (enough
        for a game's set-up, never for a move)."""
        with contextlib.suppress(ConnectionClosed):
            while True:
                number = (await self.command()).split()[0]
                await self.ws.send_message(f"={number}\n\n".encode())

    async def handshake(self) -> None:
        answers = {
            "protocol_version": "2",
            "name": self.name,
            "version": self.version,
            "list_commands": "\n".join(COMMANDS),
        }
        for _ in range(4):
            number, word = (await self.command()).split()
            await self.ws.send_message(f"={number} {answers[word]}\n\n".encode())


async def raw_exchange(port: int, data: bytes, timeout: float = 5.0) -> tuple[bytes, bool]:
    """Send `data` on a plain connection and read until the server closes it: what came
    back, and whether the server closed the connection within `timeout` seconds."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    got = b""
    async with stream:
        with trio.move_on_after(timeout):
            try:
                await stream.send_all(data)
                while chunk := await stream.receive_some(65536):
                    got += chunk
            except trio.BrokenResourceError:
                pass
            return got, True
    return got, False


async def get(port: int, target: str) -> tuple[str, dict[str, str], bytes]:
    """One HTTP request: the status line, the headers (lower-case) and the body."""
    got, _ = await raw_exchange(port, f"GET {target} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
    head, _, body = got.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status, headers, body


def frame(opcode: int, payload: bytes, *, fin: bool) -> bytes:
    """One masked WebSocket frame, as a client sends it (RFC 6455, section 5.2)."""
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    mask = b"\x01\x02\x03\x04"
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def raw_websocket(port: int) -> trio.SocketStream:
    """A plain connection through the WebSocket upgrade at the engines' door."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(
        f"GET {ENGINE_PATH} HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: websocket\r\n"
        f"sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        f"sec-websocket-protocol: {PROTOCOL}\r\n\r\n".encode()
    )
    got = b""
    while b"\r\n\r\n" not in got:
        got += await stream.receive_some(4096)
    assert got.startswith(b"HTTP/1.1 101"), got
    return stream


async def refusal(client: Any) -> str | None:
    """Run an `arbiter.arena.client.Client` until it ends: the reason the arena gave for
    refusing it (the innermost `Refused` of trio's exception groups), or None."""
    from arbiter.arena.client import Refused

    reason: str | None = None
    try:
        await client.run()
    except* Refused as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        reason = str(leaf)
    return reason
