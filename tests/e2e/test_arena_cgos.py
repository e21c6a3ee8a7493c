"""What CGOS users expect of an arena, through the real server and client."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import trio
from arena_attack import arena_in_process, get
from arena_helpers import TOKENS

from arbiter.arena import web
from arbiter.arena.client import Client
from arbiter.cli.options import known_engines
from arbiter.engines.config import resolve_engine


async def test_rounds_pair_every_free_engine_on_a_schedule_without_rematches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice, bob and carol (real clients in this process), a round a second:
    games start only in rounds, each engine at most once a round, never against the
    opponent of its last pair, until every two have met (once all three are here)."""
    spec = resolve_engine("random", known_engines(None))
    rounds: list[dict[str, Any]] = []
    starts: list[dict[str, Any]] = []
    everyone_met = trio.Event()
    async with (
        arena_in_process(
            tmp_path,
            monkeypatch,
            players=("alice", "bob", "carol"),
            engines="",
            extra="round_seconds = 1",
        ) as arena,
        trio.open_nursery() as nursery,
    ):
        hall = arena.server.hall
        publish = hall.publish

        def spy(event: str, data: Any) -> None:
            publish(event, data)
            here = [p for p in hall.participants.values() if p.present]
            if everyone_met.is_set():
                return
            if len(here) < 3:  # two alone play each other again: nobody else to play
                rounds.clear()
                starts.clear()
            elif event == "round":
                rounds.append(dict(data))
                met = {frozenset(pair) for r in rounds for pair in r["pairs"]}
                if len(met) == 3:
                    everyone_met.set()
            elif event == "start":
                starts.append(dict(data))

        hall.publish = spy
        url = f"ws://127.0.0.1:{arena.port}/engine"
        for name in ("alice", "bob", "carol"):
            client = Client(url, name, TOKENS[name], spec, lambda line: None)
            nursery.start_soon(client.run)
        with trio.fail_after(60):
            await everyone_met.wait()
        assert hall.cap is None, "rounds start their pairs together: no pacing cap"
        nursery.cancel_scope.cancel()
    numbers = [r["round"] for r in rounds]
    assert numbers == sorted(set(numbers))
    for r in rounds:
        names = [n for pair in r["pairs"] for n in pair]
        assert len(names) == len(set(names)), r  # once a round
    # Each game started in an announced round, its two engines the round's pair.
    announced = {(r["round"], frozenset(p)) for r in rounds for p in r["pairs"]}
    assert starts and all(
        (s["round"], frozenset((s["seat1"], s["seat2"]))) in announced for s in starts
    )
    for name in ("alice", "bob", "carol"):
        opponents = [
            next(n for n in pair if n != name)
            for r in rounds
            for pair in r["pairs"]
            if name in pair
        ]
        assert all(x != y for x, y in itertools.pairwise(opponents)), (name, opponents)


# Slow (the e2e default): the fast run keeps the arena's break tests; this one plays
# games for its pages and takes about 4 s.
async def test_game_pages_downloads_the_paged_list_and_rating_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Hex arena: alice (the real client, in this process) plays the anchor a pair,
    then stops;
    each game's page shows its players, result and moves, its record and SGF download,
    the games list, one game a page here, goes back to the first, and each engine's
    rating after each fit is in the API and plotted on its page."""
    monkeypatch.setattr(web, "LIST_PAGE", 1)
    monkeypatch.setattr(web, "STANDINGS_EVERY", 0.1)  # fit as soon as games are stored
    spec = resolve_engine("random", known_engines(None))
    async with (
        arena_in_process(tmp_path, monkeypatch, players=("alice",), extra="islands = 4") as arena,
        trio.open_nursery() as nursery,
    ):
        hall = arena.server.hall
        two = trio.Event()
        publish = hall.publish

        rated = trio.Event()

        def spy(event: str, data: Any) -> None:
            publish(event, data)
            if event == "game" and data["number"] == 3:
                two.set()

        hall.publish = spy
        history = arena.server.routes["/api/history"].__self__.history  # the site's
        add = history.add

        def fitted(games: int, ratings: Any) -> None:
            add(games, ratings)
            if games >= 2 and "alice" in ratings:
                rated.set()

        monkeypatch.setattr(history, "add", fitted)
        url = f"ws://127.0.0.1:{arena.port}/engine"
        alice = Client(url, "alice", TOKENS["alice"], spec, lambda line: None)
        async with trio.open_nursery() as playing:
            playing.start_soon(alice.run)
            with trio.fail_after(60):
                await two.wait()
            playing.cancel_scope.cancel()  # a game in flight waits out its grace: unstored
        ((_, record),) = hall.store.recent_games(1, 3)
        status, headers, page = await get(arena.port, "/game/2")
        assert status.startswith("HTTP/1.1 200") and "text/html" in headers["content-type"]
        text = page.decode()
        assert "<svg" in text and record.seat1 in text and record.termination.value in text
        assert all(f"<li>{move}</li>" in text for move in record.moves)
        status, headers, body = await get(arena.port, "/game/2.jsonl")
        assert "attachment" in headers["content-disposition"]
        assert json.loads(body) == json.loads(record.dumps())
        status, headers, sgf = await get(arena.port, "/game/2.sgf")
        assert sgf.startswith(b"(;FF[4]") and b"GM[11]" in sgf and b"SZ[7]" in sgf
        # The list, one game a page: the newest, then older, to the first.
        seen, target = [], "/games"
        while target:
            status, _, page = await get(arena.port, target)
            seen += re.findall(r'href="game/(\d+)"', page.decode())  # relative: rooms too
            older = re.search(r'id=older href="([^"]+)"', page.decode())
            target = "/" + older.group(1) if older else ""
        assert seen == ["3", "2"]
        assert (await get(arena.port, "/game/99"))[0].startswith("HTTP/1.1 404")
        assert (await get(arena.port, "/game/x.sgf"))[0].startswith("HTTP/1.1 404")
        assert (await get(arena.port, "/games?before=x"))[0].startswith("HTTP/1.1 400")
        # Rating history: a point per fit, in the API and as a plot on the engine's page.
        with trio.fail_after(60):
            await rated.wait()
        points = json.loads((await get(arena.port, "/api/history"))[2])["engines"]
        assert points["alice"] and points["alice"][-1][0] == 2
        assert points["random"][-1] == [2.0, 0.0]  # the anchor, held, after both games
        status, _, page = await get(arena.port, "/engine/alice")
        assert status.startswith("HTTP/1.1 200") and "<polyline" in page.decode()
        assert (await get(arena.port, "/engine/nobody"))[0].startswith("HTTP/1.1 404")
        nursery.cancel_scope.cancel()
