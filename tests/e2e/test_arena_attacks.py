"""The arena's port attacked as the internet and a malicious client would: garbage, slow
and oversized input, hostile logins, forged sessions and control messages. Each test
says what must hold: the attacker is refused or dropped, honest sessions go on, and the
server's log holds no traceback (an attacker must not be able to fill it)."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from arena_attack import (
    FakeEngine,
    arena_in_process,
    drop,
    frame,
    login,
    open_ws,
    raw_exchange,
    raw_websocket,
    until_closed,
)
from arena_helpers import TOKENS, Server, arena_file, client, events, wait_games
from commands import invoke
from paths import BADBOT
from trio_websocket import connect_websocket_url

from arbiter.arena import net, web
from arbiter.engines.remote import (
    CLOSE_BUSY,
    CLOSE_REFUSED,
    CLOSE_RESTART,
    MAX_FRAME,
    MAX_UNREAD,
    PROTOCOL,
)

UPGRADE = (
    b"connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n"
    b"sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.smoke
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
    ]
    async with (
        arena_in_process(tmp_path, monkeypatch, players=("alice", "bob"), engines="") as arena,
        trio.open_nursery() as nursery,
    ):
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


@pytest.mark.smoke
async def test_a_websocket_upgrade_elsewhere_than_the_engines_door_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused upgrades are answered and closed at once, not held open (each open
    connection holds one of the address's few places)."""
    async with arena_in_process(tmp_path, monkeypatch, engines="") as arena:
        stream = await trio.open_tcp_stream("127.0.0.1", arena.port)
        async with stream:
            await stream.send_all(b"GET /elsewhere HTTP/1.1\r\nhost: x\r\n" + UPGRADE + b"\r\n")
            got = b""
            while b"engines connect at /engine" not in got:
                got += await stream.receive_some(4096)
            assert got.startswith(b"HTTP/1.1 404")
            await trio.testing.wait_all_tasks_blocked()
            assert arena.server.gate.total == 0
    assert tracebacks(caplog) == []


@pytest.mark.smoke
async def test_an_upgrade_the_websocket_library_refuses_is_closed_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(net, "HEAD_SECONDS", 0.2)
    async with arena_in_process(tmp_path, monkeypatch, engines="") as arena:
        no_key = (
            b"GET /engine HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n"
        )
        got, closed = await raw_exchange(arena.port, no_key)
        assert got.startswith(b"HTTP/1.1 400") and closed
        with trio.fail_after(5):
            while arena.server.gate.total:  # noqa: ASYNC110 (a counter, not an event)
                await trio.sleep(0.01)  # the handler ends within HEAD_SECONDS
    assert tracebacks(caplog) == []


async def test_slow_heads_and_silent_websockets_are_dropped_on_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slowloris: a head trickled byte by byte is cut at HEAD_SECONDS, however steady;
    a WebSocket that never logs in is refused at LOGIN_SECONDS."""
    monkeypatch.setattr(net, "HEAD_SECONDS", 0.5)
    monkeypatch.setattr(net, "LOGIN_SECONDS", 0.3)
    async with arena_in_process(tmp_path, monkeypatch, engines="") as arena:
        head = b"GET /api/live HTTP/1.1\r\n" + b"x-pad: " + b"a" * 200 + b"\r\n\r\n"
        stream = await trio.open_tcp_stream("127.0.0.1", arena.port)
        start = trio.current_time()
        sent = 0
        async with stream:
            with pytest.raises(trio.BrokenResourceError), trio.fail_after(5):
                for byte in head:
                    await stream.send_all(bytes([byte]))
                    sent += 1
                    await trio.sleep(0.02)
        assert sent < len(head)
        assert 0.4 < trio.current_time() - start < 2.0
        async with trio.open_nursery() as nursery:
            ws = await open_ws(nursery, arena.port)
            got, code, _ = await until_closed(ws)
        assert code == CLOSE_REFUSED and "log in first" in json.loads(got[0])["reason"]


async def logged_in(
    nursery: trio.Nursery, port: int, who: str = "alice", **fields: Any
) -> FakeEngine:
    ws = await open_ws(nursery, port)
    await ws.send_message(login(who, **fields))
    engine = FakeEngine(ws)
    await engine.welcome()
    await engine.handshake()
    return engine


@pytest.mark.smoke
async def test_control_messages_of_the_wrong_type_or_size_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Numbers too big for a float, NaN, infinities, strings and booleans in control
    messages change nothing and break nothing; the session goes on."""
    async with (
        arena_in_process(tmp_path, monkeypatch, engines="") as arena,
        trio.open_nursery() as nursery,
    ):
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(login("alice"))
        engine = FakeEngine(ws)
        await engine.welcome()
        for text in (
            '{"type":"t","ms":1' + "0" * 400 + "}",
            '{"type":"t","ms":NaN}',
            '{"type":"t","ms":-Infinity}',
            '{"type":"t","ms":"9"}',
            '{"type":"t","ms":true}',
            '{"type":"exited","code":"3"}',
            '{"type":"exited","code":1.5}',
            '{"type":"exited","code":true}',
            '{"type":"stderr","text":5}',
            '{"type":"nonsense"}',
        ):
            await ws.send_message(text)
        await engine.handshake()
        await trio.testing.wait_all_tasks_blocked()
        (link,) = arena.server.links["alice"]
        assert link.dead is None and link.connected
        assert arena.server.hall.participants["alice"].present
        # A huge exit code is still an exit: the session ends in words.
        await ws.send_message('{"type":"exited","code":1' + "0" * 400 + "}")
        _, code, reason = await until_closed(ws)
        assert code == CLOSE_RESTART and "exited" in reason
    assert tracebacks(caplog) == []


