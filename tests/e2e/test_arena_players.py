"""Players managed while the arena runs, through the real server, clients and command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from arena_attack import arena_in_process, refusal
from arena_helpers import TOKENS
from commands import invoke
from inline import inline_engine

from arbiter.arena import roster
from arbiter.arena.client import Client
from arbiter.arena.config import hash_token
from arbiter.cli.options import known_engines
from arbiter.engines.config import resolve_engine

NEW_VERSION = """
class Bot(sk.Bot):
    version = "9.9 <b>"
sys.exit(Bot().run())
"""


async def test_players_are_added_banned_unbanned_and_removed_while_games_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice and bob are the arena file's; carol is added while it runs and plays; alice,
    banned in a game, finishes it (stored, not void) and is then refused; unbanned, she
    plays again; carol removed is refused; carol added again with a new version of her
    engine is rated as `carol@VERSION`, apart from the carol before."""
    monkeypatch.setattr(roster, "WATCH_EVERY", 0.05)
    spec = resolve_engine("random", known_engines(None))
    seen: list[tuple[str, Any]] = []
    news = trio.lowlevel.ParkingLot()

    async def until(check: Any, start: int = 0) -> Any:
        """The first event from `start` on that `check` accepts, waiting for it."""
        with trio.fail_after(60):
            while True:
                for event in seen[start:]:
                    if check(*event):
                        return event[1]
                await news.park()

    ended: dict[str, str] = {}

    async def play(name: str, engine: Any = spec) -> None:
        client = Client(url, name, TOKENS[name], engine, lambda line: None)
        reason = await refusal(client)
        if reason is not None:
            seen.append(("refused", {"name": name, "reason": reason}))
            news.unpark_all()

    async with (
        arena_in_process(tmp_path, monkeypatch, players=("alice", "bob"), engines="") as arena,
        trio.open_nursery() as nursery,
    ):
        hall = arena.server.hall
        publish = hall.publish

        def spy(event: str, data: Any) -> None:
            publish(event, data)
            seen.append((event, dict(data)))
            news.unpark_all()

        hall.publish = spy
        url = arena.url
        file = str(tmp_path / "arena.toml")
        before = await trio.Path(file).read_bytes()

        async def player(*args: str) -> None:
            """The command, then the server's taking the change (its `players` event)."""
            mark = len(seen)
            done = invoke("arena", "player", *args[:1], file, *args[1:])
            assert done.returncode == 0, done.stderr
            ended[args[0] + " " + args[1]] = done.stderr
            await until(lambda e, d: e == "players", mark)

        def plays(name: str) -> Any:
            return lambda e, d: e == "game" and name in (d["seat1"], d["seat2"]) and not d["void"]

        nursery.start_soon(play, "alice")
        nursery.start_soon(play, "bob")
        await player("add", "carol", "--token-hash", hash_token(TOKENS["carol"]))
        nursery.start_soon(play, "carol")
        await until(plays("carol"))

        # Banned mid-game: the game goes on to its end and counts; then she is refused.
        seen.clear()
        started = await until(lambda e, d: e == "start" and "alice" in (d["seat1"], d["seat2"]))
        await player("ban", "alice", "--reason", "a test")
        refused = await until(lambda e, d: e == "refused" and d["name"] == "alice")
        assert "alice is banned from this arena: a test" in refused["reason"]
        finished = [d for e, d in seen if e == "game" and d["game"] == started["game"]]
        assert finished and not finished[0]["void"], finished
        assert finished[0]["termination"] != "disconnect"
        position = [d for _, d in seen]
        assert position.index(finished[0]) < position.index(refused)
        # No game of hers starts once she is banned, but the others play on.
        seen.clear()
        await until(plays("carol"))
        assert not [d for e, d in seen if e == "start" and "alice" in (d["seat1"], d["seat2"])]

        await player("unban", "alice")
        nursery.start_soon(play, "alice")
        await until(plays("alice"))

        await player("remove", "carol")
        refused = await until(lambda e, d: e == "refused" and d["name"] == "carol")
        assert "carol is no longer a player of this arena" in refused["reason"]

        # A new version of carol's engine: a new rating identity, escaped and capped.
        await player("add", "carol", "--token-hash", hash_token(TOKENS["carol"]))
        nursery.start_soon(play, "carol", inline_engine("carol-9", NEW_VERSION))
        game = await until(plays("carol@9.9__b_"))
        assert "carol" not in (game["seat1"], game["seat2"])
        here = {e["name"]: e for e in arena.server.hall.connected()}
        assert here["carol@9.9__b_"]["owner"] == "carol"
        assert here["carol@9.9__b_"]["version"] == "9.9 <b>"  # as text, never markup
        nursery.cancel_scope.cancel()
    assert await trio.Path(file).read_bytes() == before  # the arena file is the operator's
    assert "may log in from now on" in ended["add carol"]
