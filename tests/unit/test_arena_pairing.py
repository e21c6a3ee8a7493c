"""The arena's pairing, played out on a hall whose pairs end in a random order."""

from __future__ import annotations

import itertools
import random
import time
from collections import defaultdict
from pathlib import Path

import pytest
import trio
import trio.testing
from arena_helpers import arena_file

from arbiter.arena import hall as hall_module
from arbiter.arena.config import load_arena
from arbiter.arena.hall import (
    PACE_FLOOR,
    PACE_STEP,
    VERSION_MOST,
    Hall,
    Participant,
    Seats,
    Session,
    identity,
    version_tag,
)
from arbiter.engines.remote import Link
from arbiter.games.pauses import PERIOD, heartbeat
from arbiter.results.store import Store

REMOTE = ("alice", "bob", "carol", "dave")


def connected(name: str) -> Session:
    link = Link(name, f"session-of-{name}", 10.0)
    link.ws = object()  # type: ignore[assignment]  # connected: nothing is sent in pairing
    return Session(link, None)  # type: ignore[arg-type]


async def test_engines_that_finish_together_are_not_paired_again_at_once(tmp_path: Path) -> None:
    """Four remote engines and the server's anchor, pairs ending in a random order: each
    engine's opponents never repeat back to back (they did whenever a pair ended while
    the others were in play: 'one pairing played 515 pairs in a row'), and every pair
    that may meet meets, about as often as the others."""
    arena = load_arena(arena_file(tmp_path, players=REMOTE))
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            hall.rng.seed(4)
            for name in REMOTE:
                hall.participants[name] = Participant(name, False, sessions=[connected(name)])
            order = random.Random(44)
            in_play = []
            met: dict[str, list[str]] = defaultdict(list)
            for _ in range(400):
                for a, b in hall.pairs():
                    in_play.append(hall.begin_pair(a, b))
                    met[a.name].append(b.name)
                    met[b.name].append(a.name)
                assert in_play, "nobody plays: the pairing waits for ever"
                hall.end_pair(in_play.pop(order.randrange(len(in_play))))
    for name, opponents in met.items():
        repeats = [x for x, y in itertools.pairwise(opponents) if x == y]
        assert not repeats, (name, opponents[:40])
    counts = {
        frozenset(pair): sum(o == pair[1] for o in met[pair[0]])
        for pair in itertools.combinations((*REMOTE, "random"), 2)
    }
    assert min(counts.values()) >= max(counts.values()) / 4, counts


async def test_two_engines_alone_play_each_other_again(tmp_path: Path) -> None:
    """With nobody else to play, waiting would stop the arena: they meet again."""
    arena = load_arena(arena_file(tmp_path, players=("alice",)))
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            hall.participants["alice"] = Participant("alice", False, sessions=[connected("alice")])
            for _ in range(3):
                ((a, b),) = hall.pairs()
                assert {a.name, b.name} == {"alice", "random"}
                hall.end_pair(hall.begin_pair(a, b))


async def test_in_rounds_nobody_meets_its_last_opponent_while_a_third_is_free(
    tmp_path: Path,
) -> None:
    """Three engines free at once (as at a round's start), alice and carol last played
    each other and bob last played alice: whatever the order, bob plays carol and alice
    sits out; it once took bob as a fallback, his last opponent."""
    names = ("alice", "bob", "carol")
    arena = load_arena(arena_file(tmp_path, players=names, engines=""))
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            for name in names:
                hall.participants[name] = Participant(name, False, sessions=[connected(name)])
            last = {"alice": "carol", "carol": "alice", "bob": "alice"}
            for seed in range(40):
                hall.rng.seed(seed)
                for name, opponent in last.items():
                    hall.participants[name].last_opponent = opponent
                ((a, b),) = hall.pairs()
                assert {a.name, b.name} == {"bob", "carol"}, seed


async def test_one_guest_among_the_servers_engines_plays_them_in_turn(tmp_path: Path) -> None:
    """The server's own engines never meet, and each has just played the guest: the
    guest must still meet one of them (it once waited for a fresh opponent that could
    never come, and the arena stopped), and it takes them in turn."""
    arena = load_arena(
        arena_file(
            tmp_path,
            players=("alice",),
            engines='engines = ["random", "mc-fast"]\nanchors = { random = 0, mc-fast = 400 }',
        )
    )
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            hall.participants["alice"] = Participant("alice", False, sessions=[connected("alice")])
            met = []
            for seed in range(30):
                hall.rng.seed(seed)
                pairs = hall.pairs()
                assert len(pairs) == 1, (seed, met)
                ((a, b),) = pairs
                met.append(b.name if a.name == "alice" else a.name)
                hall.end_pair(hall.begin_pair(a, b))
    assert not [x for x, y in itertools.pairwise(met) if x == y], met


def test_a_new_version_is_a_new_identity_its_text_kept_plain_and_short() -> None:
    assert identity("alice", "1.0", first="1.0") == "alice"
    assert identity("alice", "", first="1.0") == "alice"  # says none: the name
    assert identity("alice", "2.0-rc1", first="1.0") == "alice@2.0-rc1"
    assert version_tag(" 2.0 beta\x1b[31m ") == "2.0_beta__31m"
    assert version_tag("2.0ß") == "2.0_"  # no look-alike letter gets in
    assert len(version_tag("9" * 500)) == VERSION_MOST


