"""The arena file: where the server listens, the conditions of play, who may connect.

An arena file holds an `[arena]` table, `[[player]]` tables for remote engines (a name and
the salted hash of its token, never the token) and `[[engine]]` tables for engines the
server runs itself, as in a tournament (the bundled bots as anchors, say). Every error
names the file and the key and says how to fix it.

Tokens are random 192-bit strings made by `arbiter arena token`, so a salted SHA-256 is
as strong as a slow password hash here (nobody can guess 2**192 tokens, however fast the
hash) and costs microseconds per login, which matters when a thousand engines log in at
once after a restart; they are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arbiter.definitions import Key, Keys, read_toml
from arbiter.engines.config import check_name
from arbiter.engines.process import EngineSpec
from arbiter.errors import ConfigError
from arbiter.games.adjudication import Adjudication, adjudicate_key
from arbiter.results.store import resolved
from arbiter.rules import Variant
from arbiter.rules.clock import TC_HELP, TimeControl
from arbiter.runs.schedule import DEFAULT_RANDOM_OPENINGS
from arbiter.runs.tournament import ENGINE_SOURCES, parse_engines
from arbiter.text import toml_key, toml_value

TOKEN_BYTES = 24
_HASH = "sha256"

_SIZES = "Atoll sizes: 7, 11, 15, 19, 23; Hex (islands = 4): 2-26"

# The [arena] table's keys, in the order the reference lists them.
ARENA = Keys(
    Key("name", str, "the arena's name", shown="the file's name"),
    Key("listen", str, "`HOST:PORT`; port 0 picks a free one (printed)", shown="(required)"),
    Key("tc", str, "the time control, as in tournaments", default="10+0.1", type_hint=TC_HELP),
    Key("size", int, _SIZES.replace("islands = 4", "`islands = 4`"), default=11),
    Key("islands", int, "8 for Atoll, 4 for Hex", default=8),
    Key("pie", bool, "the swap on move 2", default=True),
    adjudicate_key("."),
    Key(
        "margin",
        float,
        "seconds an engine may overrun its clock before losing on time",
        default=0.1,
        low=0,
        high=60,
    ),
    Key(
        "random_openings",
        int,
        "1: a random first stone per pair, as a match and a tournament file have by"
        " default (both games of the pair from it; under the pie rule the engine on move"
        " decides the swap); 0: every game from the empty board",
        default=DEFAULT_RANDOM_OPENINGS,
        low=0,
        high=1,
    ),
    Key("seed", int, "the openings' seed", default=1),
    Key("output", str, "the store, beside the file", shown="`NAME.sqlite`"),
    Key(
        "latency_allowance",
        float,
        "seconds of measured network time per move not charged",
        default=0.25,
        low=0,
        high=10,
    ),
    Key("anchors", dict, "`{ name = elo, ... }`: held at these ratings"),
    Key(
        "open_registration",
        bool,
        "a new name registers itself with the token it first logs in with (at least 16 characters)",
        default=False,
    ),
    Key(
        "disconnect_grace",
        float,
        "seconds a dropped connection has to come back mid-game",
        default=10.0,
        low=0,
        high=600,
    ),
    Key(
        "connections_per_address",
        int,
        "connections one address may hold",
        default=32,
        low=1,
        high=100_000,
    ),
    Key(
        "max_connections",
        int,
        "connections in all (fewer if the open-file limit is lower)",
        default=4096,
        low=1,
        high=1_000_000,
    ),
    Key(
        "frontends",
        int,
        "processes that hold the engines' connections (WebSocket framing, pings, relaying)"
        " beside the server's own, which keeps the games: about one per two cores left"
        " over; 0: the server holds them itself",
        default=0,
        low=0,
        high=64,
    ),
    Key(
        "logins_per_minute",
        int,
        "logins one address may try a minute",
        default=60,
        low=1,
        high=1_000_000,
    ),
    Key(
        "round_seconds",
        float,
        "0: two engines are paired as soon as both are free; N: a round starts every N"
        " seconds and pairs every engine free then, as CGOS does",
        default=0.0,
        low=0,
        high=86_400,
    ),
    Key(
        "max_loop_lag",
        float,
        "seconds the server may fall behind (its event loop's queue) before it holds back"
        " new games: engines then wait to be paired instead of starting games whose every"
        " move would wait on the server; 0: never hold back",
        default=0.02,
        low=0,
        high=60,
    ),
    Key(
        "requests_per_minute",
        int,
        "HTTP requests (pages, API, events) one address may make a minute, in bursts of"
        " a quarter of that; more are answered 429 with `Retry-After`",
        default=600,
        low=4,
        high=1_000_000,
    ),
    Key(
        "messages_per_second",
        int,
        "control messages (stderr, timings) a connected client may send a second, in"
        " bursts of twice that; more are dropped",
        default=50,
        low=1,
        high=100_000,
    ),
    Key(
        "registration_hours",
        float,
        "hours a name that registered itself keeps it without playing a game (`open_registration`)",
        default=24.0,
        low=0,
        high=100_000,
    ),
    Key(
        "command_timeout",
        float,
        "seconds for any answer that is not a move",
        default=10.0,
        low=0.5,
        high=600,
    ),
    Key(
        "trusted_proxies",
        list,
        "reverse proxies whose `X-Forwarded-For` names the client, for the limits",
        type_text="list of strings",
    ),
    *ENGINE_SOURCES,
)
# A [[player]] table's keys: a remote engine allowed to connect.
PLAYER = Keys(
    Key("name", str, "its name, an identity as an engine's", shown="(required)"),
    Key(
        "token_hash",
        str,
        "the salted hash of its token, as `arbiter arena token NAME` prints it",
        shown="(required)",
    ),
    Key(
        "games_at_once",
        int,
        "sessions its owner may run at once (`arena connect --sessions N`)",
        default=1,
        low=1,
        high=64,
    ),
)
# The keys of [arena] that a [[room]] may set for its own games (the rest are the
# server's: where it listens, its limits, who may log in).
ROOM_KEYS = (
    "tc",
    "size",
    "islands",
    "pie",
    "adjudicate",
    "margin",
    "random_openings",
    "seed",
    "output",
    "latency_allowance",
    "anchors",
    "round_seconds",
    "engines",
    "engines_file",
    "sandbox",
    "limits",
)
# A [[room]] table's keys: one variant and size, its pairing, store and pages.
ROOM = Keys(
    Key(
        "name",
        str,
        "the room's name (letters, digits, `-`, `_`, `.`): its pages are under `/room/NAME/`,"
        " and clients pick it with `arena connect --room NAME`",
        shown="(required)",
    ),
    *(
        replace(ARENA[n], shown="`ARENA-ROOM.sqlite`" if n == "output" else "`[arena]`'s")
        for n in ROOM_KEYS
    ),
    sort=False,
)
_TOP_KEYS = {"arena", "player", "engine", "room"}
_ROOM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
_EXAMPLE = "arbiter arena token NAME prints a [[player]] entry to paste in"


@dataclass(frozen=True)
class PlayerEntry:
    """A remote engine allowed to connect: its name, its token's hash, its game limit."""

    name: str
    token_hash: str
    games_at_once: int = 1

    def accepts(self, token: str) -> bool:
        return token_matches(token, self.token_hash)