@pytest.mark.smoke
async def test_a_session_id_is_only_ever_resumed_by_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob, logged in with his own token, claims alice's session id (with a plausible
    count and a bogus one): he gets a fresh session of his own; alice's is untouched."""
    async with (
        arena_in_process(tmp_path, monkeypatch, players=("alice", "bob"), engines="") as arena,
        trio.open_nursery() as nursery,
    ):
        alice = await logged_in(nursery, arena.port, "alice")
        for received in (alice.received, 10**9, -1):
            ws = await open_ws(nursery, arena.port)
            await ws.send_message(login("bob", session=alice.session, received=received))
            bob = FakeEngine(ws)
            reply = await bob.welcome()
            assert reply["resume"] is False and reply["session"] != alice.session
            assert (await bob.command()).endswith("protocol_version")
            await drop(ws)
        await trio.testing.wait_all_tasks_blocked()
        (link,) = arena.server.links["alice"]
        assert link.session_id == alice.session and link.dead is None and link.connected
        assert all(k.session_id != alice.session for k in arena.server.links["bob"])
        await drop(alice.ws)


@pytest.mark.smoke
async def test_a_resumed_session_drops_the_connection_it_replaced_and_lives_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A client whose connection went half-open resumes on a new one: the old one is
    closed by the server (it must not relay into the session any more), and its end,
    whenever it comes, does not end the session that now lives on the new one."""
    async with (
        arena_in_process(tmp_path, monkeypatch, players=("alice", "bob"), engines="") as arena,
        trio.open_nursery() as nursery,
    ):
        old = await logged_in(nursery, arena.port, "alice")
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(login("alice", session=old.session, received=old.received))
        new = FakeEngine(ws)
        reply = await new.welcome()
        assert reply["resume"] is True and reply["session"] == old.session
        with trio.fail_after(5):
            _, code, _ = await until_closed(old.ws)
        assert code is not None
        await trio.testing.wait_all_tasks_blocked()
        (link,) = arena.server.links["alice"]
        assert link.dead is None and link.ws is not None
        # The session is alive on the new connection: bob arrives, they are paired,
        # and the game's set-up comes on the new connection.
        bob = await logged_in(nursery, arena.port, "bob")
        nursery.start_soon(bob.agree)
        with trio.fail_after(10):
            first = await new.command()
        assert "boardsize" in first or "atoll-islands" in first or "clear_board" in first
        await drop(ws)
        await drop(bob.ws)
    assert tracebacks(caplog) == []


@pytest.mark.smoke
async def test_bad_queries_of_the_games_api_are_answered_400(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with arena_in_process(tmp_path, monkeypatch, engines="") as arena:
        for query in (
            "limit=abc",
            "limit=0",
            "limit=-5",
            "before=x",
            "before=" + "9" * 40,
            "before=-" + "9" * 40,
            "limit=" + "9" * 5000,
            "before=1e3",
            "limit=%ff%fe",
            "before=%00",
        ):
            got, closed = await raw_exchange(
                arena.port, f"GET /api/games?{query} HTTP/1.1\r\nhost: x\r\n\r\n".encode()
            )
            assert got.startswith(b"HTTP/1.1 400") and closed, (query, got[:100])
            assert json.loads(got.split(b"\r\n\r\n", 1)[1])["error"]
        for query in ("", "limit=1000000", "before=0", "limit=3&before=5&limit=x"):
            got, _ = await raw_exchange(
                arena.port, f"GET /api/games?{query} HTTP/1.1\r\nhost: x\r\n\r\n".encode()
            )
            assert got.startswith(b"HTTP/1.1 200"), (query, got[:100])
            assert json.loads(got.split(b"\r\n\r\n", 1)[1])["games"] == []
    assert tracebacks(caplog) == []


@pytest.mark.smoke
async def test_a_page_that_falls_behind_on_events_is_dropped_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """More events than a page's queue holds, published at once: the page is dropped
    (it reconnects and reads the state afresh) and nothing is logged."""
    async with arena_in_process(tmp_path, monkeypatch, engines="") as arena:
        stream = await trio.open_tcp_stream("127.0.0.1", arena.port)
        async with stream:
            await stream.send_all(b"GET /events HTTP/1.1\r\nhost: x\r\n\r\n")
            got = b""
            while b"event: state" not in got:
                got += await stream.receive_some(65536)
            for n in range(web.SUBSCRIBER_QUEUE + 2):  # (one may go straight to a waiting reader)
                arena.server.hall.publish("move", {"game": "g", "move": "a1", "ply": n})
            with trio.fail_after(5):
                while chunk := await stream.receive_some(65536):
                    got += chunk
        assert got.count(b"event: move") <= web.SUBSCRIBER_QUEUE + 1
    assert tracebacks(caplog) == []


@pytest.mark.smoke
async def test_oversized_and_endless_websocket_messages_are_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One message over MAX_FRAME, or a message whose fragments never end: the server
    closes with 1009 once MAX_FRAME is passed, having read little more."""
    async with arena_in_process(tmp_path, monkeypatch, engines="") as arena:
        async with trio.open_nursery() as nursery:
            ws = await open_ws(nursery, arena.port)
            await ws.send_message("x" * (MAX_FRAME + 1))
            _, code, _ = await until_closed(ws)
            assert code == 1009
        stream = await raw_websocket(arena.port)
        sent = 0
        async with stream:
            with pytest.raises(trio.BrokenResourceError), trio.fail_after(10):
                await stream.send_all(frame(0x2, b"\x00" * 4096, fin=False))
                while True:  # continuation frames, forever
                    await stream.send_all(frame(0x0, b"\x00" * 4096, fin=False))
                    sent += 4096
        assert sent < 64 * MAX_FRAME  # (what the kernel's buffers took before the reset)
    assert tracebacks(caplog) == []