async def test_the_nearest_in_rating_is_taken_among_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Engines in twos, each two far from the rest: whichever engine picks first, its
    nearest is its twin, so every pair is a twin pair (the walk out from each engine's
    place in the ranked list finds what measuring against every engine found)."""
    monkeypatch.setattr(hall_module, "PAIRING_NOISE", 0.0)
    arena = load_arena(arena_file(tmp_path, players=("alice",), engines=""))
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            for k in range(300):
                name = f"e{k:03d}"
                rating = (k // 2) * 1000.0 + (k % 2) * 10.0
                hall.participants[name] = Participant(
                    name, False, rating=rating, sessions=[connected(name)]
                )
            for seed in range(3):
                hall.rng.seed(seed)
                pairs = hall.pairs()
                assert len(pairs) == 150
                assert all(int(a.name[1:]) // 2 == int(b.name[1:]) // 2 for a, b in pairs)
                nursery.cancel_scope.cancel()


class Beat:
    """A heartbeat the test moves: how far behind the loop is, and its beats."""

    def __init__(self) -> None:
        self.lag = 0.0
        self._beats = trio.lowlevel.ParkingLot()

    async def next_beat(self) -> None:
        await self._beats.park()

    async def tick(self, lag: float) -> None:
        self.lag = lag
        self._beats.unpark_all()
        await trio.testing.wait_all_tasks_blocked()


def pairing_alone(hall: Hall, beat: Beat, engines: int) -> list[Seats]:
    """`engines` connected remote engines in `hall`, its heartbeat `beat`; its pairs
    begin but play nothing: the list they are added to, as they start."""
    hall.beat = beat  # type: ignore[assignment]
    for k in range(engines):
        name = f"e{k:02d}"
        hall.participants[name] = Participant(name, False, sessions=[connected(name)])
    started: list[Seats] = []
    hall._start_pair = lambda a, b, n: started.append(hall.begin_pair(a, b))  # type: ignore[method-assign]
    return started


async def test_a_server_behind_holds_back_new_games_until_it_catches_up(tmp_path: Path) -> None:
    """Eighty free engines: pairs start up to the cap; while the loop is behind the cap
    falls (never under the floor) and no pair starts however many engines are free (a
    game started then would make every move of every game wait longer); while it keeps
    up and the pairs in play reach the cap, the cap grows a step a heartbeat."""
    arena = load_arena(arena_file(tmp_path, players=("alice",), engines=""))
    assert arena.max_loop_lag == 0.02  # the default
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            beat = Beat()
            started = pairing_alone(hall, beat, 80)
            nursery.start_soon(hall.run)
            await trio.testing.wait_all_tasks_blocked()
            first = 2 * PACE_FLOOR
            assert len(started) == hall.pairs_in_play == hall.cap == first
            await beat.tick(lag=1.0)  # behind: the cap falls by a tenth of those in play
            assert hall.cap == first - 1 and hall.held == 1
            hall.end_pair(started[0])
            hall.end_pair(started[1])
            await trio.testing.wait_all_tasks_blocked()
            assert hall.pairs_in_play == hall.cap == first - 1, "two ended: one started"
            for _ in range(20):
                await beat.tick(lag=1.0)
            assert hall.cap == PACE_FLOOR, "never under the floor"
            assert hall.pairs_in_play == first - 1, "none started while behind"
            for seats in started[2 : 2 + first - PACE_FLOOR]:
                hall.end_pair(seats)  # one under the floor: a pair starts, lag or not
            await beat.tick(lag=1.0)
            assert hall.pairs_in_play == PACE_FLOOR and len(started) == first + 2
            await beat.tick(lag=0.015)  # neither behind nor well ahead: the cap stays
            assert hall.cap == PACE_FLOOR and hall.pairs_in_play == PACE_FLOOR
            for k in range(1, 6):  # keeping up, the pairs in play at the cap: it grows
                await beat.tick(lag=0.0)
                assert hall.cap == hall.pairs_in_play == PACE_FLOOR + k * PACE_STEP
            nursery.cancel_scope.cancel()


async def test_no_pacing_starts_every_free_pair_at_once(tmp_path: Path) -> None:
    arena = load_arena(arena_file(tmp_path, players=("alice",), engines="max_loop_lag = 0"))
    store, _ = Store.open_for_run(arena.output, origin="test")
    with store:
        async with trio.open_nursery() as nursery:
            hall = Hall(arena, store, nursery)
            beat = Beat()
            beat.lag = 5.0
            started = pairing_alone(hall, beat, 80)
            nursery.start_soon(hall.run)
            await trio.testing.wait_all_tasks_blocked()
            assert len(started) == 40 and hall.cap is None
            nursery.cancel_scope.cancel()


async def test_the_heartbeat_says_how_far_the_loop_is_behind() -> None:
    """A loop blocked for 0.3 s: the next beat wakes at least 0.25 s late (its due time
    fell at most one period into the block), and the lag is the pacing's input."""
    beat = heartbeat()
    await beat.next_beat()
    time.sleep(0.3)  # noqa: ASYNC251  # the loop blocked, as a long synchronous step blocks it
    await beat.next_beat()
    assert beat.lag >= 0.3 - PERIOD
    await beat.next_beat()
    await beat.next_beat()
