"""The arena over time: dropped connections, a slow network, restarts, the live page."""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from arena_helpers import TOKENS, Proxy, Server, arena_file, client, events, wait_games
from browsers import open_chromium
from commands import invoke
from paths import BADBOT

from arbiter.results.store import Store

SLOW = f"slow={sys.executable} {BADBOT} slow --ms 150"


def stored(store: Path) -> list[tuple[str, int]]:
    """(game id, number) of every game in the store."""
    with Store.open_read(store) as s:
        return [
            (record["game_id"], number)
            for number, (record, _) in (
                (int(r["game_id"][1:7]) * 2 + int(r["game_id"][-1]) - 1, (r, v))
                for r, v in s.records(voids=False)
            )
        ]


@pytest.mark.parametrize("frontends", [0, 2])
def test_a_connection_that_drops_mid_game_resumes_and_the_game_goes_on(
    tmp_path: Path, frontends: int
) -> None:
    extra = f"frontends = {frontends}"
    server = Server(arena_file(tmp_path, players=("alice", "bob"), engines="", extra=extra))
    proxy = Proxy(server.port)
    alice = client(proxy.port, "alice", "heuristic", tmp_path)
    bob = client(server.port, "bob", SLOW, tmp_path)
    try:
        with events(server.port) as stream:
            for name, data in stream:
                if name == "move" and data["ply"] >= 4:
                    game = data["game"]
                    break
            proxy.cut()  # alice's connection drops mid-game
            alice.out.wait_for("reconnecting")
            alice.out.wait_for("resumed as alice")
            finished = wait_games(stream, 1, lambda g: g["game"] == game)[0]
        assert finished["termination"] in ("connection", "resign"), finished
        assert not finished["void"]
    finally:
        for p in (alice, bob):
            p.stop()
        proxy.close()
        server.stop()


def test_network_time_up_to_the_allowance_is_not_charged(tmp_path: Path) -> None:
    """Behind a reverse proxy that adds 60 ms each way, alice's moves are charged the
    wait less the pings' round trip (about 120 ms, at most the allowance); bob's, who
    connects directly on this machine, nothing to speak of (the kernel's round trip)."""
    server = Server(
        arena_file(
            tmp_path,
            players=("alice", "bob"),
            engines="",
            extra='latency_allowance = 0.25\ntrusted_proxies = ["127.0.0.1"]',
        )
    )
    proxy = Proxy(server.port, delay=0.06, forwarded_for="127.0.0.2")
    alice = client(proxy.port, "alice", "heuristic", tmp_path)
    bob = client(server.port, "bob", "random", tmp_path)
    try:
        with events(server.port) as stream:
            wait_games(stream, 2)
    finally:
        for p in (alice, bob):
            p.stop()
        proxy.close()
        server.stop()
    out = tmp_path / "games.jsonl"
    assert (
        invoke("arena", "export", str(tmp_path / "arena.toml"), "--records", str(out)).returncode
        == 0
    )
    records = [json.loads(line) for line in out.read_text().splitlines()][:2]
    for r in records:
        opening = r.get("opening", 0)
        # Seats alternate whatever the pie rule does: seat 1 moves at even plies.
        movers = [r["seat1"] if ply % 2 == 0 else r["seat2"] for ply in range(r["plies"])]
        charged = list(zip(movers, r["allowance_ms"], strict=True))[opening:]
        alice_free = [a for m, a in charged if m == "alice"]
        bob_free = [a for m, a in charged if m == "bob"]
        assert alice_free and all(100 <= a <= 250 for a in alice_free), alice_free
        assert all(a < 60 for a in bob_free), bob_free
        # what the client says its engine took is recorded for the remote movers
        assert any(ms >= 0 for ms in r["reported_ms"])


