"""What CGOS users expect of an arena, through the real server and client."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import trio
from arena_attack import arena_in_process
from arena_helpers import TOKENS

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
