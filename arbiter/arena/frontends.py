"""The server's side of its front ends: processes that own engines' WebSocket
connections (`frontend.py`), so that framing, pings and relaying run beside the games
instead of in their event loop (the arena key `frontends`).

The server keeps the listener, the gate, the routes, logins, sessions and games. When a
request asks for a WebSocket upgrade it hands the socket to the front end holding the
fewest connections and gets back a `Relayed` connection: the part of trio-websocket's
`WebSocketConnection` that the server's code uses, fed by one reader task per front end
that dispatches its frames into bounded queues, one per connection. A connection that
sends faster than the server reads is closed (it floods); its front end and the other
connections go on.

A front end that dies, or stops answering the beats sent to it for `FRONT_WAIT`
seconds, is killed and started again: its connections drop, and their sessions resume
or end as for any dropped connection (the `disconnect_grace`). The front ends run in
the server's process group and end with it (end of file on their channel).
"""

from __future__ import annotations

import logging
import socket
import struct
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
from trio_websocket import CloseReason, ConnectionClosed

from arbiter.arena.relay import (
    HEAD_SECONDS,
    Frames,
    Kind,
    Stuck,
    Writer,
    close_payload,
    frame,
    parse_close,
    parse_rtt,
)
from arbiter.engines.process import exit_status
from arbiter.engines.remote import MAX_FRAME, MAX_UNREAD, LinkStats

log = logging.getLogger(__name__)

# A connection's messages from its client that the server has not read yet: more than a
# turn's answer and a burst of stderr; a client over it floods, and is cut off.
QUEUE_MESSAGES = 1024
QUEUE_BYTES = MAX_UNREAD
BEAT_EVERY = 2.0
FRONT_WAIT = 15.0  # a front end that has not answered a beat for this long hangs
CHANNEL_WAIT = 10.0  # a write to a front end that takes longer: it hangs
RESTART_PAUSE = 0.5  # between a front end's end and its restart
ACCEPT_WAIT = HEAD_SECONDS + 5.0  # for the WebSocket handshake a front end does


class Relayed:
    """An engine's WebSocket connection held by a front end, as the server uses one
    (`arbiter.engines.remote.Connection`): its messages, in order, then
    `ConnectionClosed` once it is gone. The pings are the front end's: their round
    trips go to `stats` while a session's pump reads the connection."""

    def __init__(self, front: Frontend, cid: int) -> None:
        self.front = front
        self.cid = cid
        self.stats: LinkStats | None = None
        self.accepted = trio.Event()  # set when the handshake is done, or it ended
        self.ended = trio.Event()  # set when the front end says it ended
        self.closed: CloseReason | None = None  # what get_message raises, once set
        self._kernel: float | None = None
        self._queue: deque[str | bytes] = deque()
        self._size = 0
        self._lot = trio.lowlevel.ParkingLot()
        self._close_sent = False

    def kernel(self) -> float | None:
        """The kernel's round trip as the front end last read it (`LinkStats.kernel`)."""
        return self._kernel

    async def opened(self) -> bool:
        """Whether the front end completed the WebSocket handshake (in time)."""
        with trio.move_on_after(ACCEPT_WAIT):
            await self.accepted.wait()
        return self.accepted.is_set() and self.closed is None

    async def get_message(self) -> str | bytes:
        while not self._queue:
            if self.closed is not None:
                raise ConnectionClosed(self.closed)
            await self._lot.park()
        message = self._queue.popleft()
        self._size -= len(message)
        return message

    async def send_message(self, message: str | bytes) -> None:
        if self.closed is not None or self._close_sent:
            raise ConnectionClosed(self.closed or CloseReason(1000, "closing"))
        if isinstance(message, str):
            kind, data = Kind.TEXT, message.encode()
        else:
            kind, data = Kind.BYTES, bytes(message)
        if len(data) > MAX_FRAME:
            # The channel's frames are bounded (the front end refuses a larger one and
            # would go down with all its connections): this connection ends instead.
            await self._close(1009, "a message too big for the relay")
            raise ConnectionClosed(self.closed)
        try:
            await self.front.send(frame(self.cid, kind, data))
        except Stuck as exc:
            self.end(1011, "its front end failed")
            raise ConnectionClosed(self.closed) from exc

    async def aclose(self, code: int = 1000, reason: str | None = None) -> None:
        """Close the connection and wait until the front end says it has ended (the
        callers give this a deadline, as they do the library's closing handshake)."""
        await self._close(code, reason)
        await self.ended.wait()

    async def _close(self, code: int, reason: str | None) -> None:
        """Tell the front end to close the connection (once); do not wait for it."""
        if not self._close_sent and not self.ended.is_set():
            self._close_sent = True
            try:
                await self.front.send(
                    frame(self.cid, Kind.CLOSE, close_payload(code, reason or ""))
                )
            except Stuck:
                self.end(1011, "its front end failed")
        if self.closed is None:
            self.closed = CloseReason(code, reason)
            self._lot.unpark_all()

    # ------------------------------------------------------------ from the front end

    def deliver(self, message: str | bytes, kernel: float | None) -> bool:
        """A message from the client; False if the queue overflows."""
        self._kernel = kernel
        if self.closed is not None:
            return True  # closing: what still comes is not read
        self._queue.append(message)
        self._size += len(message)
        self._lot.unpark_all()
        return len(self._queue) <= QUEUE_MESSAGES and self._size <= QUEUE_BYTES

    def pinged(self, rtt: float, kernel: float | None) -> None:
        self._kernel = kernel
        if self.stats is not None:
            self.stats.rtts.append(rtt)

    def flooded(self) -> None:
        """Closed for sending faster than it is read: what it queued is dropped."""
        self._queue.clear()
        self._size = 0
        self.closed = CloseReason(1008, "it sent more than the arena could read")
        self._lot.unpark_all()

    def end(self, code: int, reason: str) -> None:
        """The connection is gone (the front end said so, or the front end is)."""
        if self.closed is None:
            self.closed = CloseReason(code, reason)
        self.accepted.set()
        self.ended.set()
        self._lot.unpark_all()