@dataclass(frozen=True)
class Arena:
    path: Path
    name: str
    host: str
    port: int
    tc: TimeControl
    variant: Variant
    random_openings: int
    seed: int
    margin: float
    output: Path
    latency_allowance: float
    anchors: Mapping[str, float]
    open_registration: bool
    disconnect_grace: float
    connections_per_address: int
    logins_per_minute: int
    max_connections: int
    round_seconds: float
    max_loop_lag: float
    requests_per_minute: int
    messages_per_second: int
    registration_hours: float
    command_timeout: float
    trusted_proxies: frozenset[str]
    players: Mapping[str, PlayerEntry]
    engines: Mapping[str, EngineSpec]
    engine_conditions: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    adjudicate: Adjudication = Adjudication.OFF  # whether proven games end early
    room: str = ""  # its [[room]]'s name; "" for an arena file without rooms
    rooms: tuple[Arena, ...] = ()  # every room of the file (this is the first)
    players_file: Path | None = None  # players managed while it runs (roster.py)
    frontends: int = 0  # processes holding the engines' connections (frontends.py)

    @property
    def title(self) -> str:
        """The arena's name, with its room's."""
        return f"{self.name} {self.room}" if self.room else self.name

    def conditions(self) -> dict[str, Any]:
        """What the arena's games are played under, as a store keeps a tournament's."""
        v = self.variant
        return {
            "format": "arena",
            "tc": str(self.tc),
            "size": v.size,
            "islands": v.islands,
            "pie": v.pie,
            "adjudicate": self.adjudicate.value,
            "random_openings": self.random_openings,
            "seed": self.seed,
            "margin": self.margin,
            "latency_allowance": self.latency_allowance,
            "swap_decision": "engines",
        }


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str, salt: str | None = None) -> str:
    """`sha256$SALT$HEX`: what an arena file keeps of a token."""
    salt = salt if salt is not None else secrets.token_hex(8)
    digest = hashlib.sha256(f"{salt}${token}".encode()).hexdigest()
    return f"{_HASH}${salt}${digest}"


