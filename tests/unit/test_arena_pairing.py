"""The arena's pairing, played out on a hall whose pairs end in a random order."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from pathlib import Path

import trio
from arena_helpers import arena_file

from arbiter.arena.config import load_arena
from arbiter.arena.hall import VERSION_MOST, Hall, Participant, Session, identity, version_tag
from arbiter.engines.remote import Link
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