@pytest.mark.smoke
async def test_engine_output_that_nobody_asked_for_is_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A logged-in client that floods binary messages between games: the session ends
    at MAX_UNREAD bytes, with a reason, and its name is free again."""
    async with (
        arena_in_process(tmp_path, monkeypatch, engines="") as arena,
        trio.open_nursery() as nursery,
    ):
        engine = await logged_in(nursery, arena.port, "alice")
        with trio.fail_after(10):
            for _ in range(MAX_UNREAD // MAX_FRAME + 1):
                await engine.ws.send_message(b"y" * MAX_FRAME)
            _, code, reason = await until_closed(engine.ws)
        assert code == CLOSE_RESTART and "never read" in reason
        assert not arena.server.hall.participants["alice"].present
        again = await logged_in(nursery, arena.port, "alice")
        await drop(again.ws)


@pytest.mark.smoke
async def test_logins_from_one_address_are_limited_per_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flood of logins (right or wrong tokens alike) from one address: after
    logins_per_minute, each is refused with 'retry later' before its token is read."""
    async with (
        arena_in_process(tmp_path, monkeypatch, engines="", extra="logins_per_minute = 3") as arena,
        trio.open_nursery() as nursery,
    ):
        answers = []
        for token in ("wrong-token-0123456789",) * 3 + (TOKENS["alice"],) * 2:
            ws = await open_ws(nursery, arena.port)
            await ws.send_message(login("alice", token=token))
            got, code, _ = await until_closed(ws)
            answers.append((code, json.loads(got[0])))
        assert [code for code, _ in answers] == [CLOSE_REFUSED] * 3 + [CLOSE_BUSY] * 2
        assert all("too many logins" in a["reason"] and a["retry"] for _, a in answers[3:])


