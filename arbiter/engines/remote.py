"""Engines over the network: a session whose stream is a WebSocket relay, not a pipe.

An arena's client (`arbiter arena connect`) runs an engine on its own machine and relays
its stdin and stdout over one WebSocket: binary messages carry the engine's bytes as
they are, text messages carry JSON control messages (the login, the engine's stderr,
its exit, the time the client saw it take). The server speaks to the engine exactly as
to a local one: its `Player` writes commands into a `Link`, a byte stream that outlives
one connection. When the connection drops, the link waits `grace` seconds for the same
client to come back; the client keeps its engine running and both ends resend what the
other has not received (each counts the bytes it has received), so a dropped
connection costs nothing but the time it was down, which the clock still charges. A
link whose connection does not come back in time is dead, and the game it was in is
lost by `disconnect`.

The server's clock is the truth: per move, network time up to the arena's
`latency_allowance` is not charged, measured so that the client cannot make it longer
(`LinkStats`: the kernel's TCP round trip and the quickest recent ping); what the
client reports about its engine's time is recorded, never trusted.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio
from trio_websocket import ConnectionClosed

from arbiter.engines.dialect import Dialect
from arbiter.engines.player import Fault, Player
from arbiter.engines.process import EngineInfo, StderrLog, exit_status
from arbiter.engines.sandbox import Breach
from arbiter.protocol.session import EngineSession
from arbiter.results.records import Termination

PROTOCOL = "atoll-arena/1"  # the WebSocket subprotocol and the login's "protocol"
ENGINE_PATH = "/engine"  # where engines connect on the arena's port
# Bytes each end keeps of what it sent, to resend after a reconnect: what can be in
# flight while a connection is down for a grace period is one turn's commands or answer,
# a few hundred bytes; a thousand sessions hold at most 64 MB.
RETAIN = 64 * 1024
MAX_FRAME = 64 * 1024  # the largest message either end sends or accepts
MAX_UNREAD = 1 << 20  # bytes an engine may write that nobody asked for before it is cut off
MAX_TEXT = 4096  # characters kept of any text a client sends (stderr pieces, reasons)

# Close codes (4000-4999 are the application's): what a client does next depends on them.
CLOSE_RESTART = 4000  # the engine faulted: restart it, then log in afresh
CLOSE_REFUSED = 4001  # wrong name or token, or a bad login: do not retry
CLOSE_BUSY = 4002  # the name is connected already, or too many logins: retry later
CLOSE_STOPPING = 4003  # the server is shutting down: reconnect with backoff


class Retained:
    """What one end sent, counted from the session's first byte, with its last `cap`
    bytes kept so that they can be sent again to a peer that missed them."""

    def __init__(self, cap: int = RETAIN) -> None:
        self.cap = cap
        self.total = 0
        self._data = bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self._data += data
        if len(self._data) > self.cap:
            del self._data[: len(self._data) - self.cap]

    def since(self, received: int) -> bytes | None:
        """The bytes after the first `received`, or None if they are no longer kept (or
        `received` is more than was ever sent: the peer is not this session's)."""
        start = self.total - len(self._data)
        if not start <= received <= self.total:
            return None
        return bytes(self._data[received - start :])


def frames(data: bytes) -> list[bytes]:
    """`data` cut into messages no larger than MAX_FRAME."""
    return [data[i : i + MAX_FRAME] for i in range(0, len(data), MAX_FRAME)] or [b""]


def control(kind: str, **fields: Any) -> str:
    """A control message as it goes over the wire."""
    return json.dumps({"type": kind, **fields}, separators=(",", ":"))


def parse_control(text: str) -> dict[str, Any]:
    """A control message from the other end; ValueError if it is not one."""
    if len(text) > MAX_FRAME:
        raise ValueError("control message too long")
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError("a control message is a JSON object with a string 'type'")
    return data


class Connection(Protocol):
    """What the server uses of an engine's WebSocket connection: trio-websocket's own,
    or one that an arena front end holds and relays (`arbiter.arena.frontends`)."""

    async def get_message(self) -> str | bytes: ...

    async def send_message(self, message: str | bytes) -> None: ...

    async def aclose(self, code: int = 1000, reason: str | None = None) -> None: ...


def no_measure() -> float | None:
    return None


@dataclass
class LinkStats:
    """What the server measured of a link's network, in seconds: the round trips of its
    pings, and `kernel`, the round trip the server's own TCP stack measures on the
    connection (None where it cannot be read: not Linux, or a proxy's connection)."""

    rtts: deque[float] = field(default_factory=lambda: deque(maxlen=5))
    kernel: Callable[[], float | None] = no_measure

    def network_time(self) -> float:
        """The round trip a move's wait is taken to include, as the client cannot make it
        longer: a pong is the client's to delay, so a ping counts for no more than the
        quickest of the last few, nor for more than the kernel's own estimate (its ACKs
        come from the client's network stack, not from a program the client runs)."""
        measured = [min(self.rtts)] if self.rtts else []
        kernel = self.kernel()
        if kernel is not None:
            measured.append(kernel)
        return min(measured, default=0.0)


class Link:
    """The server's end of one remote engine session: a byte stream to its engine that
    outlives a dropped connection for `grace` seconds (module docstring)."""

    def __init__(
        self,
        name: str,
        session_id: str,
        grace: float,
        *,
        on_dead: Callable[[Link], None] | None = None,
    ) -> None:
        self.name = name
        self.session_id = session_id
        self.grace = grace
        self.sent = Retained()
        self.received = 0  # bytes of the engine's output received in this session
        self.stats = LinkStats()
        self.stderr = StderrLog()
        self.returncode: int | None = None
        self.reported: float = -1.0  # ms the client last said its engine took to answer
        self.address = ""
        self.ws: Connection | None = None
        self.dead: str | None = None  # why the session is over
        self.disconnected_at: float | None = None  # trio time the connection dropped
        self.drops = 0
        self.dropped = 0  # control messages over the client's rate limit, ignored
        self._unread = bytearray()
        self._lot = trio.lowlevel.ParkingLot()
        self._send_lock = trio.Lock()
        self._exited = trio.Event()
        self.died = trio.Event()
        self.replaced = trio.Event()  # set when a newer connection takes the session over
        self._on_dead = on_dead or (lambda link: None)

    # ------------------------------------------------------------- the byte stream

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.dead is not None:
            raise trio.BrokenResourceError(self.dead)
        piece = bytes(data)
        async with self._send_lock:
            self.sent.add(piece)
            ws = self.ws
            if ws is None:
                return  # kept, and sent when the client comes back
            try:
                for frame in frames(piece):
                    await ws.send_message(frame)
            except ConnectionClosed:
                self.lost(ws)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        while not self._unread:
            if self.dead is not None:
                if self.returncode is not None:
                    return b""  # the engine exited: its stdout is at its end
                raise trio.BrokenResourceError(self.dead)
            await self._lot.park()
        size = max_bytes or 65536
        out = bytes(self._unread[:size])
        del self._unread[:size]
        return out

    # ------------------------------------------------------------- the connection

    def engine_wrote(self, data: bytes) -> None:
        """Bytes of the engine's output, relayed by the client."""
        self.received += len(data)
        self._unread += data
        if len(self._unread) > MAX_UNREAD:
            self.kill(f"wrote more than {MAX_UNREAD} bytes that were never read")
        self._lot.unpark_all()

    def engine_exited(self, code: int) -> None:
        self.returncode = code
        self._exited.set()
        self.kill(f"the engine exited on the client's machine: {exit_status(code)}")

    async def attach(
        self,
        ws: Connection,
        address: str,
        peer_received: int,
        greeting: str,
        rtt: Callable[[], float | None] = no_measure,
    ) -> bool:
        """Take a (re)connection: send `greeting` (the welcome), then what the client has
        not received. False if that is no longer kept: the session cannot go on. `rtt`
        reads the kernel's round-trip estimate of the connection (`LinkStats`)."""
        if self.dead is not None:
            return False
        async with self._send_lock:
            missing = self.sent.since(peer_received)
            if missing is None:
                return False
            self.ws, self.address = ws, address
            self.stats.rtts.clear()  # the pings measured the connection before
            self.stats.kernel = rtt
            self.replaced.set()  # the connection before, if any, speaks for it no more
            self.replaced = trio.Event()
            self.disconnected_at = None
            try:
                await ws.send_message(greeting)
                if missing:
                    for frame in frames(missing):
                        await ws.send_message(frame)
            except ConnectionClosed:
                self.lost(ws)
        return True

    def lost(self, ws: Connection) -> None:
        """The connection `ws` dropped; the session waits `grace` seconds for it."""
        if self.ws is not ws:
            return  # an older connection, already replaced
        self.ws = None
        self.drops += 1
        self.disconnected_at = trio.current_time()

    @property
    def connected(self) -> bool:
        return self.ws is not None

    def expire(self) -> None:
        """Called as time passes: a connection down for longer than the grace ends it."""
        down = self.disconnected_at
        if self.dead is None and down is not None and trio.current_time() - down >= self.grace:
            self.kill(
                f"its connection dropped and did not come back within {self.grace:g} s",
                disconnect=True,
            )

    def kill(self, why: str, *, disconnect: bool = False) -> None:
        """End the session: any wait on it fails now."""
        if self.dead is not None:
            return
        self.dead = why
        # A connection that was down when the session ended (the referee kills the engine
        # of a turn whose deadline passed, the client's own close may come first) is the
        # cause of whatever fault the turn ends with: its verdict is `disconnect`.
        down = self.disconnected_at
        self.disconnect = disconnect or down is not None
        if disconnect:
            self.disconnect_reason = why
        elif down is not None:
            self.disconnect_reason = (
                f"its connection dropped {trio.current_time() - down:.1f} s before and was not back"
            )
        self.died.set()
        self._lot.unpark_all()
        self._on_dead(self)

    disconnect = False  # the session ended while its connection was down
    disconnect_reason = ""

    async def close(self, code: int, reason: str) -> None:
        ws, self.ws = self.ws, None
        if ws is not None:
            with trio.move_on_after(2):
                await ws.aclose(code, reason[:120])

    async def wait_exited(self, timeout: float) -> None:
        with trio.move_on_after(timeout):
            await self._exited.wait()


class RemoteHost:
    """A remote engine as the referee's `Host`: what can be known and done from here."""

    def __init__(self, link: Link, info: EngineInfo) -> None:
        self.link = link
        self.info = info
        self.stderr = link.stderr

    @property
    def returncode(self) -> int | None:
        return self.link.returncode

    def kill(self) -> None:
        """The session ends; the client is told to restart its engine (its state is
        unknown after a fault) and log in afresh."""
        self.link.kill("ended by the referee after a fault; restart the engine")

    async def wait_exit(self, timeout: float) -> int | None:
        await self.link.wait_exited(timeout)
        return self.link.returncode

    async def settle_stderr(self, timeout: float) -> None:
        for _ in range(3):
            await trio.lowlevel.checkpoint()

    def exit_words(self, code: int) -> str:
        return f"{exit_status(code)} (on its own machine)"

    def breach(self) -> Breach | None:
        return None


class RemotePlayer(Player):
    """A seat held by a remote engine: the clock is charged the wait less the network
    time (up to `latency_allowance`), and a dropped connection is a `disconnect`."""

    remote = True

    def __init__(
        self,
        session: EngineSession,
        host: RemoteHost,
        dialect: Dialect,
        command_timeout: float,
        latency_allowance: float,
    ) -> None:
        super().__init__(session, host, dialect, command_timeout)
        self.link = host.link
        self.latency_allowance = latency_allowance

    def allowance(self, elapsed: float) -> float:
        return min(self.latency_allowance, elapsed, self.link.stats.network_time())

    def reported_ms(self) -> float:
        value = self.link.reported
        self.link.reported = -1.0
        return value if math.isfinite(value) and value >= 0 else -1.0

    def _disconnected(self, fault: Fault) -> Fault:
        link = self.link
        if link.disconnect or (link.dead is None and not link.connected):
            fault.kind = Termination.DISCONNECT
            why = link.disconnect_reason if link.disconnect else "its connection was down"
            fault.detail = f"{fault.detail}; {why}"
        return fault

    async def turn(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().turn(*args, **kwargs)
        except Fault as fault:
            raise self._disconnected(fault) from fault.__cause__

    async def new_game(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super().new_game(*args, **kwargs)
        except Fault as fault:
            raise self._disconnected(fault) from fault.__cause__

    def timed_out(self) -> Fault:
        return self._disconnected(super().timed_out())
