"""The arena's hall: who is here, who plays whom, and every game into the store.

Engines come and go: a remote engine is here while its client is logged in (a `Link`),
an engine the server runs itself (`[[engine]]`) is always here. Whenever two engines
are idle they are paired, close ratings first with some randomness (as CGOS pairs), and
play a seat-swapped pair of games from one fresh opening; then both are idle again. Two
of the server's own engines never play each other: they are there to play the remote
engines (anchors, usually), and their games against each other would only spend CPU.

Everything after the players is the tournaments' code: the referee plays the game, the
store keeps it (once, in one transaction, after it ended), the ratings are the joint fit
over the whole store with the anchors held at their ratings. A game in flight when the
server stops is never stored: it is void, and the next start goes on from the store.
"""

from __future__ import annotations

import bisect
import itertools
import json
import logging
import math
import random
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from arbiter.arena.config import Arena
from arbiter.engines.player import Player
from arbiter.engines.process import Deadlines, Engine, EngineInfo, start_engine
from arbiter.engines.remote import Link, RemotePlayer
from arbiter.errors import EngineError, StoreError
from arbiter.executors.jobs import machine
from arbiter.games.pauses import Heartbeat, heartbeat
from arbiter.games.referee import GameSpec, Referee, RefereeConfig
from arbiter.results.elo import expected_score
from arbiter.results.records import GameRecord
from arbiter.results.store import EngineEntry, Store
from arbiter.rules import Variant
from arbiter.runs.schedule import derive, random_opening
from arbiter.text import escape

log = logging.getLogger(__name__)

RATING_PULL = 16.0  # the Elo step per game of the running estimate that pairing uses
PAIRING_NOISE = 100.0  # Elo of randomness in who is close to whom
RECENT = 50  # finished games the hall remembers for the live page
REST_FIRST = 5.0  # seconds a server's engine that failed to start waits, doubling
REST_MOST = 300.0
VERSION_MOST = 24  # characters of an engine's version kept in its rating identity
VERSIONS = "arena_versions"  # the store's note of each name's first version
PACE_FLOOR = 8  # pairs in play that the pacing never holds back (Hall._pace)
PACE_STEP = 2  # pairs the cap grows by a heartbeat while the server keeps up


def version_tag(version: str) -> str:
    """An engine's `version` answer as part of a name: letters, digits and `._+-` of
    ASCII kept (anything else, a space or a look-alike letter, becomes `_`), capped."""
    ok = "._+-"
    kept = "".join(c if c.isascii() and (c.isalnum() or c in ok) else "_" for c in version.strip())
    return kept[:VERSION_MOST]


def identity(name: str, version: str, first: str) -> str:
    """The rating identity of `name`'s engine at `version`: the name for the version it
    first logged in with (or one that says none), `NAME@VERSION` for any other, as a CGOS
    author names each version apart, so that a new version starts its own rating."""
    tag = version_tag(version)
    return name if not tag or tag == first else f"{name}@{tag}"


@dataclass(frozen=True)
class ArenaGame:
    """One game as the store keys it (the `Scheduled` of a tournament's game)."""

    game_id: str
    number: int
    round: int
    pair_key: str
    engines: tuple[str, str]
    opening: tuple[str, ...]


@dataclass
class Session:
    """One remote engine process, logged in: it plays one game at a time."""

    link: Link
    player: RemotePlayer
    playing: bool = False
    leaving: str = ""  # why it is closed once its game in play ends (banned, removed)

    @property
    def usable(self) -> bool:
        return self.link.dead is None and self.link.connected