def token_matches(token: str, stored: str) -> bool:
    """Compared in constant time (the length of a digest is public)."""
    parts = stored.split("$")
    if len(parts) != 3 or parts[0] != _HASH:
        return False
    return hmac.compare_digest(hash_token(token, parts[1]), stored)


def valid_hash(text: str) -> bool:
    parts = text.split("$")
    return (
        len(parts) == 3
        and parts[0] == _HASH
        and bool(parts[1])
        and len(parts[2]) == 64
        and all(c in "0123456789abcdef" for c in parts[2])
    )


def parse_listen(text: str, where: str) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(
            f"{toml_value(text)} is not HOST:PORT",
            where=where,
            hint='e.g. listen = "127.0.0.1:8080" (0.0.0.0 for every interface;'
            " put TLS in a reverse proxy in front)",
        )
    return host, int(port_text)


def is_arena_file(path: str | os.PathLike[str]) -> bool:
    """Whether a TOML file is an arena file ([arena] and no [tournament]), so that the
    commands that read results take it as they take a tournament file. A file that
    cannot be read is not one: its loader reports why."""
    try:
        data = read_toml(Path(path), "arena file", "give the path of an arena .toml file")
    except ConfigError:
        return False
    return "arena" in data and "tournament" not in data


def load_arena(path: str | os.PathLike[str], *, engines_here: bool = True) -> Arena:
    """Read and check an arena file; raises ConfigError naming the file and key."""
    file = Path(path)
    data = read_toml(file, "arena file", "give the path of an arena .toml file")
    unknown_top = set(data) - _TOP_KEYS
    if unknown_top:
        raise ConfigError(
            f"unknown table(s) or key(s) {', '.join(sorted(unknown_top))}",
            where=str(file),
            hint="an arena file has [arena], [[room]], [[player]] and [[engine]] tables",
        )
    table = data.get("arena")
    if not isinstance(table, dict):
        raise ConfigError(
            "no [arena] table",
            where=str(file),
            hint='start the file with [arena], name = "..." and listen = "127.0.0.1:8080"',
        )
    ARENA.refuse_unknown(table, f"{file}: arena")
    name = ARENA.get(table, "name", f"{file}: arena", file.stem)
    check_name(name, f"{file}: arena.name")
    listed = data.get("room")
    if listed is None:
        arena = _load(file, data, table, f"{file}: arena", name, engines_here)
        players = arena.output.with_name(arena.output.stem + ".players.json")
        return replace(arena, players_file=players)
    if not isinstance(listed, list) or not listed:
        raise ConfigError(
            "room must be an array of tables",
            where=str(file),
            hint='write each room as [[room]] with name = "..." and its keys',
        )
    rooms: list[Arena] = []
    for number, entry in enumerate(listed, 1):
        spot = f"{file}: room #{number}"
        if not isinstance(entry, dict):
            raise ConfigError("must be a table", where=spot, hint='e.g. [[room]] name = "hex11"')
        ROOM.refuse_unknown(
            entry,
            spot,
            hint="a room sets its own name and any of "
            + ", ".join(ROOM_KEYS)
            + "; the server's keys belong in [arena]",
        )
        room = ROOM.get(entry, "name", spot)
        if not isinstance(room, str) or not _ROOM_NAME.fullmatch(room):
            raise ConfigError(
                f"{toml_value(room)} is not a room's name",
                where=f"{spot}.name",
                hint="up to 40 letters, digits, '-', '_' or '.', e.g. name = \"hex11\"",
            )
        if any(r.room == room for r in rooms):
            raise ConfigError(
                f"two rooms are named {toml_value(room)}",
                where=f"{spot}.name",
                hint="give each room a name of its own",
            )
        merged = {**table, "output": f"{name}-{room}.sqlite"}
        merged.update({k: v for k, v in entry.items() if k != "name"})
        arena = _load(file, data, merged, f"{file}: room {room!r}", name, engines_here)
        if any(r.output == arena.output for r in rooms):
            raise ConfigError(
                f"two rooms keep their games in {arena.output.name}",
                where=f"{file}: room {room!r}.output",
                hint="give each room a store of its own",
            )
        rooms.append(replace(arena, room=room))
    players = file.resolve().parent / f"{name}.players.json"
    rooms = [replace(r, players_file=players) for r in rooms]
    return replace(rooms[0], rooms=tuple(rooms))


