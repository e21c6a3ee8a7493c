"""The arena's port: HTTP for browsers, WebSocket for engines, on one trio listener.

The port faces the internet, so the listener is a gate before it is a server: it counts
connections per address and in all and closes those over the limits at once; a
request's head must arrive whole, within `HEAD_SECONDS` and `HEAD_BYTES`, or the
connection is dropped (a slow sender holds nothing for long); an engine must log in
within `LOGIN_SECONDS`, at most `logins_per_minute` times a minute from one address; a
connected engine that stops answering pings is cut off. h11 parses HTTP and
trio-websocket (over wsproto) frames the WebSocket, both well-kept, small and
trio-native; the gate, the routes and the login are the arena's own. With front ends
(`frontends.py`) an engine's WebSocket is handed to one of them once its request head
is read: the framing and the pings run there, and the login and the session here, on a
connection that relays its messages.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import secrets
import time
import weakref
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import h11
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from arbiter.arena.config import Arena, PlayerEntry, hash_token
from arbiter.arena.frontends import Frontends, Relayed
from arbiter.arena.hall import Hall
from arbiter.arena.names import Registry, lookalike
from arbiter.arena.relay import (
    HEAD_SECONDS,
    PING_WAIT,
    Replay,
    kernel_rtt,
    open_file_limit,
    ping_until_silent,
    upgrade,
)
from arbiter.arena.roster import Watch
from arbiter.engines.config import check_name, dialect_from
from arbiter.engines.process import handshake
from arbiter.engines.remote import (
    CLOSE_BUSY,
    CLOSE_REFUSED,
    CLOSE_RESTART,
    CLOSE_STOPPING,
    ENGINE_PATH,
    MAX_TEXT,
    PROTOCOL,
    Connection,
    Link,
    RemoteHost,
    RemotePlayer,
    control,
    no_measure,
    parse_control,
)
from arbiter.errors import ArbiterError, ConfigError, EngineError
from arbiter.protocol.session import EngineSession

log = logging.getLogger(__name__)

HEAD_BYTES = 16 * 1024
LOGIN_SECONDS = 10.0
# Open files kept free of connections: the store and its readers, the listeners, threads,
# and per engine the server runs itself, its pipes (it may have to restart mid-flood).
FILES_RESERVE = 64
FILES_PER_ENGINE = 8
REASON_MOST = 300  # characters of a refusal's reason (it may echo the client's name)


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    address: str
    proxied: bool = False  # forwarded by a trusted proxy: the connection is the proxy's


class Respond:
    """Writes one HTTP response on a connection (which then closes)."""

    def __init__(self, stream: trio.SocketStream, conn: h11.Connection) -> None:
        self.stream = stream
        self.conn = conn

    async def _send(self, event: Any) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send_all(data)

    async def whole(
        self, status: int, body: bytes, content_type: str, extra: tuple[tuple[str, str], ...] = ()
    ) -> None:
        headers = [
            ("content-type", content_type),
            ("content-length", str(len(body))),
            ("connection", "close"),
            ("cache-control", "no-store"),
            ("x-content-type-options", "nosniff"),
            *extra,
        ]
        await self._send(h11.Response(status_code=status, headers=headers))
        await self._send(h11.Data(data=body))
        await self._send(h11.EndOfMessage())

    async def begin_stream(self, content_type: str) -> None:
        headers = [
            ("content-type", content_type),
            ("cache-control", "no-store"),
            ("connection", "close"),
            ("x-accel-buffering", "no"),
        ]
        await self._send(h11.Response(status_code=200, headers=headers))

    async def chunk(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))


Route = Callable[[Request, Respond], Awaitable[None]]


class Buckets:
    """Token buckets, one per key (an address, a session): each fills at `rate` tokens a
    second up to `burst`, and every request takes one. The oldest keys are forgotten
    past `most` (a flood of addresses), which can only make a limit kinder."""

    def __init__(self, rate: float, burst: float, most: int = 100_000) -> None:
        self.rate = rate
        self.burst = max(1.0, burst)
        self.most = most
        self._level: dict[str, tuple[float, float]] = {}  # key -> (tokens, when)

    def take(self, key: str) -> float:
        """0 if `key` may go ahead now (a token is taken), else the seconds until it may."""
        now = time.monotonic()
        tokens, then = self._level.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens >= 1.0:
            self._level[key] = (tokens - 1.0, now)
            if len(self._level) > self.most:
                self._level.pop(next(iter(self._level)))
            return 0.0
        self._level[key] = (tokens, now)
        return (1.0 - tokens) / self.rate

    def forget(self, key: str) -> None:
        self._level.pop(key, None)


class Gate:
    """Connection, login and request limits per address (module docstring)."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.capacity = arena.max_connections  # lowered to fit the open-file limit
        self.open: Counter[str] = Counter()
        self.total = 0
        self.refused = 0
        self.limited = 0  # requests answered 429
        self._logins: dict[str, deque[float]] = {}
        rate = arena.requests_per_minute
        self.requests = Buckets(rate / 60.0, rate / 4.0)

    def enter(self, address: str) -> bool:
        """Count a new connection from `address`; False when over a limit. A trusted
        proxy's connections count only in the total: each is counted again, by the
        address it forwards for, once its request head is read (`forwarded`)."""
        a = self.arena
        limited = address not in a.trusted_proxies
        full = limited and self.open[address] >= a.connections_per_address
        if self.total >= self.capacity or full:
            self.refused += 1
            return False
        self.open[address] += 1
        self.total += 1
        return True

    def leave(self, address: str) -> None:
        self.total -= 1
        self._drop(address)

    def forwarded(self, address: str) -> bool:
        """Count a connection a trusted proxy forwards for `address`."""
        if self.open[address] >= self.arena.connections_per_address:
            self.refused += 1
            return False
        self.open[address] += 1
        return True

    def forwarded_left(self, address: str) -> None:
        self._drop(address)

    def _drop(self, address: str) -> None:
        self.open[address] -= 1
        if not self.open[address]:
            del self.open[address]

    def login_allowed(self, address: str) -> bool:
        now = time.monotonic()
        times = self._logins.setdefault(address, deque())
        while times and now - times[0] > 60.0:
            times.popleft()
        if len(times) >= self.arena.logins_per_minute:
            return False
        times.append(now)
        if len(self._logins) > 100_000:  # a flood of addresses: forget the oldest
            self._logins.pop(next(iter(self._logins)))
        return True