@dataclass
class Participant:
    """An engine of the arena, remote or the server's own. A remote engine whose entry
    allows several games at once has a session per game (`arena connect --sessions`)."""

    name: str  # its rating identity: the login name, with the version after a first
    local: bool
    owner: str = ""  # the name it logs in as (a remote engine's)
    busy: int = 0  # pairs in play
    rating: float = 0.0  # the running estimate pairing uses (the store's fit is the truth)
    sessions: list[Session] = field(default_factory=list)
    engine: Engine | None = None  # a local engine's process, kept warm between games
    info: EngineInfo = field(default_factory=EngineInfo)
    last_opponent: str = ""
    resting_until: float = 0.0  # a local engine that failed to start waits till then
    failures: int = 0

    @property
    def present(self) -> bool:
        return self.local or any(s.usable for s in self.sessions)

    @property
    def idle(self) -> bool:
        if self.local:
            return self.busy == 0 and trio.current_time() >= self.resting_until
        return any(s.usable and not s.playing for s in self.sessions)

    def claim(self) -> Session | None:
        """A free session for a pair (None for the server's own engine)."""
        if self.local:
            return None
        session = next(s for s in self.sessions if s.usable and not s.playing)
        session.playing = True
        return session


@dataclass
class LiveGame:
    """A game in progress, as the live page shows it."""

    game_id: str
    seat1: str
    seat2: str
    size: int
    islands: int
    moves: list[str] = field(default_factory=list)


Seats = tuple[tuple[Participant, Session | None], ...]  # a pair's engines, each with its session
Publish = Callable[[str, Mapping[str, Any]], None]  # event name, JSON-able data