HOSTILE_NAME = '<script>alert("n")</script>\x1b[31mred\u202e'
HOSTILE_VERSION = "<img src=x onerror=alert(1)>\x1b]0;title\x07"


@pytest.mark.smoke
async def test_what_an_engine_says_about_itself_reaches_the_live_api_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Markup and terminal escapes in an engine's name and version: /api/live serves
    them as JSON strings (JSON, nosniff), control characters written as escapes, and the
    live page sets all text with textContent."""
    async with (
        arena_in_process(tmp_path, monkeypatch, engines="") as arena,
        trio.open_nursery() as nursery,
    ):
        ws = await open_ws(nursery, arena.port)
        await ws.send_message(login("alice"))
        engine = FakeEngine(ws, name=HOSTILE_NAME, version=HOSTILE_VERSION)
        await engine.welcome()
        await engine.handshake()
        await trio.testing.wait_all_tasks_blocked()
        got, _ = await raw_exchange(arena.port, b"GET /api/live HTTP/1.1\r\nhost: x\r\n\r\n")
        head, body = got.split(b"\r\n\r\n", 1)
        assert b"content-type: application/json" in head and b"nosniff" in head
        (alice,) = json.loads(body)["connected"]
        assert alice["name"] == "alice"
        for text in (alice["engine"], alice["version"]):
            assert text.isprintable() and "\x1b" not in text
        assert alice["engine"].startswith('<script>alert("n")</script>')
        page, _ = await raw_exchange(arena.port, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert b"textContent" in page
        for sink in (b"innerHTML", b"outerHTML", b"insertAdjacentHTML", b"document.write"):
            assert sink not in page
        assert b"content-security-policy: default-src 'self'" in page
        await drop(ws)


def test_a_flood_of_connections_stays_within_the_open_file_limit(tmp_path: Path) -> None:
    """A server whose open-file limit (256 here, soft and hard) is below max_connections:
    it says so and lets no more connections in than its files allow, keeping some for
    its store and engines; a flood of 400 idle connections from one address (the
    per-address limit raised) neither makes it fail to accept nor stops the games."""
    file = arena_file(tmp_path, players=("alice", "bob"), extra="connections_per_address = 100000")
    server = Server(file, open_files=256)
    idle: list[socket.socket] = []
    clients = [
        client(server.port, "alice", "heuristic", tmp_path),
        client(server.port, "bob", "random", tmp_path),
    ]
    try:
        with events(server.port) as stream:
            wait_games(stream, 2)
            for _ in range(400):
                idle.append(socket.create_connection(("127.0.0.1", server.port)))
            wait_games(stream, 6)  # play goes on
        for s in idle:
            s.close()
        live = None
        deadline = time.monotonic() + 20
        while live is None:  # until the server has seen the flood go and lets us in
            try:
                live = server.get("/api/live")
            except OSError:  # (refused at capacity: closed at once)
                assert time.monotonic() < deadline, "the flood's places were never freed"
                time.sleep(0.1)
        # (A client whose engine was restarted meanwhile may still be in its backoff:
        # while the flood held every place, its login was refused as any other.)
        assert live["games"] >= 8 and "random" in {e["name"] for e in live["connected"]}
    finally:
        for s in idle:
            s.close()
        for c in clients:
            c.stop()
        server.stop()
    out = server.out.text()
    assert "Too many open files" not in out and "EMFILE" not in out
    assert "The open-file limit (256) allows" in out


# Attackers at once of each kind, and from how many addresses.
ATTACKS = {
    "slow head": (40, 4),
    "idle": (400, 20),
    "silent websocket": (40, 2),
    "deaf page": (10, 1),
    "wrong login": (4, 1),
    "garbage": (4, 1),
}


async def _attack(
    port: int, until: float, counts: dict[str, int], kinds: frozenset[str] = frozenset(ATTACKS)
) -> None:
    """Everything at once, from addresses other than the honest clients' (127.0.0.1):
    slow heads, idle connections, WebSockets that never log in, pages that never read
    their events, a login flood with wrong tokens, oversized heads and garbage."""

    async def connect(address: str) -> trio.SocketStream | None:
        sock = trio.socket.socket()
        # A small receive window, set before connecting: what a reader that never reads
        # leaves unread soon stops the server's sending, as over a slow network.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            await sock.bind((address, 0))
            await sock.connect(("127.0.0.1", port))
        except OSError:
            sock.close()
            return None
        return trio.SocketStream(sock)

    async def repeat(kind: str, address: str, body: Any) -> None:
        while trio.current_time() < until:
            stream = await connect(address)
            if stream is None:
                await trio.sleep(0.05)
                continue
            counts[kind] = counts.get(kind, 0) + 1
            async with stream:
                with trio.move_on_at(until), contextlib.suppress(trio.BrokenResourceError):
                    await body(stream)

    async def slow_head(stream: trio.SocketStream) -> None:
        for byte in b"GET / HTTP/1.1\r\n" + b"x-a: " + b"b" * 10_000:
            await stream.send_all(bytes([byte]))
            await trio.sleep(0.2)

    async def idle(stream: trio.SocketStream) -> None:
        await stream.receive_some(1)
        await trio.sleep(0.05)

    async def silent_ws(stream: trio.SocketStream) -> None:
        await stream.send_all(b"GET /engine HTTP/1.1\r\nhost: x\r\n" + UPGRADE + b"\r\n")
        while await stream.receive_some(4096):
            pass

    async def deaf_page(stream: trio.SocketStream) -> None:
        await stream.send_all(b"GET /events HTTP/1.1\r\nhost: x\r\n\r\n")
        await trio.sleep_until(until - 3)  # never reads, until it looks whether it was dropped
        with trio.move_on_after(2):
            while await stream.receive_some(65536):
                pass
            counts["deaf page dropped"] = counts.get("deaf page dropped", 0) + 1

    async def wrong_login(stream: trio.SocketStream) -> None:
        await stream.send_all(b"GET /engine HTTP/1.1\r\nhost: x\r\n" + UPGRADE + b"\r\n")
        got = b""
        while b"\r\n\r\n" not in got:
            got += await stream.receive_some(4096)
        await stream.send_all(frame(0x1, login("alice", token="w" * 30).encode(), fin=True))
        while await stream.receive_some(4096):
            pass

    async def garbage(stream: trio.SocketStream) -> None:
        await stream.send_all(
            b"\x16\x03\x01" + b"\xff" * 3000 + b"GET / HTTP/1.1\r\n" + b"X" * 40_000
        )
        while await stream.receive_some(4096):
            pass
        await trio.sleep(0.02)  # (the attacker shares the machine's two cores)

    bodies = {
        "slow head": slow_head,
        "idle": idle,
        "silent websocket": silent_ws,
        "deaf page": deaf_page,
        "wrong login": wrong_login,
        "garbage": garbage,
    }
    async with trio.open_nursery() as nursery:
        for kind in kinds:
            number, addresses = ATTACKS[kind]
            for n in range(number):
                address = f"127.0.{list(ATTACKS).index(kind) + 1}.{n % addresses + 1}"
                nursery.start_soon(repeat, kind, address, bodies[kind])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def test_games_in_flight_keep_their_pace_while_the_port_is_attacked(tmp_path: Path) -> None:
    """Two remote engines and an anchor play; then the port is attacked from other
    addresses for 20 s. Games keep finishing at a comparable rate, the time a move
    takes does not jump, no game is lost to the attack, and the log stays clean."""
    file = arena_file(tmp_path, players=("alice", "bob"))
    server = Server(file)
    clients = [
        client(server.port, "alice", "heuristic", tmp_path),
        client(server.port, "bob", "random", tmp_path),
    ]
    counts: dict[str, int] = {}
    try:
        await trio.sleep(3)  # (the clients log in and the first games start)
        t0 = time.time()
        await trio.sleep(10)  # the baseline window
        t1 = time.time()
        await _attack(server.port, trio.current_time() + 20, counts)
        t2 = time.time()
    finally:
        for c in clients:
            c.stop()
        assert server.stop() in (0, 130, 143)
    out = tmp_path / "games.jsonl"
    assert invoke("arena", "export", str(file), "--records", str(out)).returncode == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]

    def window(start: float, end: float) -> list[dict[str, Any]]:
        return [r for r in records if not r["void"] and start <= _epoch(r["finished"]) < end]

    before, during = window(t0, t1), window(t1, t2)
    rate_before, rate_during = len(before) / (t1 - t0), len(during) / (t2 - t1)

    def waits(games: list[dict[str, Any]]) -> list[float]:  # charged + network allowance
        return [
            m + a
            for r in games
            for m, a in zip(
                r["move_ms"], r["allowance_ms"] or [0.0] * len(r["move_ms"]), strict=True
            )
        ]

    moves_before, moves_during = waits(before), waits(during)
    p50 = (_percentile(moves_before, 0.5), _percentile(moves_during, 0.5))
    p99 = (_percentile(moves_before, 0.99), _percentile(moves_during, 0.99))
    print(
        f"attack: {counts}; games/s {rate_before:.2f} -> {rate_during:.2f}; move wait ms p50"
        f" {p50[0]:.1f} -> {p50[1]:.1f}, p99 {p99[0]:.1f} -> {p99[1]:.1f}"
    )
    assert counts.get("idle", 0) >= 400 and counts.get("wrong login", 0) >= 4
    # The engines, the clients and the attacker share two cores with the server: the rate
    # may fall with the machine's load, but play must go on and moves keep their pace.
    assert len(during) >= 20 and rate_during >= 0.25 * rate_before, (rate_before, rate_during)
    assert p99[1] <= max(3 * p99[0], p99[0] + 100), (p99, counts)
    odd = [
        (r["termination"], r["reason"])
        for r in during + before
        if r["termination"] not in ("connection", "resign")
    ]
    assert not odd, odd
    text = server.out.text()
    assert "Traceback" not in text and "EMFILE" not in text, text[-3000:]


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_markup_and_escapes_from_a_remote_engine_stay_text_everywhere(tmp_path: Path) -> None:
    """A remote engine that calls itself with a script tag and terminal escapes, and
    says more on stderr: the live API, the games API, the live report, `arbiter report`
    and the server's own output carry it as text, never as markup or escapes."""
    evil = "<script>alert(1)</script>\\x1b[31mred\\x1b]0;t\\x07"
    engine = (
        f"evil={sys.executable} {BADBOT} ok --hostile --name '{evil}'"
        f" --say '<img src=x onerror=alert(2)>\\x1b[2J'"
    )
    file = arena_file(tmp_path, players=("alice",))
    server = Server(file)
    try:
        with events(server.port) as stream:
            alice = client(server.port, "alice", engine, tmp_path)
            wait_games(stream, 2)
        live, games = server.get("/api/live"), server.get("/api/games")
        report = server.get("/report")
    finally:
        alice.stop()
        server.stop()
    (entry,) = [e for e in live["connected"] if e["name"] == "alice"]
    assert entry["engine"].startswith("<script>alert(1)</script>")  # text, in JSON
    assert "\x1b" not in json.dumps(live) + json.dumps(games)
    assert games["games"]
    out = tmp_path / "report.html"
    assert invoke("report", str(tmp_path / "test-arena.sqlite"), "-o", str(out)).returncode == 0
    for page in (report, out.read_text()):
        assert "<script>alert(1)" not in page and "<img src=x" not in page
        assert "\x1b" not in page
        assert "&lt;script&gt;alert(1)" in page or "\\u003cscript\\u003ealert(1)" in page
    assert "\x1b" not in server.out.text() + alice.out.text()