class Server:
    """The listener, the gate, the routes and the engines' login."""

    def __init__(
        self,
        arena: Arena,
        hall: Hall,
        routes: dict[str, Route],
        registry: Registry,
        roster: Watch | None = None,
        rooms: Mapping[str, tuple[Arena, Hall]] | None = None,
        frontends: Frontends | None = None,
    ) -> None:
        self.arena = arena
        self.frontends = frontends  # None: the engines' connections are this process's
        self.roster = roster or Watch(arena)  # the players file's players and bans
        self.hall = hall
        # Each room's arena and hall, by name ("": the only room of a file without rooms).
        self.rooms = dict(rooms or {arena.room: (arena, hall)})
        self.own_engines = {n for a, _ in self.rooms.values() for n in a.engines}
        self.hall_of: weakref.WeakKeyDictionary[Link, Hall] = weakref.WeakKeyDictionary()
        self.routes = routes
        self.gate = Gate(arena)
        self.registry = registry  # open registration's names
        self.links: dict[str, list[Link]] = {}  # each name's live sessions
        rate = arena.messages_per_second
        self.messages = Buckets(rate, 2.0 * rate)  # per session: control messages
        self.open_files = 0  # the open-file limit, once listening

    async def serve(
        self, nursery: trio.Nursery, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
    ) -> None:
        a = self.arena
        try:
            listeners = await trio.open_tcp_listeners(a.port, host=a.host, backlog=1024)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {a.host}:{a.port}: {exc.strerror}",
                where=f"{a.path}: arena.listen",
                hint="choose a free port, or stop what holds this one",
            ) from exc
        reserve = FILES_RESERVE + FILES_PER_ENGINE * len(a.engines)
        self.open_files = open_file_limit(a.max_connections + reserve)
        self.gate.capacity = max(1, min(a.max_connections, self.open_files - reserve))
        port = listeners[0].socket.getsockname()[1]
        task_status.started(port)
        await trio.serve_listeners(self._connection, listeners, handler_nursery=nursery)

    async def _connection(self, stream: trio.SocketStream) -> None:
        try:
            address = str(stream.socket.getpeername()[0])
        except OSError:
            await stream.aclose()
            return
        if not self.gate.enter(address):
            await trio.aclose_forcefully(stream)
            return
        try:
            await self._handle(stream, address)
        except Exception as exc:
            if not _peer_gone(exc):
                log.exception("connection from %s failed", address)
        finally:
            self.gate.leave(address)
            await trio.aclose_forcefully(stream)

    async def _handle(self, stream: trio.SocketStream, address: str) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_BYTES)
        raw = bytearray()
        event: Any = h11.NEED_DATA
        with trio.move_on_after(HEAD_SECONDS):
            while True:
                event = conn.next_event()
                if event is not h11.NEED_DATA:
                    break
                data = await stream.receive_some(4096)
                if not data:
                    return
                raw += data
                conn.receive_data(bytes(data))
        if not isinstance(event, h11.Request):
            return  # too slow, too long, or not HTTP: dropped
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
        target = event.target.decode("latin-1")
        client = forwarded_for(headers) if address in self.arena.trusted_proxies else None
        if client is not None:
            if not self.gate.forwarded(client):
                return
            try:
                request = Request(event.method.decode("latin-1"), target, headers, client, True)
                await self._route(stream, conn, raw, request)
            finally:
                self.gate.forwarded_left(client)
            return
        request = Request(event.method.decode("latin-1"), target, headers, address)
        await self._route(stream, conn, raw, request)

    async def _route(
        self, stream: trio.SocketStream, conn: h11.Connection, raw: bytearray, request: Request
    ) -> None:
        headers, target = request.headers, request.target
        if headers.get("upgrade", "").lower() == "websocket" and self.frontends is not None:
            await self._relayed(stream, raw, request, self.frontends)
            return
        if headers.get("upgrade", "").lower() == "websocket":
            # Behind a proxy the kernel measures the way to the proxy, not to the client.
            rtt = no_measure if request.proxied else kernel_rtt(stream.socket)
            await self._websocket(Replay(bytes(raw), stream), request, rtt)
            return
        respond = Respond(stream, conn)
        path = target.split("?", 1)[0]
        route = self.routes.get(path)
        prefix = path[: path.rfind("/") + 1]
        if route is None and prefix != "/":  # a route for a family of paths: "/game/"
            route = self.routes.get(prefix)
        wait = self.gate.requests.take(request.address)
        if wait:
            # Pages, the API and events alike: whatever an address asks for, it cannot
            # ask so often that answering takes the games' time.
            self.gate.limited += 1
            await respond.whole(
                429,
                b"too many requests from this address; wait as Retry-After says\n",
                "text/plain; charset=utf-8",
                (("retry-after", str(math.ceil(wait))),),
            )
        elif request.method not in ("GET", "HEAD"):
            await respond.whole(405, b"only GET\n", "text/plain; charset=utf-8")
        elif route is None:
            await respond.whole(404, b"not found\n", "text/plain; charset=utf-8")
        else:
            await route(request, respond)

    async def stop(self) -> None:
        """Tell every connected engine the server is stopping (close 4003), so that its
        client reconnects with backoff instead of taking it for a network fault."""
        with trio.move_on_after(3):
            async with trio.open_nursery() as nursery:
                for links in self.links.values():
                    for link in links:
                        if link.connected:
                            why = "the arena is stopping; reconnect later"
                            nursery.start_soon(link.close, CLOSE_STOPPING, why)

    # ------------------------------------------------------------------ engines

    async def _relayed(
        self, stream: trio.SocketStream, raw: bytearray, request: Request, fronts: Frontends
    ) -> None:
        """An engine's connection, handed to a front end (`frontends.py`): this
        process keeps the login, the session and the gate's count, until the front end
        says the connection ended."""
        ws = await fronts.hand(stream.socket, bytes(raw), request.proxied)
        stream.socket.close()  # the front end holds its own copy now
        if ws is None:
            return  # no front end is up (one restarts): the client tries again
        try:
            if await ws.opened():
                await self._engine(ws, request.address, ws.kernel)
        finally:
            # Until the front end says it ended, which may take its ping timeout (a
            # client that reads nothing holds the close behind what it did not read):
            # till then the connection still counts against the limits.
            with trio.move_on_after(PING_WAIT + 5):
                await ws.aclose()

    async def _websocket(
        self, stream: Replay, request: Request, rtt: Callable[[], float | None]
    ) -> None:
        async with trio.open_nursery() as nursery:
            # The library's reader runs in `nursery` until the connection ends: every
            # way out cancels it, or a refused upgrade would hold its connection open.
            ws_request = await upgrade(nursery, stream, HEAD_SECONDS)
            if ws_request is None:  # refused by the library itself (it answered 400)
                nursery.cancel_scope.cancel()
                return
            if request.target.split("?", 1)[0] != ENGINE_PATH:
                with trio.move_on_after(2):
                    await ws_request.reject(404, body=b"engines connect at /engine\n")
                nursery.cancel_scope.cancel()
                return
            protocol = PROTOCOL if PROTOCOL in ws_request.proposed_subprotocols else None
            ws = await ws_request.accept(subprotocol=protocol)
            try:
                await self._engine(ws, request.address, rtt)
            finally:
                with trio.move_on_after(2):
                    await ws.aclose()
                nursery.cancel_scope.cancel()

    async def _refuse(self, ws: Connection, code: int, reason: str) -> None:
        # A reason may echo what the client sent (its name): never more than a line.
        reason = reason[:REASON_MOST]
        with trio.move_on_after(2), contextlib.suppress(ConnectionClosed):  # gone already
            await ws.send_message(control("refused", reason=reason, retry=code != CLOSE_REFUSED))
            await ws.aclose(code, reason[:120])

    async def _engine(self, ws: Connection, address: str, rtt: Callable[[], float | None]) -> None:
        if not self.gate.login_allowed(address):
            await self._refuse(ws, CLOSE_BUSY, f"too many logins from {address}; wait a minute")
            return
        login: dict[str, Any] = {}
        with trio.move_on_after(LOGIN_SECONDS):
            message = await ws.get_message()
            if isinstance(message, str):
                try:
                    login = parse_control(message)
                except ValueError:
                    login = {}
        if login.get("type") != "login" or login.get("protocol") != PROTOCOL:
            await self._refuse(ws, CLOSE_REFUSED, f"log in first: a {PROTOCOL} login message")
            return
        name, token = login.get("name"), login.get("token")
        if not isinstance(name, str) or not isinstance(token, str):
            await self._refuse(ws, CLOSE_REFUSED, "the login needs a name and a token")
            return
        problem = self._authenticate(name, token)
        if problem is not None:
            await self._refuse(ws, CLOSE_REFUSED, problem)
            return
        entry = self.roster.entry(name) or PlayerEntry(name, "")
        links = self.links[name] = [k for k in self.links.get(name, []) if k.dead is None]
        session, received = login.get("session"), login.get("received", 0)
        link = next((k for k in links if k.session_id == session), None)
        if link is not None and isinstance(received, int):
            welcome = control(
                "welcome", session=link.session_id, resume=True, received=link.received
            )
            if await link.attach(ws, address, received, welcome, rtt):
                await self._pump(ws, link)
                return
        if link is not None:  # its own session, which cannot go on: it starts afresh
            link.kill("it logged in again without resuming", disconnect=True)
            links.remove(link)
        while len(links) >= entry.games_at_once:
            waiting = [k for k in links if not k.connected]
            if not waiting:
                where = ", ".join(sorted({k.address for k in links}))
                await self._refuse(
                    ws,
                    CLOSE_BUSY,
                    f"{name} is connected already (from"
                    f" {where}); its entry allows {entry.games_at_once}"
                    " session(s)",
                )
                return
            waiting[0].kill("its client logged in again without resuming", disconnect=True)
            links.remove(waiting[0])
        await self._new_session(ws, address, name, entry, login, rtt)

    def _authenticate(self, name: str, token: str) -> str | None:
        """Why this login is refused, or None. One message for a wrong name or token
        would hide typos from honest users; the names are public on the live page."""
        a = self.arena
        barred = self.roster.barred(name)
        if barred is not None:
            return f"{barred}; ask its organiser"
        entry = self.roster.entry(name)
        if entry is not None:
            return None if entry.accepts(token) else f"wrong token for {name}"
        if name in self.own_engines:
            return f"{name} is one of the arena's own engines; choose another name"
        if a.open_registration:
            self.registry.expire(self._keeps)
        stored = self.registry.get(name)
        if stored is not None:
            return None if PlayerEntry(name, stored).accepts(token) else f"wrong token for {name}"
        if not a.open_registration:
            return (
                f"{shown(name)} is not a player of this arena; ask its organiser for a token"
                " (`arbiter arena token NAME`)"
            )
        try:
            check_name(name, "name")
        except ConfigError as exc:
            return f"{shown(name)!r} cannot be a name: {exc.message}"
        problem = lookalike(name, [*self.roster.names(), *self.own_engines, *self.registry.hashes])
        if problem is not None:
            return problem
        if len(token) < 16:
            return "choose a token of at least 16 characters (it registers the name)"
        self.registry.add(name, hash_token(token))
        return None

    def _keeps(self, name: str) -> bool:
        """Whether a registered name is in use: it has played, or is connected."""
        return any(h.has_played(name) for _, h in self.rooms.values()) or any(
            k.dead is None for k in self.links.get(name, [])
        )

    def _room(self, asked: Any) -> tuple[Arena, Hall] | str:
        """The room a login asks for (`room`; none: the only one), or why it cannot be."""
        names = ", ".join(sorted(self.rooms))
        if asked is None and len(self.rooms) == 1:
            return next(iter(self.rooms.values()))
        if asked is None:
            return f"this arena has rooms ({names}): choose one (arena connect --room NAME)"
        if isinstance(asked, str) and asked and asked in self.rooms:
            return self.rooms[asked]
        if "" in self.rooms:
            return "this arena has no rooms: connect without --room"
        return f"no room {str(asked)[:40]!r} here; its rooms: {names}"

    async def _new_session(
        self,
        ws: Connection,
        address: str,
        name: str,
        entry: PlayerEntry,
        login: dict[str, Any],
        rtt: Callable[[], float | None],
    ) -> None:
        room = self._room(login.get("room"))
        if isinstance(room, str):
            await self._refuse(ws, CLOSE_REFUSED, room)
            return
        a, hall = room
        try:
            dialect_table = login.get("dialect") or {}
            if not isinstance(dialect_table, dict):
                raise ConfigError("dialect must be a table", where="login")
            dialect = dialect_from(dialect_table, f"{name}'s login")
        except ConfigError as exc:
            await self._refuse(ws, CLOSE_REFUSED, f"{exc.message}")
            return
        options = login.get("options") or []
        if not (
            isinstance(options, list) and all(isinstance(o, str) and o.strip() for o in options)
        ):
            await self._refuse(ws, CLOSE_REFUSED, "options must be a list of command lines")
            return
        link = Link(
            name,
            secrets.token_hex(12),
            a.disconnect_grace,
            on_dead=lambda dead: hall.left(dead.name, dead),
        )
        self.hall_of[link] = hall
        self.links.setdefault(name, []).append(link)
        await link.attach(
            ws,
            address,
            0,
            control("welcome", session=link.session_id, resume=False, received=0),
            rtt,
        )
        session = EngineSession(link, link, name)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._pump, ws, link)
            try:
                info = await handshake(session, hall.deadlines, options, named=True)
            except (EngineError, ArbiterError) as exc:
                reason = f"handshake failed: {getattr(exc, 'detail', exc)}"
                link.kill(reason)
                await self._refuse(ws, CLOSE_RESTART, reason)
                return
            player = RemotePlayer(
                session, RemoteHost(link, info), dialect, a.command_timeout, a.latency_allowance
            )
            player.name = name
            problem = player.unsupported(a.variant)
            if problem is not None:
                link.kill(problem)
                await self._refuse(ws, CLOSE_REFUSED, problem)
                return
            hall.arrived(name, link, player, info)

    async def _pump(self, ws: Connection, link: Link) -> None:
        """Relay one connection into its link until either ends, or a newer connection
        resumes the session (only the link's current connection speaks for it, and only
        its end starts the grace); ping it meanwhile (a front end pings its own, and
        says what the pings took)."""
        replaced = link.replaced
        if link.ws is not ws:
            return
        async with trio.open_nursery() as nursery:
            if isinstance(ws, Relayed):
                ws.stats = link.stats
            elif isinstance(ws, WebSocketConnection):
                nursery.start_soon(self._ping, ws, link)
            nursery.start_soon(_cancel_on, link.died, nursery.cancel_scope)
            nursery.start_soon(_cancel_on, replaced, nursery.cancel_scope)
            try:
                while link.dead is None:
                    message = await ws.get_message()
                    if link.ws is not ws:
                        break
                    if isinstance(message, bytes):
                        link.engine_wrote(message)  # bytes: capped by MAX_UNREAD
                        continue
                    if self.messages.take(link.session_id):
                        link.dropped += 1  # over the limit: not even parsed
                        continue
                    try:
                        data = parse_control(message)
                    except ValueError:
                        link.kill("sent a message that is not the relay's")
                        break
                    self._controlled(link, data)
            except ConnectionClosed:
                if link.ws is ws:
                    link.lost(ws)
                    if link.dead is None and not self._busy(link):
                        link.kill("disconnected between games")
                    elif link.dead is None:
                        self.nursery_timer(link)
            nursery.cancel_scope.cancel()
        if isinstance(ws, Relayed):
            ws.stats = None
        if replaced.is_set():
            with trio.move_on_after(2):
                await ws.aclose(1000, "a newer connection resumed this session")
        elif link.dead is not None and link.ws is ws:
            # Banned or removed: the client stops (4001); any other end, it starts afresh.
            sent_off = any(link in h.sent_off for _, h in self.rooms.values())
            code = CLOSE_REFUSED if sent_off else CLOSE_RESTART
            await link.close(code, link.dead)

    def _busy(self, link: Link) -> bool:
        hall = self.hall_of.get(link)
        return hall is not None and hall.playing(link)

    def nursery_timer(self, link: Link) -> None:
        """Start the grace period of a link whose connection dropped mid-game."""
        self.hall.nursery.start_soon(_expire_after, link)

    @staticmethod
    def _controlled(link: Link, data: dict[str, Any]) -> None:
        """A control message from the client, whose fields may be anything JSON holds:
        an integer too big for a float included (not a fault: the report is untrusted
        anyway, and what cannot be a float is recorded as unknown)."""
        kind = data["type"]
        if kind == "stderr" and isinstance(data.get("text"), str):
            link.stderr.append(data["text"][:MAX_TEXT].encode("utf-8", "replace"))
        elif kind == "t" and type(data.get("ms")) in (int, float):
            try:
                link.reported = float(data["ms"])
            except OverflowError:
                link.reported = -1.0
        elif kind == "exited" and type(data.get("code")) is int:
            link.engine_exited(data["code"])

    @staticmethod
    async def _ping(ws: WebSocketConnection, link: Link) -> None:
        async def measured(took: float) -> None:
            link.stats.rtts.append(took)

        await ping_until_silent(ws, measured)
        await ws.aclose(1001, "no answer to pings")


_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, ConnectionClosed)


def _peer_gone(exc: BaseException) -> bool:
    """Whether `exc` only says that the peer went away or spoke garbage: the everyday
    lot of a port on the internet, which the log is not for (an attacker could fill
    it), also when it comes out of a nursery as a group."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_peer_gone(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)


def shown(name: str, most: int = 40) -> str:
    """A name the client sent, short enough to echo in a refusal."""
    return name if len(name) <= most else name[:most] + "…"


def forwarded_for(headers: dict[str, str]) -> str | None:
    """The client a trusted reverse proxy forwards for: the last address it added to
    `X-Forwarded-For` (earlier ones are the client's to make up), if it is one."""
    value = headers.get("x-forwarded-for", "").split(",")[-1].strip()
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


async def _cancel_on(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _expire_after(link: Link) -> None:
    """The grace period: a timer, not a synchronisation (the link decides)."""
    await trio.sleep(link.grace)
    link.expire()
