"""What the arena's server and its front ends share: the frames between them, the
engines' WebSocket handshake read from a head the gate has read already, the pings and
the kernel's round trip.

A front end (`frontend.py`) owns engines' WebSocket connections that the server hands
it (`frontends.py`): the server keeps the listener, the gate, logins and the games, the
front end does the framing, the pings and the relay of each message. Between the two,
one Unix stream socket carries frames: a 4-byte length (of what follows), a 4-byte
connection id (0: the channel itself), a 1-byte kind, then the payload. The socket of a
handed-over connection goes with its `HANDOFF` frame as SCM_RIGHTS ancillary data.

Both ends are our code, but what a client sent is inside the frames: lengths are capped
as the WebSocket's own messages are (`MAX_FRAME`).
"""

from __future__ import annotations

import array
import enum
import socket
import struct
import sys
from collections.abc import Awaitable, Callable
from typing import NoReturn

import trio
from trio_websocket import WebSocketConnection, WebSocketRequest, wrap_server_stream

from arbiter.engines.remote import MAX_FRAME, no_measure

HEAD_SECONDS = 10.0  # for a request's head, and for the WebSocket handshake after it
PING_EVERY = 5.0
PING_WAIT = 15.0  # a connection that has not answered a ping by then is half-open: cut

_HEADER = struct.Struct(">IIB")  # length of the rest, connection id, kind
# The largest frame: a whole message and a few bytes of its own (a close's code, the
# kernel's round trip); a request's head handed over is capped lower by the gate.
MAX_BODY = MAX_FRAME + 64
NO_RTT = 0xFFFFFFFF  # "the kernel does not say" in a frame's round trip (microseconds)


class Kind(enum.IntEnum):
    """What a frame is. To the front end: HANDOFF (flags, then the request's head; the
    socket rides along), TEXT, BYTES, CLOSE (code, reason). To the server: ACCEPTED,
    TEXT and BYTES (the kernel's round trip first), PINGED (a ping's round trip and the
    kernel's), ENDED (code, reason). BEAT both ways on connection 0: still alive."""

    HANDOFF = 1
    TEXT = 2
    BYTES = 3
    CLOSE = 4
    ACCEPTED = 5
    PINGED = 6
    ENDED = 7
    BEAT = 8


def frame(cid: int, kind: Kind, payload: bytes = b"") -> bytes:
    return _HEADER.pack(len(payload) + 5, cid, kind) + payload


def close_payload(code: int, reason: str) -> bytes:
    return struct.pack(">H", code) + reason.encode("utf-8", "replace")[:240]


def parse_close(payload: bytes) -> tuple[int, str]:
    if len(payload) < 2:
        return 1006, ""
    return struct.unpack(">H", payload[:2])[0], payload[2:].decode("utf-8", "replace")


def rtt_bytes(value: float | None) -> bytes:
    """A round trip in microseconds, NO_RTT for None."""
    micro = NO_RTT if value is None else min(NO_RTT - 1, max(0, round(value * 1e6)))
    return struct.pack(">I", micro)


def parse_rtt(data: bytes) -> float | None:
    (micro,) = struct.unpack(">I", data[:4])
    return None if micro == NO_RTT else micro / 1e6