def pick_room(arena: Arena, room: str | None) -> Arena:
    """The room `room` of `arena` (None: its first, or its only arena)."""
    if room is None:
        return arena
    for r in arena.rooms:
        if r.room == room:
            return r
    names = ", ".join(r.room for r in arena.rooms) or "(none: the file has no [[room]])"
    raise ConfigError(
        f"no room {toml_value(room)} in the arena file",
        where="--room",
        hint=f"its rooms: {names}",
    )


def _load(
    file: Path,
    data: Mapping[str, Any],
    table: Mapping[str, Any],
    where: str,
    name: str,
    engines_here: bool,
) -> Arena:
    """One room's arena (the file's only one, without rooms) from `table`."""
    here = file.resolve().parent

    def get(key: str, default: Any = ...) -> Any:
        return ARENA.get(table, key, where, default)

    listen = get("listen")
    if listen is None:
        raise ConfigError("listen is missing", where=where, hint='e.g. listen = "127.0.0.1:8080"')
    host, port = parse_listen(listen, f"{where}.listen")
    try:
        tc = TimeControl.parse(get("tc"))
    except ConfigError as exc:
        raise exc.located(f"{where}.tc") from exc
    if tc.infinite:
        raise ConfigError("an arena needs a clock", where=f"{where}.tc", hint=TC_HELP)
    islands = get("islands")
    size = get("size")
    pie = get("pie")
    try:
        variant = Variant(islands, size, pie)
    except ValueError as exc:
        raise ConfigError(
            str(exc),
            where=f"{where}.size",
            hint="Atoll sizes: 7, 11, 15, 19, 23; Hex (islands = 4): 2-26",
        ) from exc
    random_openings = get("random_openings")
    seed = get("seed")
    margin = get("margin")
    output_value = get("output", f"{name}.sqlite")
    output = resolved(here / output_value, f"{where}.output")
    if output == file.resolve() or not output_value.strip():
        raise ConfigError(
            f"{toml_value(output_value)} cannot be the results store",
            where=f"{where}.output",
            hint='give a new file name, e.g. output = "arena.sqlite"',
        )
    anchors_table = get("anchors") or {}
    anchors: dict[str, float] = {}
    for anchor, value in anchors_table.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or abs(value) > 100_000
        ):
            raise ConfigError(
                f"the anchor {toml_key(anchor)} needs an Elo number",
                where=f"{where}.anchors",
                hint="e.g. anchors = { heuristic = 1500 }",
            )
        anchors[anchor] = float(value)
    engines, conditions = parse_engines(
        file, here, table, data.get("engine", []), where, engines_here
    )
    players: dict[str, PlayerEntry] = {}
    listed = data.get("player", [])
    if not isinstance(listed, list):
        raise ConfigError(
            "player must be an array of tables",
            where=str(file),
            hint="write each remote engine as [[player]]; " + _EXAMPLE,
        )
    for number, entry in enumerate(listed, 1):
        spot = f"{file}: player #{number}"
        if not isinstance(entry, dict):
            raise ConfigError("must be a table", where=spot, hint=_EXAMPLE)
        PLAYER.refuse_unknown(
            entry, spot, hint="a [[player]] has name, token_hash and games_at_once"
        )
        player_name = PLAYER.get(entry, "name", spot)
        check_name(player_name, f"{spot}.name")
        spot = f"{file}: player {player_name!r}"
        if player_name in players or player_name in engines:
            raise ConfigError(
                f"duplicate name {toml_value(player_name)}",
                where=spot,
                hint="names are identities: make them unique",
            )
        token_hash = PLAYER.get(entry, "token_hash", spot)
        if token_hash is None or not valid_hash(token_hash):
            raise ConfigError(
                "token_hash is missing or not a hash",
                where=f"{spot}.token_hash",
                hint=_EXAMPLE + "; the file keeps the hash, never the token",
            )
        at_once = PLAYER.get(entry, "games_at_once", spot)
        players[player_name] = PlayerEntry(player_name, token_hash, at_once)
    for anchor in anchors:
        if anchor not in engines and anchor not in players:
            raise ConfigError(
                f"the anchor {toml_key(anchor)} is not an engine or player of the arena",
                where=f"{where}.anchors",
                hint="names: " + (", ".join([*engines, *players]) or "(none)"),
            )
    return Arena(
        path=file,
        name=name,
        host=host,
        port=port,
        tc=tc,
        variant=variant,
        random_openings=random_openings,
        seed=seed,
        margin=margin,
        output=output,
        latency_allowance=get("latency_allowance"),
        anchors=anchors,
        open_registration=get("open_registration"),
        disconnect_grace=get("disconnect_grace"),
        connections_per_address=get("connections_per_address"),
        logins_per_minute=get("logins_per_minute"),
        max_connections=get("max_connections"),
        frontends=get("frontends"),
        round_seconds=get("round_seconds"),
        max_loop_lag=get("max_loop_lag"),
        requests_per_minute=get("requests_per_minute"),
        messages_per_second=get("messages_per_second"),
        registration_hours=get("registration_hours"),
        command_timeout=get("command_timeout"),
        trusted_proxies=_proxies(table, where),
        players=players,
        engines=engines,
        engine_conditions=conditions,
        adjudicate=Adjudication(get("adjudicate")),
    )


def _proxies(table: Mapping[str, Any], where: str) -> frozenset[str]:
    """The reverse proxies whose `X-Forwarded-For` names the client (their own address
    would otherwise be every client's, for the limits)."""
    listed = ARENA.get(table, "trusted_proxies", where) or []
    out = set()
    for value in listed:
        try:
            out.add(str(ipaddress.ip_address(value)))
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{toml_value(value)} is not an IP address",
                where=f"{where}.trusted_proxies",
                hint='e.g. trusted_proxies = ["127.0.0.1"]',
            ) from exc
    return frozenset(out)
