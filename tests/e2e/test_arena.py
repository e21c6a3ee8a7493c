"""The arena through the real CLI: a server process, client processes, 127.0.0.1."""

from __future__ import annotations

import json
import signal
import socket
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
import trio
import trio.testing
from arena_helpers import TOKENS, Server, arena_file, client, events, wait_games
from commands import invoke
from paths import BADBOT

from arbiter.arena.client import arena_url
from arbiter.arena.config import hash_token, load_arena, token_matches
from arbiter.arena.hall import PACE_FLOOR, Hall
from arbiter.arena.net import Request, Respond
from arbiter.arena.web import SUBSCRIBER_QUEUE, Broadcast, Site
from arbiter.errors import ConfigError


def test_tokens_are_kept_hashed_and_compared_whole() -> None:
    stored = hash_token("s3cret-token-value")
    assert "s3cret" not in stored
    assert token_matches("s3cret-token-value", stored)
    assert not token_matches("s3cret-token-valu", stored)
    assert not token_matches("s3cret-token-value", stored.replace("sha256", "md5"))
    assert hash_token("same") != hash_token("same")  # salted


@pytest.mark.smoke
def test_the_token_command_prints_a_token_and_an_entry_that_accepts_it(tmp_path: Path) -> None:
    result = invoke("arena", "token", "alice")
    assert result.returncode == 0, result.stderr
    token, entry = result.stdout.split("\n", 1)
    assert token not in entry
    file = tmp_path / "arena.toml"
    file.write_text('[arena]\nlisten = "127.0.0.1:0"\nengines = ["random"]\n' + entry)
    arena = load_arena(file)
    assert arena.players["alice"].accepts(token)
    assert not arena.players["alice"].accepts(token[:-1])


class _Page(Respond):
    """A page following /events that reads whatever it is sent at once."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.writes = 0

    async def begin_stream(self, content_type: str) -> None:
        await trio.lowlevel.checkpoint()

    async def chunk(self, data: bytes) -> None:
        self.data += data
        self.writes += 1
        await trio.lowlevel.checkpoint()


@pytest.mark.smoke
async def test_a_page_keeps_up_when_each_pass_publishes_many_events(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Many games in play publish a move each in one pass of the event loop, pass after
    pass; a page is written to a few times a second, and each write carries all that was
    queued meanwhile (the clock here jumps: no time is waited)."""
    arena = load_arena(arena_file(tmp_path))
    broadcast = Broadcast()
    hall = SimpleNamespace(connected=list, live={}, recent=[], games_played=0, held=0, cap=None)
    site = Site(arena, cast(Hall, hall), broadcast)
    page = _Page()
    burst, passes = SUBSCRIBER_QUEUE // 40, 20
    async with trio.open_nursery() as nursery:
        nursery.start_soon(site.events, Request("GET", "/events", {}, "127.0.0.1"), page)
        await trio.testing.wait_all_tasks_blocked()
        writes = page.writes
        for n in range(passes):
            for k in range(burst):
                broadcast.publish("move", {"ply": n * burst + k})
            await trio.lowlevel.checkpoint()  # one pass: the page's task runs once
        await trio.sleep(1.0)  # the page's next writes are due
        nursery.cancel_scope.cancel()
    assert page.data.count(b"event: move") == burst * passes
    assert page.writes - writes <= 2  # gathered, not a write per pass


async def test_a_page_that_falls_behind_gets_what_was_queued_then_is_dropped_quietly(
    tmp_path: Path,
) -> None:
    arena = load_arena(arena_file(tmp_path))
    broadcast = Broadcast()
    hall = SimpleNamespace(connected=list, live={}, recent=[], games_played=0, held=0, cap=None)
    page = _Page()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                Site(arena, cast(Hall, hall), broadcast).events,
                Request("GET", "/events", {}, "127.0.0.1"),
                page,
            )
            await trio.testing.wait_all_tasks_blocked()
            for k in range(2 * SUBSCRIBER_QUEUE):  # the page's task cannot run meanwhile
                broadcast.publish("move", {"ply": k})
    # The route returned by itself (nothing to log); the page reconnects and reads afresh.
    assert SUBSCRIBER_QUEUE <= page.data.count(b"event: move") < 2 * SUBSCRIBER_QUEUE