@pytest.mark.smoke
@pytest.mark.parametrize("trusted", [True, False])
async def test_behind_a_trusted_proxy_the_limits_count_the_clients_it_forwards_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    """Through a reverse proxy every connection comes from the proxy: when it is trusted,
    the login limit counts the address it forwards for (one client's flood does not
    lock the others out); when it is not, a forwarded address is the client's to make
    up and is ignored."""
    proxies = 'trusted_proxies = ["127.0.0.1"]' if trusted else ""
    async with (
        arena_in_process(
            tmp_path, monkeypatch, engines="", extra=f"logins_per_minute = 2\n{proxies}"
        ) as arena,
        trio.open_nursery() as nursery,
    ):

        async def attempt(client: str) -> int | None:
            chain = f"198.51.100.9, {client}".encode()
            headers = [(b"x-forwarded-for", chain)]
            ws = await connect_websocket_url(
                nursery, arena.url, subprotocols=[PROTOCOL], extra_headers=headers
            )
            await ws.send_message(login("alice", token="wrong-token-0123456789"))
            _, code, _ = await until_closed(ws)
            return code

        flood = [await attempt("203.0.113.1") for _ in range(3)]
        assert flood == [CLOSE_REFUSED, CLOSE_REFUSED, CLOSE_BUSY]
        other = await attempt("203.0.113.2")
        assert other == (CLOSE_REFUSED if trusted else CLOSE_BUSY)
