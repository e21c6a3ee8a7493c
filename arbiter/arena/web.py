"""What browsers read: the live page, its events, a read-only JSON API and the report.

The live page is a shell that fills itself from the API and follows `/events`
(server-sent events: one-way, plain HTTP, reconnecting by themselves in every
browser). It sets every piece of text with `textContent`, never as markup, so nothing
an engine says can become a tag. `/report` is the tournaments' own HTML report of the
arena's store (leaderboard, ratings plot, cross table, games and viewer), made again
when games have been stored since, at most every `REPORT_EVERY` seconds; the standings
are the joint fit over the whole store with the anchors held at their ratings, made
in a worker thread so that games in play never wait for them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

import trio

from arbiter.arena.config import Arena
from arbiter.arena.fit_process import arena_standings, standings_in_process
from arbiter.arena.hall import Hall, game_summary
from arbiter.arena.history import History
from arbiter.arena.net import Buckets, Request, Respond, Route
from arbiter.views.arena_pages import engine_page, game_page, games_page, live_board
from arbiter.views.sgf import game_tree, is_hex

if TYPE_CHECKING:
    from arbiter.views.html import ViewCache

log = logging.getLogger(__name__)

STANDINGS_EVERY = 2.0  # seconds between fits while games are being stored
REPORT_EVERY = 10.0
SUBSCRIBER_QUEUE = 4096  # events a slow page may fall behind by before it is dropped
FIT_SHARE = 5.0  # the pause after a fit, in fits: a fit takes at most a sixth of the time
MAX_SUBSCRIBERS = 1000
HEARTBEAT = 15.0
PACE = 0.25  # seconds between writes to one page: its events are gathered meanwhile
PAGE_LIMIT = 200  # games per page of /api/games
LIST_PAGE = 100  # games per page of /games
CACHE_SECONDS = 0.25  # an API answer is made at most this often, whoever asks
CACHED_MOST = 1024  # answers kept (one per query)
STORE_READS = 8.0  # uncached reads of the store a second, from all pages together


class Broadcast:
    """Events to every page that follows `/events`; a page that cannot keep up is
    dropped (it reconnects and reads the state afresh) rather than slowing the games."""

    def __init__(self) -> None:
        self._subscribers: set[trio.MemorySendChannel[bytes]] = set()

    def publish(self, event: str, data: Mapping[str, Any]) -> None:
        if not self._subscribers:
            return
        frame = f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
        for channel in list(self._subscribers):
            try:
                channel.send_nowait(frame)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.discard(channel)
                channel.close()

    def subscribe(self) -> trio.MemoryReceiveChannel[bytes] | None:
        if len(self._subscribers) >= MAX_SUBSCRIBERS:
            return None
        send, receive = trio.open_memory_channel[bytes](SUBSCRIBER_QUEUE)
        self._subscribers.add(send)
        return receive


def report_page(
    store_path: Path, title: str, anchors: Mapping[str, float], cache: ViewCache | None = None
) -> str:
    """The tournaments' report of the arena's store (in a thread). Made again as games
    end: the counts, the conditions and the selection of games come from what the store
    keeps counted (a few thousand rows, not a record a game), and the games the last
    page embedded come from `cache` instead of being replayed."""
    from arbiter.results.standings import Games, Selection
    from arbiter.views.html import render_gathered

    selection = Selection()
    keep = Games(selection=selection)
    board = arena_standings(store_path, anchors, keep)
    if board is None:
        return (
            "<!doctype html><meta charset=utf-8><title>No games yet</title>"
            "<p>No rated games yet: this page fills as games end."
        )
    return render_gathered(
        board,
        keep,
        title=title,
        sources=[store_path.name],
        download="arena-games.jsonl",
        selection=selection,
        cache=cache,
    )


class Site:
    """The routes, with the standings and the report cached between games."""

    def __init__(
        self,
        arena: Arena,
        hall: Hall,
        broadcast: Broadcast,
        history: History | None = None,
        base: str = "",
    ) -> None:
        self.arena = arena
        self.base = base  # where its paths begin: "/room/NAME" for a room, else ""
        self.hall = hall
        self.broadcast = broadcast
        self._standings: bytes = b'{"engines":[],"games":0}'
        self._standings_at = -1  # games_played when last made
        self._report: bytes = b""
        self._report_at = -1
        self._report_time = -REPORT_EVERY
        from arbiter.views.html import ViewCache

        self._report_cache = ViewCache()  # the games the last report embedded
        self._lock = trio.Lock()
        self._cache: dict[str, tuple[float, bytes]] = {}
        self._store_reads = Buckets(STORE_READS, STORE_READS)
        self._page: bytes | None = None
        self._board: dict[str, Any] | None = None  # the live page's drawing of the board
        self.history = history or History(None)  # the server's keeps it in the store

    def cached(self, key: str) -> bytes | None:
        """The answer to `key` made in the last `CACHE_SECONDS`, if any: however many
        pages ask, the loop that plays the games makes each answer a few times a second
        at most."""
        hit = self._cache.get(key)
        if hit is not None and trio.current_time() - hit[0] < CACHE_SECONDS:
            return hit[1]
        return None

    def keep(self, key: str, body: bytes) -> bytes:
        if len(self._cache) >= CACHED_MOST:
            self._cache.clear()
        self._cache[key] = (trio.current_time(), body)
        return body

    def routes(self) -> dict[str, Route]:
        """Its paths, each under `base`."""
        paths: dict[str, Route] = {
            "/": self.page,
            "/api/standings": self.standings,
            "/api/games": self.games,
            "/api/live": self.live,
            "/events": self.events,
            "/report": self.report,
            "/games": self.games_list,
            "/game/": self.game,
            "/engine/": self.engine,
            "/api/history": self.history_json,
        }
        return {self.base + path: route for path, route in paths.items()}

    async def refresh_standings(self) -> None:
        """Fit again when games were stored since: a loop beside the games."""
        while True:
            played = self.hall.games_played
            took = 0.0
            if played != self._standings_at:
                started = trio.current_time()
                try:
                    # In a process of its own: in a thread it held the event loop's lock.
                    data = await standings_in_process(self.arena.output, self.arena.anchors)
                except Exception:
                    log.exception("the arena's standings could not be made")
                else:
                    self._standings = json.dumps(data).encode()
                    self._standings_at = played
                    ratings = {
                        e["name"]: e["elo"]
                        for e in data.get("engines", [])
                        if e.get("elo") is not None
                    }
                    self.hall.seed_ratings(ratings)
                    self.history.add(int(data.get("games", 0)), ratings)
                    self.broadcast.publish("standings", {"games": data.get("games", 0)})
                took = trio.current_time() - started
            # The fit grows with the store and the field: it may take a fifth of the time
            # at most, so that a large arena's games keep the CPU.
            await trio.sleep(max(STANDINGS_EVERY, FIT_SHARE * took))

    async def page(self, request: Request, respond: Respond) -> None:
        from arbiter.views.html import arena_page

        if self._page is None:
            self._page = arena_page(self.arena.title, bool(self.arena.room)).encode()
        body = self._page
        await respond.whole(
            200,
            body,
            "text/html; charset=utf-8",
            (
                (
                    "content-security-policy",
                    "default-src 'self'; script-src 'unsafe-inline';"
                    " style-src 'unsafe-inline'; img-src 'self' data:; frame-src 'self'",
                ),
            ),
        )

    async def standings(self, request: Request, respond: Respond) -> None:
        await respond.whole(200, self._standings, "application/json")

    async def games(self, request: Request, respond: Respond) -> None:
        query = parse_qs(request.target.partition("?")[2])
        try:
            limit = min(int(query.get("limit", ["50"])[0]), PAGE_LIMIT)
            before_text = query.get("before", [None])[0]
            before = int(before_text) if before_text is not None else None
            if limit < 1 or (before is not None and not 0 <= before < 2**63):
                raise ValueError  # (the store's numbers are SQLite integers)
        except ValueError:
            problem = b'{"error":"limit is a whole number from 1; before, a game number"}'
            await respond.whole(400, problem, "application/json")
            return

        def make() -> bytes:
            rows = self.hall.store.recent_games(limit, before)
            out = [game_summary(record, number) for number, record in rows]
            data = {"games": out, "next": rows[-1][0] if len(rows) == limit else None}
            return json.dumps(data).encode()

        body = await self._stored(respond, f"games {limit} {before}", make)
        if body is not None:
            await respond.whole(200, body, "application/json")

    async def _stored(self, respond: Respond, key: str, make: Callable[[], bytes]) -> bytes | None:
        """The answer `key` from the cache, or made by `make` (which reads the store) if
        the store may be read now; None when it was answered 503 (busy)."""
        body = self.cached(key)
        if body is not None:
            return body
        wait = self._store_reads.take("")
        if wait:  # pages that all ask for other games: the store is read as it can
            retry = (("retry-after", str(max(1, round(wait)))),)
            await respond.whole(503, b"busy; try again\n", "text/plain; charset=utf-8", retry)
            return None
        return self.keep(key, make())

    async def games_list(self, request: Request, respond: Respond) -> None:
        """`/games?before=N`: a page of every stored game, newest first."""
        query = parse_qs(request.target.partition("?")[2])
        try:
            text = query.get("before", [None])[0]
            before = int(text) if text is not None else None
            if before is not None and not 0 <= before < 2**63:
                raise ValueError
        except ValueError:
            await respond.whole(400, b"before is a game number\n", "text/plain; charset=utf-8")
            return

        def make() -> bytes:
            rows = self.hall.store.recent_games(LIST_PAGE, before)
            out = [game_summary(record, number) for number, record in rows]
            older = rows[-1][0] if len(rows) == LIST_PAGE else None
            return games_page(out, older, self.arena.title).encode()

        body = await self._stored(respond, f"list {before}", make)
        if body is not None:
            await respond.whole(200, body, "text/html; charset=utf-8")

    async def game(self, request: Request, respond: Respond) -> None:
        """`/game/N`: game N's page; `/game/N.jsonl` its record, `/game/N.sgf` its SGF
        (Hex only: Atoll has no standard format)."""
        name = request.target.split("?", 1)[0].rsplit("/", 1)[1]
        number_text, _, kind = name.partition(".")
        if not number_text.isdigit() or len(number_text) > 18 or kind not in ("", "jsonl", "sgf"):
            await respond.whole(404, b"not found\n", "text/plain; charset=utf-8")
            return
        number = int(number_text)

        def make() -> bytes:
            rows = self.hall.store.recent_games(1, number + 1)
            if not rows or rows[0][0] != number:
                return b""
            record = rows[0][1]
            if kind == "jsonl":
                return (record.dumps() + "\n").encode()
            if kind == "sgf":
                return game_tree(record).encode() if is_hex(record) else b""
            return game_page(number, record, self.arena.title).encode()

        body = await self._stored(respond, f"game {name}", make)
        if body is None:
            return
        if not body:
            why = (
                f"no game {number} in this arena's store"
                if kind != "sgf"
                else (f"no Hex game {number} in this arena's store (Atoll has no SGF)")
            )
            await respond.whole(404, why.encode() + b"\n", "text/plain; charset=utf-8")
            return
        types = {
            "": "text/html; charset=utf-8",
            "jsonl": "application/x-ndjson",
            "sgf": "application/x-go-sgf",
        }
        extra: tuple[tuple[str, str], ...] = ()
        if kind:
            disposition = f'attachment; filename="{self.arena.name}-game-{number}.{kind}"'
            extra = (("content-disposition", disposition),)
        await respond.whole(200, body, types[kind], extra)

    async def history_json(self, request: Request, respond: Respond) -> None:
        """`/api/history`: every engine's rating after each fit, [games stored, Elo]."""
        body = self.cached("history") or self.keep(
            "history", json.dumps(self.history.as_json()).encode()
        )
        await respond.whole(200, body, "application/json")

    async def engine(self, request: Request, respond: Respond) -> None:
        """`/engine/NAME`: an engine's page, its rating over time as a plot."""
        path = request.target.split("?", 1)[0][len(self.base) :]
        name = unquote(path.split("/", 2)[2])
        points = self.history.of(name)
        if not points and name not in self.hall.participants:
            why = f"no engine {name!r} in this arena\n"
            await respond.whole(404, why.encode(), "text/plain; charset=utf-8")
            return
        key = f"engine {name}"
        body = self.cached(key) or self.keep(
            key, engine_page(name, points, self.arena.title).encode()
        )
        await respond.whole(200, body, "text/html; charset=utf-8")

    def live_state(self) -> dict[str, Any]:
        if self._board is None:
            self._board = live_board(self.arena.variant)
        return {
            "arena": self.arena.name,
            "room": self.arena.room,
            "board": self._board,
            "connected": self.hall.connected(),
            "playing": [
                {
                    "game": g.game_id,
                    "seat1": g.seat1,
                    "seat2": g.seat2,
                    "size": g.size,
                    "islands": g.islands,
                    "moves": g.moves,
                }
                for g in self.hall.live.values()
            ],
            "recent": list(self.hall.recent),
            "games": self.hall.games_played,
            # The pacing (Hall._pace): the pairs that may play at once, and the
            # heartbeats the server was behind; rising, they say the server sets the pace.
            "cap": self.hall.cap,
            "held": self.hall.held,
        }

    async def live(self, request: Request, respond: Respond) -> None:
        body = self.cached("live") or self.keep("live", json.dumps(self.live_state()).encode())
        await respond.whole(200, body, "application/json")

    async def events(self, request: Request, respond: Respond) -> None:
        channel = self.broadcast.subscribe()
        if channel is None:
            await respond.whole(
                503, b"too many pages follow this arena\n", "text/plain; charset=utf-8"
            )
            return
        async with channel:
            await respond.begin_stream("text/event-stream")
            first = self.cached("live") or self.keep("live", json.dumps(self.live_state()).encode())
            await respond.chunk(b"retry: 2000\nevent: state\ndata: " + first + b"\n\n")
            while True:
                with trio.move_on_after(HEARTBEAT) as quiet:
                    try:
                        frames = [await channel.receive()]
                    except trio.EndOfChannel:
                        return  # dropped for falling behind: the page reads the state afresh
                if quiet.cancelled_caught:
                    frames = [b": still here\n\n"]
                else:
                    # A page is written to a few times a second at most, whatever the
                    # games' pace: a wake-up per page per move slowed every game in play.
                    await trio.sleep(PACE)
                # What is queued goes out in one write: one pass of the event loop can
                # publish many events (a move of every game in play), and a frame per
                # write would leave the page further behind with each pass until dropped.
                while len(frames) < SUBSCRIBER_QUEUE:
                    try:
                        frames.append(channel.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                with trio.move_on_after(HEARTBEAT):  # a reader that stops reading is dropped
                    await respond.chunk(b"".join(frames))
                    continue
                return

    async def report(self, request: Request, respond: Respond) -> None:
        async with self._lock:
            played = self.hall.games_played
            now = trio.current_time()
            if not self._report or (
                played != self._report_at and now - self._report_time >= REPORT_EVERY
            ):
                page = await trio.to_thread.run_sync(
                    report_page,
                    self.arena.output,
                    self.arena.title,
                    self.arena.anchors,
                    self._report_cache,
                )
                self._report, self._report_at, self._report_time = page.encode(), played, now
        await respond.whole(200, self._report, "text/html; charset=utf-8")


class Lobby:
    """The index of an arena with rooms: `/` lists them, `/api/rooms` as JSON."""

    def __init__(self, arena: Arena, rooms: Mapping[str, tuple[Arena, Hall]]) -> None:
        self.arena = arena
        self.rooms = rooms

    def routes(self) -> dict[str, Route]:
        return {"/": self.page, "/api/rooms": self.api}

    def listing(self) -> list[dict[str, Any]]:
        out = []
        for name, (room, hall) in self.rooms.items():
            v = room.variant
            out.append(
                {
                    "room": name,
                    "game": f"{'Hex' if v.islands == 4 else 'Atoll'} {v.size}",
                    "size": v.size,
                    "islands": v.islands,
                    "tc": str(room.tc),
                    "connected": sum(p.present for p in hall.participants.values()),
                    "playing": len(hall.live),
                    "games": hall.games_played,
                }
            )
        return out

    async def page(self, request: Request, respond: Respond) -> None:
        from arbiter.views.arena_pages import rooms_page

        body = rooms_page(self.arena.name, self.listing()).encode()
        await respond.whole(200, body, "text/html; charset=utf-8")

    async def api(self, request: Request, respond: Respond) -> None:
        body = json.dumps({"arena": self.arena.name, "rooms": self.listing()}).encode()
        await respond.whole(200, body, "application/json")