def test_the_server_killed_and_restarted_goes_on_while_clients_reconnect(tmp_path: Path) -> None:
    file = arena_file(tmp_path, players=("alice", "bob", "carol"))
    server = Server(file)
    port = server.port
    file.write_text(file.read_text().replace("127.0.0.1:0", f"127.0.0.1:{port}"))
    store = tmp_path / "test-arena.sqlite"
    clients = [
        client(port, "alice", "heuristic", tmp_path),
        client(port, "bob", SLOW, tmp_path),
        client(port, "carol", "random", tmp_path),
    ]
    try:
        with events(port) as stream:
            wait_games(stream, 6)
        server.stop(signal.SIGKILL)
        before = stored(store)
        assert len(before) >= 6
        for c in clients:
            c.out.wait_for("reconnecting")
        server = Server(file)
        assert server.port == port
        for c in clients:  # every client logs in again (each retries on its own clock)
            c.out.wait_for("logged in as", count=2)
        with events(port) as stream:
            wait_games(stream, 6)
        for c in clients:
            assert c.popen.poll() is None
    finally:
        for c in clients:
            c.stop()
        server.stop()
    after = stored(store)
    ids = [game_id for game_id, _ in after]
    assert len(ids) == len(set(ids)), "a game stored twice"
    assert set(before) <= set(after), "a game stored before the kill was lost"
    assert len(after) >= len(before) + 6
    numbers = [n for _, n in after]
    assert len(numbers) == len(set(numbers))


def test_stopping_the_server_stores_no_game_in_flight(tmp_path: Path) -> None:
    server = Server(arena_file(tmp_path, players=("alice", "bob"), engines=""))
    alice = client(server.port, "alice", SLOW, tmp_path)
    bob = client(server.port, "bob", SLOW, tmp_path)
    try:
        with events(server.port) as stream:
            wait_games(stream, 1)
            for name, data in stream:
                if name == "move" and data["ply"] >= 3:
                    in_flight = data["game"]
                    break
        assert server.stop() in (0, 130, 143)
        alice.out.wait_for("the arena is stopping")  # told, not cut off
    finally:
        alice.stop()
        bob.stop()
    games = stored(tmp_path / "test-arena.sqlite")
    assert in_flight not in {game_id for game_id, _ in games}
    with Store.open_read(tmp_path / "test-arena.sqlite") as s:
        assert s.void_count() == 0  # never stored half, not even as a void attempt


def test_several_anchors_are_held_and_open_registration_lets_new_names_in(tmp_path: Path) -> None:
    file = arena_file(
        tmp_path,
        players=(),
        engines='engines = ["random", "mc-fast"]\nanchors = { random = 0, mc-fast = 400 }',
        extra="open_registration = true",
    )
    server = Server(file)
    newcomer = client(server.port, "newcomer", "heuristic", tmp_path, token="n" * 20)
    try:
        with events(server.port) as stream:
            wait_games(stream, 8)
        short = client(server.port, "another", "random", tmp_path, token="short")
        assert short.wait() == 2
        assert "at least 16 characters" in short.out.text()
    finally:
        newcomer.stop()
        server.stop()
    status = invoke("arena", "status", str(file), "--json")
    assert status.returncode == 0, status.stderr
    board = {e["name"]: e for e in json.loads(status.stdout)["standings"]["engines"]}
    assert board["random"]["elo"] == 0 and board["mc-fast"]["elo"] == 400
    assert board["newcomer"]["games"] >= 8
    # The name is registered with its token: a restart keeps it, another token is refused.
    server = Server(file)
    try:
        thief = client(server.port, "newcomer", "random", tmp_path, token="x" * 20)
        assert thief.wait() == 2
        assert "wrong token for newcomer" in thief.out.text()
    finally:
        server.stop()