class Hall:
    """The arena's engines and games (module docstring)."""

    def __init__(
        self, arena: Arena, store: Store, nursery: trio.Nursery, publish: Publish | None = None
    ) -> None:
        self.arena = arena
        self.store = store
        self.nursery = nursery
        self.publish = publish or (lambda event, data: None)
        self.deadlines = Deadlines(command=arena.command_timeout)
        self.referee = Referee(RefereeConfig(margin=arena.margin, adjudicate=arena.adjudicate))
        self.participants: dict[str, Participant] = {}
        self.live: dict[str, LiveGame] = {}
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.rng = random.Random()
        self._wake = trio.lowlevel.ParkingLot()
        self._dirty = True
        self._registered: set[str] = set(store.engine_definitions())
        self.versions: dict[str, str] = _versions(store.meta(VERSIONS))
        self.identities: dict[str, set[str]] = {}  # a login name's rating identities
        # Why a name may not play (banned, removed), or None: the server's roster.
        self.barred: Callable[[str], str | None] = lambda name: None
        self.sent_off: weakref.WeakSet[Link] = weakref.WeakSet()  # closed for good (4001)
        self.games_played = 0
        self.pairs_in_play = 0
        self.beat: Heartbeat = heartbeat()  # how far the loop is behind (the pacing)
        self.held = 0  # heartbeats the server was behind and cut the cap (/api/live)
        self.cap: int | None = 2 * PACE_FLOOR  # pairs that may play at once (Hall._pace)
        self.next_pair = store.last_number() // 2 + 1  # game numbers 2n and 2n + 1
        anchors = arena.anchors
        self.start_rating = sum(anchors.values()) / len(anchors) if anchors else 0.0
        for name in arena.engines:
            self.participants[name] = Participant(
                name, local=True, rating=anchors.get(name, self.start_rating)
            )
        self._register(list(arena.engines))

    # ------------------------------------------------------------------ engines

    def _register(self, names: list[str]) -> None:
        """Add engines the store has not seen (a remote engine when it first plays)."""
        new = [n for n in names if n not in self._registered]
        if not new:
            return
        entries = {}
        for name in new:
            if name in self.arena.engines:
                spec = self.arena.engines[name]
                definition = dict(self.arena.engine_conditions.get(name, {}))
                entries[name] = EngineEntry(definition, spec.argv)
            else:
                entries[name] = EngineEntry({"remote": True}, ())
        self.store.begin(
            self.arena.name, self.arena.conditions(), {"arena": str(self.arena.path)}, entries
        )
        self._registered.update(new)

    def has_played(self, name: str) -> bool:
        """Whether `name` has been paired in this arena (its store knows it)."""
        return name in self._registered

    def seed_ratings(self, ratings: Mapping[str, float]) -> None:
        for name, elo in ratings.items():
            if name in self.participants:
                self.participants[name].rating = elo

    def arrived(self, name: str, link: Link, player: RemotePlayer, info: EngineInfo) -> None:
        """A remote engine logged in as `name` and passed its handshake: it plays under
        its rating identity (`identity`), a new one for a new version."""
        if name not in self.versions:
            self.versions[name] = version_tag(info.version)
            self.store.remember(VERSIONS, json.dumps(self.versions, sort_keys=True))
        who = identity(name, info.version, self.versions[name])
        player.name = who
        p = self.participants.get(who)
        if p is None:
            start = self.arena.anchors.get(who, self.start_rating)
            p = self.participants[who] = Participant(who, local=False, owner=name, rating=start)
        self.identities.setdefault(name, set()).add(who)
        p.sessions = [s for s in p.sessions if s.link.dead is None]
        session = Session(link, player)
        p.sessions.append(session)
        p.info = info
        log.info(
            "%s logged in from %s (%s %s)",
            who,
            link.address,
            escape(info.name),
            escape(info.version),
        )
        self.publish("engine", {"name": who, "connected": True})
        why = self.barred(name)
        if why is not None:  # banned while its handshake ran
            self._send_off(session, why)
        self.changed()

    def left(self, name: str, link: Link) -> None:
        """A remote engine's session ended (its games in flight end by themselves)."""
        for who in self.identities.get(name, ()):
            p = self.participants[who]
            if any(s.link is link for s in p.sessions):
                p.sessions = [s for s in p.sessions if s.link is not link or s.playing]
                self.publish("engine", {"name": who, "connected": p.present})
        self.changed()

    def playing(self, link: Link) -> bool:
        """Whether the session of `link` is in a game."""
        return any(
            s.link is link and s.playing
            for who in self.identities.get(link.name, ())
            for s in self.participants[who].sessions
        )

    def send_off(self, name: str, why: str) -> None:
        """`name` may play no more (`barred`): each session of it is closed, an idle one
        now, one in a game once its games in play end (they count: nothing is voided)."""
        for who in self.identities.get(name, ()):
            for session in list(self.participants[who].sessions):
                self._send_off(session, why)
        self.changed()

    def _send_off(self, session: Session, why: str) -> None:
        session.leaving = why
        if not session.playing:
            self.sent_off.add(session.link)
            session.link.kill(why)

    def changed(self) -> None:
        """Something that pairing depends on changed: look again."""
        self._dirty = True
        self._wake.unpark_all()

    def connected(self) -> list[dict[str, Any]]:
        """Who is here, for the live page: names are identities; nothing an engine said
        goes out unescaped."""
        out = []
        for p in sorted(self.participants.values(), key=lambda p: p.name):
            if not p.present:
                continue
            out.append(
                {
                    "name": p.name,
                    "owner": p.owner or p.name,
                    "remote": not p.local,
                    "playing": p.busy,
                    "sessions": sum(s.usable for s in p.sessions),
                    "engine": escape(p.info.name),
                    "version": escape(p.info.version),
                    "rating": round(p.rating),
                }
            )
        return out

    # ------------------------------------------------------------------ pairing

    async def run(self) -> None:
        """Pair engines for as long as the arena runs: as soon as two are free, or in
        rounds (`round_seconds`)."""
        if self.arena.round_seconds > 0:
            self.cap = None  # the schedule is the pace
            await self._rounds(self.arena.round_seconds)
        if self.arena.max_loop_lag > 0:
            self.nursery.start_soon(self._pace, self.arena.max_loop_lag)
        else:
            self.cap = None
        while True:
            if not self._dirty:
                await self._wake.park()
            self._dirty = False
            most = None if self.cap is None else self.cap - self.pairs_in_play
            if most is not None and most <= 0:
                continue  # a game's end, or the pace, says when
            for a, b in self.pairs(most):
                self._start_pair(a, b, self.next_pair)

    async def _pace(self, target: float) -> None:
        """Keep the pairs in play (`cap`) where the server keeps up with them.

        Engines that answer at once can keep the server's loop busy without end: past a
        point every further game only lengthens the queue that every move of every game
        waits in, and that wait falls between a command and its answer, where the
        engines' clocks and the network figures carry it. So the pairs that may play at
        once are capped: the cap grows by `PACE_STEP` a heartbeat while the pairs in play
        reach it and the loop is less than half of `max_loop_lag` behind, and falls by a
        tenth of the pairs in play each heartbeat it is more than `max_loop_lag` behind
        (games in play are never stopped: fewer start as they end). Free engines wait
        to be paired meanwhile, which charges nobody. The cap is never under
        `PACE_FLOOR`, whatever the lag: a server on a host busy with other work still
        plays. Engines that think for a second a move meet the cap only when many arrive
        at once: the loop is idle between their answers, so it grows as they need."""
        assert self.cap is not None
        while True:
            await self.beat.next_beat()
            lag, playing = self.beat.lag, self.pairs_in_play
            if lag > target:
                self.held += 1
                self.cap = max(PACE_FLOOR, min(self.cap, playing) - max(1, playing // 10))
            elif lag <= target / 2 and playing >= self.cap - PACE_STEP:
                self.cap += PACE_STEP
                self.changed()

    async def _rounds(self, every: float) -> None:
        """A round every `every` seconds, as CGOS plays: each engine free when it starts
        is paired then (one still playing sits it out), and nothing starts between
        rounds, however quick the engines. A round is numbered by its first pair, so
        that the numbers go on across restarts without a count of their own."""
        began = trio.current_time()
        for k in itertools.count(1):
            number = self.next_pair
            pairs = self.pairs()
            for a, b in pairs:
                self._start_pair(a, b, number)
            if pairs:
                names = [[a.name, b.name] for a, b in pairs]
                self.publish("round", {"round": number, "pairs": names})
            await trio.sleep_until(began + k * every)

    def _start_pair(self, a: Participant, b: Participant, round_number: int) -> None:
        number = self.next_pair
        self.next_pair += 1
        self.nursery.start_soon(self._play_pair, self.begin_pair(a, b), number, round_number)

    def begin_pair(self, a: Participant, b: Participant) -> Seats:
        """`a` and `b` are busy with each other from now on."""
        self.pairs_in_play += 1
        a.busy += 1
        b.busy += 1
        a.last_opponent, b.last_opponent = b.name, a.name
        return ((a, a.claim()), (b, b.claim()))

    def end_pair(self, seats: Seats) -> None:
        """The pair of `seats` is over: its engines are free again."""
        self.pairs_in_play -= 1
        for p, session in seats:
            p.busy -= 1
            if session is not None:
                session.playing = False
                if session.leaving:
                    self._send_off(session, session.leaving)
                if session.link.dead is not None:
                    p.sessions = [s for s in p.sessions if s is not session]
        self.changed()

    def pairs(self, most: int | None = None) -> list[tuple[Participant, Participant]]:
        """Idle engines in pairs, as CGOS pairs them: in a random order, each takes the
        free engine nearest in rating (with some noise) that it has not just played
        (whichever of the two played another since). One with no such engine free waits
        while one it has not just played is in a game (or two engines that finish
        together would meet again and again while the rest of the field meet only each
        other); when none is, it meets one it has just played, or the arena would stop
        (two engines alone, or one guest among the server's own engines).
        Two of the server's own engines never meet. With `most`, at most that many pairs
        (what the pacing's cap leaves); the rest are paired on a later call."""
        idle: list[Participant] = []
        for p in self.participants.values():  # a name once per free session
            free = 1 if p.local else sum(s.usable and not s.playing for s in p.sessions)
            if self.barred(p.owner or p.name) is not None:
                free = 0
            idle += [p] * (free if p.idle else 0)
        if not any(not p.local for p in idle):
            return []
        noise = [self.rng.gauss(0.0, PAIRING_NOISE) for _ in idle]
        ranked = sorted(
            ((p.rating + n, k) for k, (p, n) in enumerate(zip(idle, noise, strict=True)))
        )
        at = [0] * len(idle)  # where each entry of `idle` stands in `ranked`
        for place, (_, k) in enumerate(ranked):
            at[k] = place
        noisy = [elo for elo, _ in ranked]

        def may_meet(a: Participant, b: Participant) -> bool:
            return b is not a and not (a.local and b.local)

        def fresh(a: Participant, b: Participant) -> bool:
            return a.name != b.last_opponent and b.name != a.last_opponent

        # The nearest in rating is found by walking out from each engine's place in the
        # ranked list, not by measuring against every engine: a thousand idle engines
        # (an arena's start, or a pacing that held them back) cost a sort, not a million
        # comparisons on the event loop.
        unpaired = list(range(len(ranked)))  # places still unpaired, in rating order
        order = list(range(len(idle)))
        self.rng.shuffle(order)
        out: list[tuple[Participant, Participant]] = []
        waiting: list[Participant] = []
        for k in order:
            if most is not None and len(out) >= most:
                return out
            place = at[k]
            i = bisect.bisect_left(unpaired, place)
            if i == len(unpaired) or unpaired[i] != place:
                continue  # taken by an earlier engine
            a = idle[k]
            left, right, found, b = i - 1, i + 1, -1, a
            while left >= 0 or right < len(unpaired):
                low = noisy[place] - noisy[unpaired[left]] if left >= 0 else math.inf
                high = noisy[unpaired[right]] - noisy[place] if right < len(unpaired) else math.inf
                j = left if low <= high else right
                b = idle[ranked[unpaired[j]][1]]
                if may_meet(a, b) and fresh(a, b):
                    found = j
                    break
                if j == left:
                    left -= 1
                else:
                    right += 1
            if found < 0:
                waiting.append(a)
                del unpaired[i]
                continue
            for j in sorted((i, found), reverse=True):
                del unpaired[j]
            out.append((a, b))
        rating = {id(idle[k]): noisy[at[k]] for k in range(len(idle))}

        # Those that waited, where no fresh opponent's game will end to pair them again:
        # they meet, the pairs that did not just play each other first.
        waits = {id(w) for w in waiting}

        def waits_on_game(a: Participant) -> bool:
            return any(
                q.present and may_meet(a, q) and fresh(a, q) and id(q) not in waits
                for q in self.participants.values()
            )

        waiting = [a for a in waiting if not waits_on_game(a)]
        while True:
            candidates = [
                (a, b) for i, a in enumerate(waiting) for b in waiting[i + 1 :] if may_meet(a, b)
            ]
            if not candidates:
                break
            a, b = min(
                candidates,
                key=lambda ab: (
                    (ab[0].last_opponent == ab[1].name) + (ab[1].last_opponent == ab[0].name),
                    abs(rating[id(ab[0])] - rating[id(ab[1])]),
                ),
            )
            waiting = [w for w in waiting if w is not a and w is not b]
            out.append((a, b))
        return out

    # ------------------------------------------------------------------ games

    def opening(self, number: int) -> tuple[str, ...]:
        if not self.arena.random_openings:
            return ()
        seed = derive(self.arena.seed, f"arena-{number}")
        return random_opening(self.arena.variant, 1, seed)

    async def _play_pair(self, seats: Seats, number: int, round_number: int) -> None:
        (a, _), (b, _) = seats
        try:
            opening = self.opening(number)
            self._register([a.name, b.name])
            for k, (first, second) in enumerate((seats, seats[::-1]), 1):
                if not all(s is None or (s.usable and not s.leaving) for _, s in (first, second)):
                    break
                if any(self.barred(p.owner or p.name) is not None for p, _ in seats):
                    break  # a server's own engine banned between the games
                names = (first[0].name, second[0].name)
                game = ArenaGame(
                    f"p{number:06d}-{k}",
                    2 * number + k - 1,
                    round_number,
                    f"p{number:06d}",
                    names,
                    opening,
                )
                await self._play(game, first, second)
        except (StoreError, trio.Cancelled):
            raise  # the store is the truth: without it the arena stops
        except Exception:
            # A fault of the arena's own in one pair must not stop the others; the
            # referee already turns any fault during a game into a void record.
            log.exception("pair %d (%s, %s) failed", number, a.name, b.name)
        finally:
            self.end_pair(seats)

    async def _player(self, p: Participant, session: Session | None) -> Player | None:
        if session is not None:
            return session.player
        if p.engine is None:
            spec = self.arena.engines[p.name]
            try:
                p.engine = await start_engine(spec, self.nursery, self.deadlines)
            except EngineError as exc:
                # It started at the check: wait longer after each failure, then try again.
                p.failures += 1
                rest = min(REST_MOST, REST_FIRST * 2 ** (p.failures - 1))
                p.resting_until = trio.current_time() + rest
                self.nursery.start_soon(self._wake_after, rest)
                log.warning(
                    "engine %s did not start (%s); trying again in %.0f s", p.name, exc.detail, rest
                )
                return None
            p.failures = 0
            p.info = p.engine.info
        player = Player.of(p.engine)
        player.name = p.name
        return player

    async def _play(
        self,
        game: ArenaGame,
        seat1: tuple[Participant, Session | None],
        seat2: tuple[Participant, Session | None],
    ) -> None:
        v: Variant = self.arena.variant
        spec = GameSpec(
            game_id=game.game_id,
            variant=v,
            tc=(self.arena.tc, self.arena.tc),
            opening=game.opening,
            seed=None,
            pair=game.pair_key,
        )
        first, second = seat1[0], seat2[0]
        one, two = await self._player(*seat1), await self._player(*seat2)
        if one is None or two is None:
            return
        players = [one, two]
        for player, p in zip(players, (first, second), strict=True):
            player.name = p.name
            if player.unsupported(v) is not None:
                return
        live = self.live[game.game_id] = LiveGame(
            game.game_id, first.name, second.name, v.size, v.islands
        )
        self.publish(
            "start",
            {
                "game": game.game_id,
                "round": game.round,
                "seat1": first.name,
                "seat2": second.name,
                "size": v.size,
                "islands": v.islands,
            },
        )

        def moved(move: str) -> None:
            live.moves.append(move)
            self.publish("move", {"game": game.game_id, "move": move, "ply": len(live.moves)})

        host, cpu = machine()
        try:
            outcome = await self.referee.play(spec, players, host=host, cpu=cpu, on_move=moved)
        finally:
            self.live.pop(game.game_id, None)
        record = outcome.record
        self.store.write(game, record)  # stored before anyone is told
        self.games_played += 1
        log.info(
            "game %s: %s",
            game.game_id,
            "void: " + record.reason
            if record.void
            else f"{record.winner} beat {record.loser} by {record.termination}"
            + (f" ({record.reason})" if record.reason else ""),
        )
        for seat, p in enumerate((first, second)):
            # A faulty engine is restarted; a confined one (sandbox, limits) lasts a game,
            # so that nothing it left running or wrote reaches the next, as in tournaments.
            if p.local and p.engine is not None:
                definition = self.arena.engines[p.name]
                if seat in outcome.faulty or definition.sandbox or definition.limits:
                    engine, p.engine = p.engine, None
                    await engine.aclose()
        self._rate(record)
        summary = game_summary(record, game.number)
        self.recent.appendleft(summary)
        self.publish("game", summary)

    async def _wake_after(self, seconds: float) -> None:
        await trio.sleep(seconds)  # a rest that ends: pairing looks again
        self.changed()

    def _rate(self, record: GameRecord) -> None:
        """The running estimate pairing uses: one Elo step per rated game. The anchors
        stay where they are."""
        if record.void or record.winner is None:
            return
        w = self.participants.get(record.winner)
        loser = record.loser
        lo = self.participants.get(loser) if loser else None
        if w is None or lo is None:
            return
        expected = expected_score(w.rating - lo.rating)
        step = RATING_PULL * (1.0 - expected)
        if w.name not in self.arena.anchors:
            w.rating += step
        if lo.name not in self.arena.anchors:
            lo.rating -= step

    async def aclose(self) -> None:
        for p in self.participants.values():
            if p.engine is not None:
                engine, p.engine = p.engine, None
                await engine.aclose()


def _versions(text: str | None) -> dict[str, str]:
    """The store's note of each name's first version (empty when it has none)."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def game_summary(record: GameRecord, number: int) -> dict[str, Any]:
    """A finished game as the page and `/api/games` list it."""
    return {
        "number": number,
        "game": record.game_id,
        "seat1": record.seat1,
        "seat2": record.seat2,
        "winner": record.winner,
        "termination": record.termination.value,
        "void": record.void,
        "plies": record.plies,
        "finished": record.finished,
        "reason": escape(record.reason),
    }