class Frontend:
    """One front-end process, its channel and the connections it holds; restarted
    whenever it ends."""

    def __init__(self, number: int, files: int = 4096) -> None:
        self.number = number
        self.files = files  # the open files it may need: one per connection, and some
        self.conns: dict[int, Relayed] = {}
        self.process: trio.Process | None = None
        self.starts = 0
        self._writer: Writer | None = None
        self._next_id = 1
        self._unanswered: float | None = None  # when the oldest unanswered beat was sent
        self.scope = trio.CancelScope(shield=True)  # ended only by the server (`close`)
        self.nursery: trio.Nursery | None = None

    @property
    def up(self) -> bool:
        return self._writer is not None and not self._writer.broken

    async def send(self, data: bytes) -> None:
        if self._writer is None:
            raise Stuck("the front end is restarting")
        try:
            await self._writer.send(data)
        except Stuck:
            self.kill("it took nothing from its channel")
            raise

    async def hand(self, sock: trio.socket.SocketType, head: bytes, proxied: bool) -> Relayed:
        """Hand a connection's socket over (the caller then closes its own copy)."""
        cid = self._next_id
        self._next_id += 1
        conn = self.conns[cid] = Relayed(self, cid)
        payload = (b"\x01" if proxied else b"\x00") + head
        try:
            if self._writer is None:
                raise Stuck("the front end is restarting")
            await self._writer.send_fd(frame(cid, Kind.HANDOFF, payload), sock.fileno())
        except Stuck:
            self.conns.pop(cid, None)
            conn.end(1011, "its front end failed")
            self.kill("took no connection from its channel")
        except BaseException:  # cancelled (the server stops): nothing was handed over
            self.conns.pop(cid, None)
            raise
        return conn

    def kill(self, why: str) -> None:
        """Give the front end up: its channel ends now (its connections drop) and its
        process is killed; `run` starts another."""
        process = self.process
        if process is not None and process.returncode is None:
            log.warning("arena front end %d (pid %d) %s: killed", self.number, process.pid, why)
            process.kill()
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with self.scope:
            while True:
                await self._once(task_status)
                task_status = trio.TASK_STATUS_IGNORED
                await trio.sleep(RESTART_PAUSE)

    async def _once(self, task_status: trio.TaskStatus[None]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        files = str(self.files)
        try:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "arbiter.arena.frontend", str(theirs.fileno()), files],
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.process = process
        self.starts += 1
        if self.starts > 1:
            log.warning("arena front end %d started again (pid %d)", self.number, process.pid)
        try:
            dropped = await self.serve_channel(trio.socket.from_stdlib_socket(ours), task_status)
        finally:
            with trio.CancelScope(shield=True):
                with trio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
        log.warning(
            "arena front end %d (pid %d) ended (%s); %d connection(s) dropped",
            self.number,
            process.pid,
            exit_status(process.returncode or 0),
            dropped,
        )

    async def serve_channel(
        self,
        sock: trio.socket.SocketType,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> int:
        """Relay through the channel `sock` to a front end until it ends; how many
        connections it held then (they are dropped)."""
        self._writer = Writer(sock, CHANNEL_WAIT)
        self._unanswered = None
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                nursery.start_soon(self._flusher, self._writer)
                nursery.start_soon(self._beat)
                await self._read(sock)
                nursery.cancel_scope.cancel()
        finally:
            self.nursery = None
            self._writer = None
            dropped, self.conns = self.conns, {}
            for conn in dropped.values():
                conn.end(1011, "its front end ended")
            sock.close()
        return len(dropped)

    async def _flusher(self, writer: Writer) -> None:
        try:
            await writer.run()
        except Stuck:
            self.kill("took nothing from its channel")

    async def _beat(self) -> None:
        while True:
            await trio.sleep(BEAT_EVERY)
            now = trio.current_time()
            if self._unanswered is not None and now - self._unanswered > FRONT_WAIT:
                self.kill(f"did not answer for {FRONT_WAIT:g} s")
                return
            if self._unanswered is None:
                self._unanswered = now
            try:
                await self.send(frame(0, Kind.BEAT))
            except Stuck:
                return

    async def _read(self, sock: trio.socket.SocketType) -> None:
        frames = Frames()
        while True:
            try:
                data = await sock.recv(256 * 1024)
            except OSError:
                return
            if not data:
                return
            try:
                got = frames.feed(data)
            except ValueError as exc:
                self.kill(f"sent a broken frame ({exc})")
                return
            for cid, kind, payload in got:
                self._dispatch(cid, kind, payload)

    def _dispatch(self, cid: int, kind: Kind, payload: bytes) -> None:
        if kind is Kind.BEAT:
            self._unanswered = None
            return
        conn = self.conns.get(cid)
        if conn is None:
            return  # ended already
        if kind is Kind.ACCEPTED:
            conn.accepted.set()
        elif kind in (Kind.TEXT, Kind.BYTES) and len(payload) >= 4:
            data = payload[4:]
            message = data.decode("utf-8", "replace") if kind is Kind.TEXT else data
            if not conn.deliver(message, parse_rtt(payload)):
                conn.flooded()
                assert self.nursery is not None
                self.nursery.start_soon(_close_flooded, conn)
        elif kind is Kind.PINGED and len(payload) >= 12:
            (rtt,) = struct.unpack(">d", payload[:8])
            conn.pinged(rtt, parse_rtt(payload[8:12]))
        elif kind is Kind.ENDED:
            del self.conns[cid]
            conn.end(*parse_close(payload))


async def _close_flooded(conn: Relayed) -> None:
    with trio.move_on_after(CHANNEL_WAIT):
        await conn.aclose(1008, "it sent more than the arena could read")


class Frontends:
    """The server's front ends (`count` of them)."""

    def __init__(self, count: int, files: int = 4096) -> None:
        self.fronts = [Frontend(number, files) for number in range(1, count + 1)]

    async def hand(
        self, sock: trio.socket.SocketType, head: bytes, proxied: bool
    ) -> Relayed | None:
        """Hand a connection to the front end that holds the fewest; None while none
        is up (the connection is dropped, and its client tries again)."""
        up = [f for f in self.fronts if f.up]
        if not up:
            return None
        front = min(up, key=lambda f: len(f.conns))
        return await front.hand(sock, head, proxied)

    def pids(self) -> list[int]:
        return [f.process.pid for f in self.fronts if f.process is not None]


@asynccontextmanager
async def open_frontends(count: int, files: int = 4096) -> AsyncIterator[Frontends | None]:
    """`count` front ends, running until the block ends (None for 0: the server
    keeps its connections itself), each raising its open-file limit toward `files`.
    They are started before the block runs, and go on while it stops (the server then
    still closes its engines' connections through them); at the end each is told to
    stop by the end of its channel."""
    if count == 0:
        yield None
        return
    fronts = Frontends(count, files)
    async with trio.open_nursery() as nursery:
        for front in fronts.fronts:
            await nursery.start(front.run)
        try:
            yield fronts
        finally:
            for front in fronts.fronts:
                front.scope.cancel()
