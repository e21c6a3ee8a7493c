"""`python -m arbiter.arena.frontend FD FILES`: a front end of the arena's server, which owns
engines' WebSocket connections so that their framing, pings and relaying run on
another core than the games.

The server (`frontends.py`) hands it each engine's connection once the gate has read
its request head: the socket comes over the channel `FD` (a Unix stream socket) with
the head's bytes. The front end does the WebSocket handshake (a path other than the
engines' door is refused 404), then relays every message both ways, pings the client
(`PING_EVERY`, and cuts a connection that has not answered within `PING_WAIT`) and
reports the round trips it measured: the ping's and the kernel's TCP estimate, which
the client cannot make longer (`LinkStats`). It says when a connection ended, so that
the server's gate keeps counting it until then.

It ends when the server does (end of file on the channel: it closes what it holds
first), and ignores Ctrl-C, which the server receives too and answers by closing every
engine's connection with the code that tells clients it stops.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import struct
import sys
from collections import deque
from collections.abc import Callable

import h11
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from arbiter.arena.relay import (
    HEAD_SECONDS,
    Frames,
    Kind,
    Replay,
    Stuck,
    Writer,
    close_payload,
    frame,
    kernel_rtt,
    open_file_limit,
    parse_close,
    ping_until_silent,
    rtt_bytes,
    upgrade,
)
from arbiter.engines.remote import ENGINE_PATH, MAX_FRAME, MAX_UNREAD, PROTOCOL, no_measure
from arbiter.logs import configure_from_environment

log = logging.getLogger(__name__)

CHANNEL_WAIT = 30.0  # a server that takes nothing for this long is gone: the front end ends
CLOSE_WAIT = 2.0  # for a WebSocket's closing handshake
# What the server may have queued for one client that does not read it: far more than a
# game's commands; a client over it is cut off (its session resumes if it comes back).
OUT_MESSAGES = 1024
OUT_BYTES = MAX_UNREAD
_FDS = socket.CMSG_SPACE(64 * 4)  # ancillary room for the sockets of one read


class Held:
    """One connection the front end holds: what the server sent for it, in order."""

    def __init__(self, cid: int) -> None:
        self.cid = cid
        self.outgoing: deque[tuple[Kind, bytes]] = deque()
        self.size = 0
        self.lot = trio.lowlevel.ParkingLot()
        self.scope = trio.CancelScope()
        self.code, self.reason = 1006, "the connection ended"

    def put(self, kind: Kind, payload: bytes) -> bool:
        """Queue a message or a close; False when the client reads too little."""
        self.outgoing.append((kind, payload))
        self.size += len(payload)
        self.lot.unpark_all()
        return len(self.outgoing) <= OUT_MESSAGES and self.size <= OUT_BYTES

    async def next(self) -> tuple[Kind, bytes]:
        while not self.outgoing:
            await self.lot.park()
        kind, payload = self.outgoing.popleft()
        self.size -= len(payload)
        return kind, payload

    def note(self, code: int, reason: str) -> None:
        """Record why the connection ends (the first reason holds)."""
        if self.code == 1006 and self.reason == "the connection ended":
            self.code, self.reason = code, reason

    def end(self, code: int, reason: str) -> None:
        """End the connection now, for this reason."""
        self.note(code, reason)
        self.scope.cancel()


class FrontEnd:
    """The connections of one front end, relayed over one channel to the server."""

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self.writer = Writer(sock, CHANNEL_WAIT)
        self.held: dict[int, Held] = {}
        self.fds: deque[int] = deque()
        self.nursery: trio.Nursery | None = None
        self.emptied = trio.Event()  # set when the last connection held has ended

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                nursery.start_soon(self._flusher)
                try:
                    await self._read()
                finally:
                    # The server is gone (or the channel broke): close what is held,
                    # briefly.
                    for held in self.held.values():
                        held.put(Kind.CLOSE, close_payload(1001, "the arena server stopped"))
                    with trio.move_on_after(CLOSE_WAIT + 1):
                        if self.held:
                            self.emptied = trio.Event()
                            await self.emptied.wait()
                    nursery.cancel_scope.cancel()
        finally:
            self.sock.close()
            for fd in self.fds:
                with contextlib.suppress(OSError):
                    socket.close(fd)

    async def _read(self) -> None:
        frames = Frames()
        flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        while True:
            try:
                data, ancillary, msg_flags, _ = await self.sock.recvmsg(256 * 1024, _FDS, flags)
            except OSError as exc:
                log.warning("the channel to the server failed: %s", exc)
                return
            for level, kind, raw in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    usable = len(raw) - len(raw) % 4
                    self.fds.extend(struct.unpack(f"{usable // 4}i", raw[:usable]))
            if msg_flags & socket.MSG_CTRUNC:
                log.error("sockets handed over were lost (ancillary data cut short)")
            if not data:
                return  # the server ended
            for cid, kind, payload in frames.feed(data):
                self._dispatch(cid, kind, payload)

    def _dispatch(self, cid: int, kind: Kind, payload: bytes) -> None:
        assert self.nursery is not None
        if kind is Kind.BEAT:  # answered aside: the reader never waits on the server
            self.nursery.start_soon(self.send, frame(0, Kind.BEAT))
            return
        if kind is Kind.HANDOFF:
            if not self.fds:
                log.error("connection %d was handed over without its socket", cid)
                ended = frame(cid, Kind.ENDED, close_payload(1011, "no socket"))
                self.nursery.start_soon(self.send, ended)
                return
            held = self.held[cid] = Held(cid)
            self.nursery.start_soon(self._serve, held, self.fds.popleft(), payload)
            return
        held_now = self.held.get(cid)
        if held_now is None:
            return  # it ended meanwhile
        if kind in (Kind.TEXT, Kind.BYTES, Kind.CLOSE) and not held_now.put(kind, payload):
            held_now.end(1008, "the client does not read what the arena sends")

    async def _flusher(self) -> None:
        try:
            await self.writer.run()
        except Stuck as exc:
            log.error("the server does not read its channel (%s): ending", exc)
            assert self.nursery is not None
            self.nursery.cancel_scope.cancel()

    async def send(self, data: bytes) -> None:
        """Write to the server; a server that takes nothing for CHANNEL_WAIT is gone,
        and so is this front end."""
        try:
            await self.writer.send(data)
        except Stuck as exc:
            log.error("the server does not read its channel (%s): ending", exc)
            assert self.nursery is not None
            self.nursery.cancel_scope.cancel()
            await trio.sleep_forever()  # cancelled at once: every task of it is ending

    async def _serve(self, held: Held, fd: int, payload: bytes) -> None:
        proxied, head = payload[:1] == b"\x01", payload[1:]
        try:
            sock = trio.socket.from_stdlib_socket(socket.socket(fileno=fd))
        except OSError as exc:
            log.warning("connection %d: its socket is unusable: %s", held.cid, exc)
            del self.held[held.cid]
            await self.send(frame(held.cid, Kind.ENDED, close_payload(1011, "no socket")))
            return
        stream = trio.SocketStream(sock)
        # Behind a proxy the kernel measures the way to the proxy, not to the client.
        rtt = no_measure if proxied else kernel_rtt(sock)
        try:
            with held.scope:
                await self._relay(held, Replay(head, stream), rtt)
        except Exception as exc:
            if not _peer_gone(exc):
                log.exception("connection %d failed", held.cid)
        finally:
            del self.held[held.cid]
            if not self.held:
                self.emptied.set()
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(stream)
                ended = frame(held.cid, Kind.ENDED, close_payload(held.code, held.reason))
                with contextlib.suppress(Stuck):
                    await self.writer.send(ended)

    async def _relay(self, held: Held, stream: Replay, rtt: Callable[[], float | None]) -> None:
        async with trio.open_nursery() as nursery:
            # The library's reader runs in `nursery` until the connection ends: every
            # way out cancels it, or a refused upgrade would hold its connection open.
            ws_request = await upgrade(nursery, stream, HEAD_SECONDS)
            if ws_request is None:  # refused by the library itself (it answered 400)
                held.end(1002, "not a WebSocket handshake")
                nursery.cancel_scope.cancel()
                return
            if ws_request.path.split("?", 1)[0] != ENGINE_PATH:
                with trio.move_on_after(CLOSE_WAIT):
                    await ws_request.reject(404, body=b"engines connect at /engine\n")
                held.end(1002, "not the engines' door")
                nursery.cancel_scope.cancel()
                return
            protocol = PROTOCOL if PROTOCOL in ws_request.proposed_subprotocols else None
            ws = await ws_request.accept(subprotocol=protocol)
            await self.send(frame(held.cid, Kind.ACCEPTED))
            nursery.start_soon(self._ping, ws, held, rtt)
            nursery.start_soon(self._outgoing, ws, held)
            try:
                while True:
                    message = await ws.get_message()
                    if isinstance(message, str):
                        kind, data = Kind.TEXT, message.encode("utf-8", "surrogatepass")
                    else:
                        kind, data = Kind.BYTES, message
                    await self.send(frame(held.cid, kind, rtt_bytes(rtt()) + data[:MAX_FRAME]))
            except ConnectionClosed as exc:
                why = exc.reason
                held.end(why.code if why else 1006, (why.reason or "") if why else "")
            nursery.cancel_scope.cancel()

    async def _outgoing(self, ws: WebSocketConnection, held: Held) -> None:
        """What the server sends, in order; a close ends the connection."""
        try:
            while True:
                kind, payload = await held.next()
                if kind is Kind.CLOSE:
                    code, reason = parse_close(payload)
                    held.note(code, reason)
                    with trio.move_on_after(CLOSE_WAIT):
                        await ws.aclose(code, reason)  # the library's reader takes the reply
                    held.end(code, reason)
                    return
                await ws.send_message(payload.decode() if kind is Kind.TEXT else payload)
        except ConnectionClosed:
            return  # the reader sees it too

    async def _ping(
        self, ws: WebSocketConnection, held: Held, rtt: Callable[[], float | None]
    ) -> None:
        async def measured(took: float) -> None:
            await self.send(
                frame(held.cid, Kind.PINGED, struct.pack(">d", took) + rtt_bytes(rtt()))
            )

        await ping_until_silent(ws, measured)
        held.note(1001, "no answer to pings")
        with trio.move_on_after(CLOSE_WAIT):
            await ws.aclose(1001, "no answer to pings")
        held.end(1001, "no answer to pings")


_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, ConnectionClosed)


def _peer_gone(exc: BaseException) -> bool:
    """Whether `exc` only says that the client went away or spoke garbage (not for the
    log, which a client could fill)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_peer_gone(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)


async def serve(sock: socket.socket) -> None:
    await FrontEnd(trio.socket.from_stdlib_socket(sock)).run()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not all(a.isdigit() for a in args):
        print(
            "usage: python -m arbiter.arena.frontend FD FILES (the server starts it)",
            file=sys.stderr,
        )
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops it (module docstring)
    open_file_limit(int(args[1]))  # one file per connection it may hold
    configure_from_environment()  # the server's log, if it was asked for one
    trio.run(serve, socket.socket(fileno=int(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