def test_the_live_page_updates_in_chromium_when_a_game_ends(tmp_path: Path) -> None:
    """An arena with rooms: the index links to the room's live page, which follows the
    games without a reload, each game in progress a small board that fills move by move;
    a game's number opens its own page (board, moves, downloads), which links to the list
    of all games; an engine's name on the leaderboard opens its page, with its rating
    plotted over time. The room's pages link relatively, under /room/NAME/."""
    driver: Any = open_chromium(tmp_path / "chromium")  # skips where there is none
    from selenium.webdriver.support.ui import WebDriverWait

    rooms = '[[room]]\nname = "atoll7"\n\n[[room]]\nname = "hex5"\nislands = 4\nsize = 5\n'
    server = Server(arena_file(tmp_path, players=("alice", "bob"), engines="", extra=rooms))
    alice = client(server.port, "alice", "heuristic", tmp_path, room="atoll7")
    bob = client(server.port, "bob", SLOW, tmp_path, room="atoll7")
    try:
        driver.get(f"http://127.0.0.1:{server.port}/")
        wait = WebDriverWait(driver, 60)
        driver.find_element("link text", "atoll7").click()
        wait.until(lambda d: d.current_url.endswith("/room/atoll7/"))
        wait.until(lambda d: d.find_element("id", "status").text.startswith("live"))
        # A game in progress as a board: a stone per move (the swap moves none).
        board = (
            "const s = document.querySelector('#playing svg.live-board');"
            " if (!s) return null;"
            " const row = s.closest('tr').querySelector('.moves').textContent.split(' ');"
            " return [Number(s.dataset.stones), s.querySelectorAll('circle.stone').length,"
            " row.filter(m => m && m !== 'swap').length,"
            " s.querySelectorAll('polygon.cell').length]"
        )
        stones = wait.until(lambda d: (b := d.execute_script(board)) and b[0] >= 3 and b)
        assert stones[0] == stones[1] == stones[2] and stones[3] > 30, stones
        first = int(driver.execute_script("return Number(document.body.dataset.games || 0)"))
        # No reload: the same document, its games counter and recent table move on.
        driver.execute_script("window.sameDocument = true;")
        wait.until(
            lambda d: (
                int(d.execute_script("return Number(document.body.dataset.games || 0)")) > first
            )
        )
        wait.until(lambda d: len(d.find_elements("css selector", "#recent tbody tr")) >= 1)
        assert driver.execute_script("return window.sameDocument === true")
        row = driver.find_element("css selector", "#recent tbody tr").text
        assert re.search(r"alice|bob", row)
        wait.until(lambda d: "alice" in d.find_element("id", "board").text)
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        # The game's own page, from its number: the board, its moves, its downloads.
        # (links are read by script: the tables are redrawn as events come, and an
        # element found a moment ago may be gone when it is clicked)
        game = driver.execute_script("return document.querySelector('#recent tbody a').href")
        driver.get(game)
        wait.until(lambda d: d.find_elements("css selector", "#moves li"))
        assert driver.find_elements("css selector", ".board svg")
        assert driver.find_element("id", "record").get_attribute("href").endswith(".jsonl")
        facts = driver.find_element("id", "facts").text
        assert "alice" in facts and "bob" in facts
        driver.find_element("link text", "all games").click()
        wait.until(lambda d: d.find_elements("css selector", "#games tbody tr"))
        # An engine's page from the leaderboard: its rating over time, plotted.
        driver.get(f"http://127.0.0.1:{server.port}/room/atoll7/")
        find = (
            "return [...document.querySelectorAll('#board a')]"
            ".find(a => a.textContent === 'alice')?.href"
        )
        driver.get(wait.until(lambda d: d.execute_script(find)))
        wait.until(lambda d: d.find_elements("css selector", "#rating polyline"))
    finally:
        driver.quit()
        alice.stop()
        bob.stop()
        server.stop()


def test_tokens_are_never_in_the_store_or_the_page(tmp_path: Path) -> None:
    server = Server(arena_file(tmp_path, players=("alice", "bob"), engines=""))
    alice = client(server.port, "alice", "random", tmp_path)
    bob = client(server.port, "bob", "random", tmp_path)
    try:
        with events(server.port) as stream:
            wait_games(stream, 2)
        pages = [
            server.get(p) for p in ("/", "/api/live", "/api/standings", "/api/games", "/report")
        ]
    finally:
        alice.stop()
        bob.stop()
        server.stop()
    data = (tmp_path / "test-arena.sqlite").read_bytes()
    for token in (TOKENS["alice"], TOKENS["bob"]):
        assert token.encode() not in data
        assert all(token not in json.dumps(p) for p in pages)