@pytest.mark.parametrize(
    "text, where",
    [
        ('[arena]\nname = "x"\n', "listen is missing"),
        ('[arena]\nlisten = "nowhere"\n', "arena.listen"),
        ('[arena]\nlisten = "127.0.0.1:0"\ntc = "inf"\n', "arena.tc"),
        ('[arena]\nlisten = "127.0.0.1:0"\nanchors = { ghost = 0 }\n', "arena.anchors"),
        (
            '[arena]\nlisten = "127.0.0.1:0"\nanchors = { random = "high" }\n'
            'engines = ["random"]\n',
            "arena.anchors",
        ),
        (
            '[arena]\nlisten = "127.0.0.1:0"\n[[player]]\nname = "a"\ntoken_hash = "plain"\n',
            "token_hash",
        ),
        ('[arena]\nlisten = "127.0.0.1:0"\nlatency_allowance = -1\n', "latency_allowance"),
        ('[arena]\nlisten = "127.0.0.1:0"\nbogus = 1\n', "unknown key"),
    ],
)
def test_a_bad_arena_file_is_a_usage_error_naming_the_key(
    tmp_path: Path, text: str, where: str
) -> None:
    file = tmp_path / "arena.toml"
    file.write_text(text)
    result = invoke("arena", "status", str(file))
    assert result.returncode == 2, result.stdout + result.stderr
    assert where in result.stderr


@pytest.mark.smoke
def test_the_server_does_not_start_with_an_own_engine_that_cannot_play(tmp_path: Path) -> None:
    hex_only = (
        f'[[engine]]\nname = "hexer"\ncommand = ["{sys.executable}", "{BADBOT}", "ok"]'
        "\nsizes = [5]\n"
    )
    file = arena_file(tmp_path, players=(), engines=hex_only)
    result = invoke("arena", "serve", str(file))
    assert result.returncode == 2, result.stderr
    assert "hexer" in result.stderr and "size 7" in result.stderr
    dead = (
        f'[[engine]]\nname = "dead"\ncommand = ["{sys.executable}", "-c",'
        ' "import sys; sys.exit(3)"]\n'
    )
    file = arena_file(tmp_path, players=(), engines=dead)
    result = invoke("arena", "serve", str(file))
    assert result.returncode == 1, result.stderr
    assert "dead" in result.stderr and "exit status 3" in result.stderr
    assert not (tmp_path / "test-arena.sqlite").exists()  # nothing is created for nothing


def test_addresses_become_the_engines_door() -> None:
    assert arena_url("host:8080") == "ws://host:8080/engine"
    assert arena_url("wss://arena.example.org") == "wss://arena.example.org/engine"
    assert arena_url("ws://h:1/engine") == "ws://h:1/engine"
    for bad in ("host", "http://host:1", "host:port"):
        with pytest.raises(ConfigError):
            arena_url(bad)


