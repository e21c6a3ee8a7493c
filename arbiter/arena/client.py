"""`arbiter arena connect`: run an engine here and relay it to an arena.

The client is a relay, not a referee: it starts the engine, logs in, and copies bytes
both ways (the server speaks the protocol to the engine through it). It keeps the
engine running across a dropped connection and resumes the session where both ends
left it; it restarts the engine only when the server says the engine faulted or the
engine exits. A refused name or token ends it (exit status 2); anything else (the
server down or restarting, the network gone) is retried with backoff, until stopped.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

from arbiter.engines.process import Deadlines, Engine, EngineSpec, StderrLog, start_engine
from arbiter.engines.remote import (
    CLOSE_REFUSED,
    CLOSE_RESTART,
    ENGINE_PATH,
    MAX_FRAME,
    MAX_TEXT,
    PROTOCOL,
    Retained,
    control,
    frames,
    parse_control,
)
from arbiter.errors import ConfigError, EngineError

BACKOFF_FIRST = 0.5
BACKOFF_MOST = 30.0
WELCOME_SECONDS = 20.0  # the server answers a login at once (the handshake comes after)
CLOSE_WAIT = 5.0  # the most a closed engine's output relay is given to end


class Refused(Exception):
    """The arena will never take this login: a wrong name or token."""


class NotNow(Exception):
    """The arena did not take this login now (busy, or not an arena at all): retry."""


def arena_url(text: str) -> str:
    """HOST:PORT or a ws:// or wss:// URL, as the WebSocket URL of the engines' door."""
    if text.startswith(("ws://", "wss://")):
        return text if text.rstrip("/").endswith(ENGINE_PATH) else text.rstrip("/") + ENGINE_PATH
    if "://" in text:
        raise ConfigError(
            f"{text!r} is not an arena address",
            hint="give HOST:PORT, ws://HOST:PORT or wss://HOST (behind TLS)",
        )
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"{text!r} is not HOST:PORT", hint="e.g. arena.example.org:8080")
    return f"ws://{text}{ENGINE_PATH}"


def dialect_table(spec: EngineSpec) -> dict[str, Any]:
    d = spec.dialect
    out: dict[str, Any] = {"swap": d.swap}
    if d.islands is not None:
        out["islands"] = list(d.islands)
    if d.sizes is not None:
        out["sizes"] = list(d.sizes)
    if d.time is not None:
        out["time"] = d.time.value
    return out


class _Stderr(StderrLog):
    """The engine's stderr, kept here and passed on to the server as it comes."""

    def __init__(self, send: trio.MemorySendChannel[bytes]) -> None:
        super().__init__()
        self._send = send

    def append(self, chunk: bytes) -> None:
        super().append(chunk)
        # The server behind or away: it keeps what it got.
        with contextlib.suppress(
            trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
        ):
            self._send.send_nowait(chunk[:MAX_TEXT])


