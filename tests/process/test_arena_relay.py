"""The arena's front ends: the frames between the server and a front end, and a front
end relaying real WebSocket connections, here in one trio run (the server's end over a
Unix socket pair, the front end's, a TCP port and trio-websocket clients)."""

from __future__ import annotations

import random
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    connect_websocket_url,
)

from arbiter.arena import frontends
from arbiter.arena.frontend import FrontEnd
from arbiter.arena.frontends import Frontend, Relayed
from arbiter.arena.relay import MAX_BODY, Frames, Kind, frame, parse_rtt, rtt_bytes
from arbiter.engines.remote import PROTOCOL, LinkStats


def test_frames_come_out_whole_however_the_stream_cuts_them() -> None:
    sent = [
        (1, Kind.TEXT, b'{"type":"login"}'),
        (2, Kind.BYTES, bytes(range(256)) * 40),
        (0, Kind.BEAT, b""),
        (7, Kind.ENDED, b"\x03\xe8bye"),
    ]
    stream = b"".join(frame(*f) for f in sent)
    cuts = sorted(random.Random(4).sample(range(1, len(stream)), 30))
    frames = Frames()
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        got += frames.feed(stream[start:end])
    assert got == sent
    assert parse_rtt(rtt_bytes(0.0123)) == 0.0123 and parse_rtt(rtt_bytes(None)) is None
    with pytest.raises(ValueError, match="a frame of"):
        Frames().feed(frame(1, Kind.BYTES, b"x" * (MAX_BODY + 1)))


class Bench:
    """A server's end and a front end in this run, and a port whose connections are
    handed to the front end as the server hands them (after reading the head)."""

    def __init__(self, front: Frontend, port: int) -> None:
        self.front = front
        self.port = port
        self.clients: list[WebSocketConnection] = []
        self.handed: trio.MemorySendChannel[Relayed]
        self.handed, self.relayed = trio.open_memory_channel[Relayed](16)

    async def handle(self, stream: trio.SocketStream) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += await stream.receive_some(4096)
        conn = await self.front.hand(stream.socket, head, False)
        stream.socket.close()  # the server's copy: the front end has its own
        await self.handed.send(conn)

    async def connect(self, nursery: trio.Nursery, path: str = "/engine") -> WebSocketConnection:
        client = await connect_websocket_url(
            nursery, f"ws://127.0.0.1:{self.port}{path}", subprotocols=[PROTOCOL]
        )
        self.clients.append(client)
        return client


@asynccontextmanager
async def relay_bench() -> AsyncIterator[tuple[Bench, trio.Nursery]]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    front = Frontend(1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(FrontEnd(trio.socket.from_stdlib_socket(theirs)).run)
        await nursery.start(front.serve_channel, trio.socket.from_stdlib_socket(ours))
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        bench = Bench(front, listeners[0].socket.getsockname()[1])
        nursery.start_soon(trio.serve_listeners, bench.handle, listeners)
        try:
            yield bench, nursery
        finally:
            nursery.cancel_scope.cancel()
            for client in bench.clients:
                client._stream.socket.close()  # the library keeps it open
            for listener in listeners:
                listener.socket.close()


async def test_a_front_end_relays_both_ways_measures_and_closes_as_the_server_says() -> None:
    with trio.fail_after(20):
        async with relay_bench() as (bench, nursery):
            client = await bench.connect(nursery)
            conn = await bench.relayed.receive()
            stats = conn.stats = LinkStats()
            assert await conn.opened()
            await client.send_message('{"type":"login"}')
            await client.send_message(b"= engine output\n")
            assert await conn.get_message() == '{"type":"login"}'
            assert await conn.get_message() == b"= engine output\n"
            assert conn.kernel() is not None  # read by the front end as the message came
            await conn.send_message('{"type":"welcome"}')
            await conn.send_message(b"genmove b\n")
            assert await client.get_message() == '{"type":"welcome"}'
            assert await client.get_message() == b"genmove b\n"
            while not stats.rtts:  # the front end pings at once; the client answers
                await trio.testing.wait_all_tasks_blocked()
            assert 0 <= stats.rtts[0] < 5
            await conn.aclose(4003, "the arena is stopping; reconnect later")
            with pytest.raises(ConnectionClosed) as closed:
                await client.get_message()
            assert closed.value.reason is not None and closed.value.reason.code == 4003
            assert conn.ended.is_set() and not bench.front.conns
            with pytest.raises(ConnectionClosed):
                await conn.get_message()


async def test_a_client_that_floods_is_cut_off_and_its_front_end_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server reads nothing of one connection while its client sends on: past the
    queue's bound the connection is closed, and another one of the same front end
    still carries messages both ways."""
    monkeypatch.setattr(frontends, "QUEUE_MESSAGES", 4)
    with trio.fail_after(20):
        async with relay_bench() as (bench, nursery):
            flood = await bench.connect(nursery)
            flooded = await bench.relayed.receive()
            other = await bench.connect(nursery)
            calm = await bench.relayed.receive()
            assert await flooded.opened() and await calm.opened()
            with pytest.raises(ConnectionClosed) as closed:
                for _ in range(1000):
                    await flood.send_message(b"x" * 100)
                await flood.get_message()
            assert closed.value.reason is not None and closed.value.reason.code == 1008
            with pytest.raises(ConnectionClosed):
                await flooded.get_message()
            await other.send_message(b"still here")
            assert await calm.get_message() == b"still here"
            await calm.send_message(b"and so is the server")
            assert await other.get_message() == b"and so is the server"


async def test_an_upgrade_elsewhere_than_the_engines_door_is_refused_by_the_front_end() -> None:
    upgrade = (
        b"GET /elsewhere HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
        b"sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    with trio.fail_after(20):
        async with relay_bench() as (bench, _):
            stream = await trio.open_tcp_stream("127.0.0.1", bench.port)
            async with stream:
                await stream.send_all(upgrade)
                got = b""
                while chunk := await stream.receive_some(4096):  # until the front end closes
                    got += chunk
            assert got.startswith(b"HTTP/1.1 404") and got.endswith(b"engines connect at /engine\n")
            conn = await bench.relayed.receive()
            assert not await conn.opened()
            await conn.ended.wait()
            assert not bench.front.conns


async def test_a_front_end_that_stops_answering_is_given_up(autojump_clock: trio.abc.Clock) -> None:
    """The other end of the channel takes what is written and says nothing (a front end
    that hangs): after FRONT_WAIT seconds without an answer to the beats the server
    gives it up, and the connection it held ends (the server then starts another)."""
    ours, silent = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    client_end, server_end = socket.socketpair()
    front = Frontend(1)
    dropped: list[int] = []

    async def serve(task_status: trio.TaskStatus[None]) -> None:
        sock = trio.socket.from_stdlib_socket(ours)
        dropped.append(await front.serve_channel(sock, task_status))

    with silent, client_end, server_end:
        async with trio.open_nursery() as nursery:
            await nursery.start(serve)
            conn = await front.hand(trio.socket.from_stdlib_socket(server_end), b"GET /", False)
        assert dropped == [1] and trio.current_time() >= frontends.FRONT_WAIT
        assert conn.ended.is_set()
        with pytest.raises(ConnectionClosed):
            await conn.get_message()