def test_four_engines_play_continuously_and_are_rated(tmp_path: Path) -> None:
    """Three remote engines and one of the server's own (an anchor) play; the store
    reads as any results store: ratings, report, status and export."""
    server = Server(arena_file(tmp_path))
    clients = []
    try:
        with events(server.port) as stream:
            clients = [
                client(server.port, "alice", "heuristic", tmp_path),
                client(server.port, "bob", "mc-fast", tmp_path),
                client(server.port, "carol", "random", tmp_path),
            ]
            games = wait_games(stream, 24)
        live = server.get("/api/live")
        assert {e["name"] for e in live["connected"]} == {"alice", "bob", "carol", "random"}
        page = server.get("/api/games?limit=5")
        assert len(page["games"]) == 5 and page["next"] is not None
        older = server.get(f"/api/games?limit=5&before={page['next']}")
        assert max(g["number"] for g in older["games"]) < page["next"]
        standings = server.get("/api/standings")
        # The pacing is on by default; two pairs at most play, under its floor of 8, so
        # the cap never grows past its start and nothing is held back.
        assert PACE_FLOOR <= live["cap"] <= 2 * PACE_FLOOR and live["held"] >= 0
    finally:
        for c in clients:
            c.stop()
        assert server.stop() in (0, 130, 143), server.out.text()
    played = {frozenset((g["seat1"], g["seat2"])) for g in games}
    assert all("random" in pair or len(pair & {"alice", "bob", "carol"}) == 2 for pair in played)
    assert (
        frozenset(("alice", "bob")) in played
        or frozenset(("alice", "carol")) in played
        or frozenset(("bob", "carol")) in played
    )
    assert {e["name"] for e in standings["engines"]} <= {"alice", "bob", "carol", "random"}
    store = tmp_path / "test-arena.sqlite"
    rated = invoke("ratings", str(store), "--anchor", "random=0", "--json")
    assert rated.returncode == 0, rated.stderr
    board = {e["name"]: e for e in json.loads(rated.stdout)["engines"]}
    assert board["random"]["elo"] == 0
    assert sum(e["games"] for e in board.values()) == 2 * json.loads(rated.stdout)["games"]
    status = invoke("arena", "status", str(tmp_path / "arena.toml"), "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["games"] >= 24 and data["standings"]["games"] == data["games"]
    assert {e["name"]: e["elo"] for e in data["standings"]["engines"]}["random"] == 0
    out = tmp_path / "games.jsonl"
    exported = invoke("arena", "export", str(tmp_path / "arena.toml"), "--records", str(out))
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len([r for r in records if not r["void"]]) == data["games"]
    remote = [r for r in records if "alice" in (r["seat1"], r["seat2"])]
    assert remote and all(len(r["allowance_ms"]) == len(r["moves"]) for r in remote)
    assert all(a <= 250 for r in remote for a in r["allowance_ms"])
    report = invoke("report", str(store), "-o", str(tmp_path / "report.html"))
    assert report.returncode == 0, report.stderr
    assert "alice" in (tmp_path / "report.html").read_text()
    for token in (TOKENS["alice"], TOKENS["bob"], TOKENS["carol"]):  # kept hashed only
        assert token.encode() not in store.read_bytes()


@pytest.mark.parametrize("frontends", [0, 2])
def test_a_wrong_token_is_refused_in_one_line_with_status_2(tmp_path: Path, frontends: int) -> None:
    server = Server(arena_file(tmp_path, extra=f"frontends = {frontends}"))
    try:
        wrong = client(server.port, "alice", "random", tmp_path, token="not-the-token-at-all")
        assert wrong.wait() == 2
        assert "wrong token for alice" in wrong.out.text()
        stranger = client(server.port, "mallory", "random", tmp_path, token="x" * 20)
        assert stranger.wait() == 2
        assert "not a player of this arena" in stranger.out.text()
    finally:
        server.stop()


@pytest.mark.parametrize("frontends", [0, 2])
def test_a_client_killed_mid_game_loses_by_disconnect(tmp_path: Path, frontends: int) -> None:
    file = arena_file(
        tmp_path,
        players=("alice", "bob"),
        engines="",
        extra=f"disconnect_grace = 1.0\nfrontends = {frontends}",
    )
    server = Server(file)
    slow = f"slow={sys.executable} {BADBOT} slow --ms 300"
    try:
        with events(server.port) as stream:
            alice = client(server.port, "alice", "heuristic", tmp_path)
            bob = client(server.port, "bob", slow, tmp_path)
            for name, data in stream:  # bob has moved in a game: kill his client now
                if name == "move" and data["ply"] >= 3:
                    break
            bob.stop(signal.SIGKILL)
            lost = wait_games(stream, 1)[0]
        assert lost["termination"] == "disconnect", lost
        assert lost["winner"] == "alice"
        assert "did not come back within 1 s" in lost["reason"]
    finally:
        alice.stop()
        server.stop()


def test_garbage_and_a_flood_of_idle_connections_do_not_stop_play(tmp_path: Path) -> None:
    server = Server(
        arena_file(tmp_path, players=("alice", "bob"), extra="connections_per_address = 100")
    )
    idle: list[socket.socket] = []
    try:
        with events(server.port) as stream:
            alice = client(server.port, "alice", "heuristic", tmp_path)
            bob = client(server.port, "bob", "random", tmp_path)
            wait_games(stream, 2)
            for _ in range(150):  # more than one address may hold: the rest are closed
                s = socket.create_connection(("127.0.0.1", server.port))
                idle.append(s)
            for junk in (
                b"\x16\x03\x01\x02\x00garbage",
                b"GET / HTTP/1.1\r\n" + b"X" * 40000,
                b"\x00" * 1000,
            ):
                with socket.create_connection(("127.0.0.1", server.port)) as s:
                    s.sendall(junk)
            wait_games(stream, 4)  # play goes on
        closed = 0
        for s in idle:
            s.settimeout(5)
            try:
                closed += s.recv(1) == b""
            except (ConnectionResetError, TimeoutError):
                closed += 1
        assert closed >= 50  # those over the limit of 100 per address (the test's own too)
    finally:
        for s in idle:
            s.close()
        alice.stop()
        bob.stop()
        server.stop()