class Frames:
    """Frames parsed out of a byte stream as it comes (sans-IO)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, Kind, bytes]]:
        """The frames completed by `data`; ValueError for one the other end cannot
        have meant (too long, or an unknown kind): the channel is then useless."""
        self._buffer += data
        out = []
        start = 0
        buffer = self._buffer
        while len(buffer) - start >= 4:
            (size,) = struct.unpack_from(">I", buffer, start)
            if not 5 <= size <= MAX_BODY + 5:
                raise ValueError(f"a frame of {size} bytes")
            if len(buffer) - start < 4 + size:
                break
            _, cid, kind = _HEADER.unpack_from(buffer, start)
            out.append((cid, Kind(kind), bytes(buffer[start + 9 : start + 4 + size])))
            start += 4 + size
        del buffer[:start]
        return out


class Stuck(Exception):
    """The other end of a channel did not take what was written within its deadline:
    it hangs (or is gone), and the channel cannot be used any more."""


class Writer:
    """One writer of a channel for many tasks. A frame is queued and written by `run`,
    the channel's flusher, with every other frame queued meanwhile: the tasks a busy
    end wakes at once share one system call. A task whose frame finds more than `high`
    bytes queued writes them itself and waits (the other end reads too slowly). A write
    is never cut in half by a cancellation (it would corrupt the channel): it is
    shielded, and bounded by `deadline` seconds instead."""

    def __init__(self, sock: trio.socket.SocketType, deadline: float, high: int = 1 << 20) -> None:
        self.sock = sock
        self.deadline = deadline
        self.high = high
        self.broken = False
        self._queued: list[bytes] = []
        self._size = 0
        self._lock = trio.Lock()
        self._wake = trio.Event()

    async def send(self, data: bytes) -> None:
        self._check()
        self._queued.append(data)
        self._size += len(data)
        if self._size <= self.high:
            self._wake.set()
            await trio.lowlevel.checkpoint()
            return
        await self._flush()

    async def run(self) -> None:
        """The flusher; Stuck when the channel fails."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self._flush()

    async def send_fd(self, data: bytes, fd: int) -> None:
        """`data` with the socket `fd` riding along (the receiver gets its own copy)."""
        async with self._lock:
            await self._write_queued()
            fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
            with trio.CancelScope(shield=True), trio.move_on_after(self.deadline) as scope:
                self._check()
                try:
                    sent = await self.sock.sendmsg([data], fds)
                except (OSError, trio.ClosedResourceError) as exc:
                    self._gone(exc)
                await self._write(data[sent:])
            if scope.cancelled_caught:
                self._stuck()

    async def _flush(self) -> None:
        async with self._lock:
            await self._write_queued()

    async def _write_queued(self) -> None:
        if not self._queued:
            return
        data = b"".join(self._queued)
        self._queued.clear()
        self._size = 0
        with trio.CancelScope(shield=True), trio.move_on_after(self.deadline) as scope:
            await self._write(data)
        if scope.cancelled_caught:
            self._stuck()

    async def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self._check()
            try:
                sent = await self.sock.send(view)
            except (OSError, trio.ClosedResourceError) as exc:
                # Closed: the channel's own end, closed while this write waited.
                self._gone(exc)
            view = view[sent:]

    def _check(self) -> None:
        if self.broken:
            raise Stuck("the channel is broken")

    def _gone(self, exc: OSError | trio.ClosedResourceError) -> NoReturn:
        self.broken = True
        raise Stuck(f"the channel is gone: {exc}") from exc

    def _stuck(self) -> NoReturn:
        self.broken = True
        raise Stuck(f"nothing written for {self.deadline:g} s")


class Replay(trio.abc.Stream):
    """A stream that first gives back the bytes already read from it (the request head
    the gate read), so that the WebSocket library reads the handshake itself."""

    def __init__(self, head: bytes, stream: trio.SocketStream) -> None:
        self._head = head
        self._stream = stream

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._head:
            size = max_bytes or len(self._head)
            out, self._head = self._head[:size], self._head[size:]
            return out
        return bytes(await self._stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()


_TCP_INFO_RTT = 68  # offset of tcpi_rtt (microseconds) in Linux's struct tcp_info


async def upgrade(
    nursery: trio.Nursery, stream: Replay, seconds: float = HEAD_SECONDS
) -> WebSocketRequest | None:
    """The WebSocket handshake of an engine's connection, the library's reader run in
    `nursery` until the connection ends (None: the library refused it, answering 400,
    or it was not done within `seconds`)."""
    with trio.move_on_after(seconds):
        return await wrap_server_stream(
            nursery, stream, message_queue_size=8, max_message_size=MAX_FRAME
        )
    return None


async def ping_until_silent(
    ws: WebSocketConnection, measured: Callable[[float], Awaitable[None]]
) -> None:
    """Ping `ws` every `PING_EVERY` seconds, giving `measured` each round trip; return
    once a ping has had no answer for `PING_WAIT` (the connection is half-open: the
    caller cuts it). The server's own connections and a front end's alike."""
    while True:
        start = trio.current_time()
        with trio.move_on_after(PING_WAIT):
            await ws.ping()
            await measured(trio.current_time() - start)
            await trio.sleep(PING_EVERY)
            continue
        return


def kernel_rtt(sock: trio.socket.SocketType) -> Callable[[], float | None]:
    """A reader of the smoothed round trip that the kernel's TCP stack measures on
    `sock`, in seconds (None where the system does not say: not Linux). The client's
    network stack sends the ACKs it is measured by, so no program the client runs can
    make it longer, as it can delay a pong."""
    option = getattr(socket, "TCP_INFO", None)
    if option is None:
        return no_measure

    def read() -> float | None:
        try:
            info = sock.getsockopt(socket.IPPROTO_TCP, option, 104)
        except OSError:
            return None
        if len(info) < _TCP_INFO_RTT + 4:
            return None
        return int.from_bytes(info[_TCP_INFO_RTT : _TCP_INFO_RTT + 4], sys.byteorder) / 1e6

    return read


def open_file_limit(wanted: int) -> int:
    """This process's limit of open files, first raised toward `wanted` as far as the
    hard limit allows. Every connection is a file: a server whose connections may
    exceed the limit fails to accept (logging each retry), and its own engines and store
    cannot open what they need while a flood holds them all."""
    try:
        import resource
    except ImportError:  # not POSIX: no such limit to know
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    if soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    return int(soft)