class Client:
    def __init__(
        self,
        url: str,
        name: str,
        token: str,
        spec: EngineSpec,
        say: Callable[[str], None],
        room: str | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self.room = room  # the room to play in (None: the arena's only one)
        self.token = token
        self.spec = spec
        self.say = say
        self.engine: Engine | None = None
        self.session: str | None = None
        self.received = 0  # bytes from the server in this session
        self.out = Retained()  # what the engine wrote in this session
        self.ws: WebSocketConnection | None = None
        self.lock = trio.Lock()
        self.output_done = trio.Event()  # the engine's output relay has ended
        self.last_input = 0.0
        self.games = 0

    async def run(self) -> None:
        backoff = BACKOFF_FIRST
        async with trio.open_nursery() as nursery:
            while True:
                restart = False
                if self.engine is None:
                    await self._start(nursery)
                try:
                    restart = await self._connection(nursery)
                    backoff = BACKOFF_FIRST
                except Refused:
                    raise
                except (
                    OSError,
                    HandshakeError,
                    ConnectionRejected,
                    ConnectionClosed,
                    trio.TooSlowError,
                    NotNow,
                ) as exc:
                    self.say(
                        f"arena not reachable ({type(exc).__name__}: {exc}); retrying in"
                        f" {backoff:.1f} s"
                    )
                if restart:
                    await self._stop_engine()
                    continue
                await trio.sleep(backoff * random.uniform(0.8, 1.2))
                backoff = min(BACKOFF_MOST, backoff * 2)

    async def _start(self, nursery: trio.Nursery) -> None:
        engine = await start_engine(self.spec, nursery, Deadlines(), handshake=False)
        send, receive = trio.open_memory_channel[bytes](64)
        engine.stderr = _Stderr(send)
        self.engine = engine
        self.session, self.received, self.out = None, 0, Retained()
        self.output_done = trio.Event()
        nursery.start_soon(self._engine_output, engine, self.output_done)
        nursery.start_soon(self._engine_stderr, engine, receive)

    async def _stop_engine(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.kill()
            engine.session.broken = RuntimeError("relayed")  # no polite quit: it is killed
            await engine.aclose()
            # Its output relay ends before the next engine starts: the kernel gives the
            # closed pipes' numbers to the next engine's pipes, and a relay still running
            # would wait on one beside the new relay (trio refuses: "another task is
            # already reading / writing this fd") or read the new engine's output.
            with trio.move_on_after(CLOSE_WAIT):
                await self.output_done.wait()

    async def _send(self, message: bytes | str) -> None:
        ws = self.ws
        if ws is None:
            return
        with contextlib.suppress(ConnectionClosed):  # resent from `out` after a reconnect
            await ws.send_message(message)

    async def _engine_output(self, engine: Engine, done: trio.Event) -> None:
        try:
            await self._relay_output(engine)
        finally:
            done.set()

    async def _relay_output(self, engine: Engine) -> None:
        while True:
            try:
                data = await engine.pipes.receive_some(MAX_FRAME)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if self.engine is not engine:
                return
            if not data:
                code = await engine.wait_exit(2.0)
                async with self.lock:
                    await self._send(control("exited", code=-1 if code is None else code))
                self.say(f"the engine exited ({code}); it is restarted")
                return
            async with self.lock:
                self.out.add(bytes(data))
                took = (trio.current_time() - self.last_input) * 1000
                await self._send(control("t", ms=round(took, 1)))
                for frame in frames(bytes(data)):
                    await self._send(frame)

    async def _engine_stderr(
        self, engine: Engine, receive: trio.MemoryReceiveChannel[bytes]
    ) -> None:
        async for chunk in receive:
            if self.engine is not engine:
                return
            async with self.lock:
                await self._send(control("stderr", text=chunk.decode("utf-8", "replace")))

    async def _connection(self, nursery: trio.Nursery) -> bool:
        """One connection, until it ends; True if the engine must be restarted."""
        async with (
            open_websocket_url(
                self.url,
                subprotocols=[PROTOCOL],
                max_message_size=MAX_FRAME,
                connect_timeout=10,
                disconnect_timeout=5,
            ) as ws,
            _socket_closed(ws),
        ):
            await ws.send_message(
                control(
                    "login",
                    protocol=PROTOCOL,
                    name=self.name,
                    token=self.token,
                    session=self.session,
                    received=self.received,
                    dialect=dialect_table(self.spec),
                    options=list(self.spec.options),
                    **({"room": self.room} if self.room is not None else {}),
                )
            )
            try:
                with trio.fail_after(WELCOME_SECONDS):
                    reply = parse_control(str(await ws.get_message()))
            except ConnectionClosed as exc:
                return self._closed(exc)
            except ValueError as exc:
                raise NotNow("the server's answer is not an arena's") from exc
            if reply["type"] == "refused":
                reason = str(reply.get("reason", ""))[:MAX_TEXT]
                if reply.get("retry") is False:
                    raise Refused(reason)
                raise NotNow(reason)
            if reply["type"] != "welcome":
                raise NotNow("the server's answer is not an arena's")
            async with self.lock:
                if reply.get("resume") and reply.get("session") == self.session:
                    missing = self.out.since(int(reply.get("received", 0)))
                    if missing is None:
                        return True  # nothing to resume from: start afresh
                    for frame in frames(missing):
                        await ws.send_message(frame)
                else:
                    self.session, self.received, self.out = str(reply["session"]), 0, Retained()
                self.ws = ws
            resumed = "resumed" if reply.get("resume") else "logged in"
            self.say(f"{resumed} as {self.name} at {self.url}")
            try:
                while True:
                    message = await ws.get_message()
                    if isinstance(message, bytes):
                        engine = self.engine
                        if engine is None:
                            return True
                        self.received += len(message)
                        self.last_input = trio.current_time()
                        # If it exited, the output task says so.
                        with contextlib.suppress(
                            trio.BrokenResourceError, trio.ClosedResourceError
                        ):
                            await engine.pipes.send_all(message)
            except ConnectionClosed as exc:
                return self._closed(exc)
            finally:
                self.ws = None

    def _closed(self, exc: ConnectionClosed) -> bool:
        code = exc.reason.code if exc.reason is not None else 1006
        reason = (exc.reason.reason if exc.reason is not None else "") or ""
        if code == CLOSE_REFUSED:
            raise Refused(reason)
        if code == CLOSE_RESTART:
            self.say(f"the arena ended the session ({reason}); restarting the engine")
            return True
        self.say(f"connection closed ({code}{': ' + reason if reason else ''}); reconnecting")
        return False


@contextlib.asynccontextmanager
async def _socket_closed(ws: WebSocketConnection) -> AsyncIterator[None]:
    """Close the socket of a connection that the server closed (the library leaves it
    open when its reader is cancelled first, as when the client stops, refused)."""
    try:
        yield
    finally:
        if ws.closed is not None:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(ws._stream)


async def connect(
    url: str,
    name: str,
    token: str,
    spec: EngineSpec,
    say: Callable[[str], None],
    sessions: int = 1,
    room: str | None = None,
) -> None:
    """Relay `spec`'s engine to the arena at `url` until stopped (module docstring):
    `sessions` engine processes, each its own connection, for as many games at once."""
    try:
        async with trio.open_nursery() as nursery:
            for _ in range(sessions):
                nursery.start_soon(Client(url, name, token, spec, say, room).run)
    except EngineError as exc:
        raise ConfigError(
            f"the engine did not start: {exc.detail}", hint="check it with `arbiter check ENGINE`"
        ) from exc
