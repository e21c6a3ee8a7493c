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
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.engines.config import check_name, read_toml
from arbiter.engines.process import EngineSpec
from arbiter.errors import ConfigError
from arbiter.results.store import resolved
from arbiter.rules import Variant
from arbiter.rules.clock import TC_HELP, TimeControl
from arbiter.runs.schedule import DEFAULT_RANDOM_OPENINGS
from arbiter.runs.tournament import parse_engines, typed_key
from arbiter.text import toml_key, toml_value

TOKEN_BYTES = 24
_HASH = "sha256"

_ARENA_KEYS: dict[str, type] = {
    "name": str,
    "listen": str,
    "tc": str,
    "size": int,
    "islands": int,
    "pie": bool,
    "random_openings": int,
    "seed": int,
    "margin": float,
    "output": str,
    "latency_allowance": float,
    "anchors": dict,
    "open_registration": bool,
    "disconnect_grace": float,
    "connections_per_address": int,
    "logins_per_minute": int,
    "max_connections": int,
    "sandbox": bool,
    "limits": dict,
    "engines": list,
    "engines_file": str,
    "command_timeout": float,
    "trusted_proxies": list,
}
_PLAYER_KEYS: dict[str, type] = {"name": str, "token_hash": str, "games_at_once": int}
_TOP_KEYS = {"arena", "player", "engine"}
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
    command_timeout: float
    trusted_proxies: frozenset[str]
    players: Mapping[str, PlayerEntry]
    engines: Mapping[str, EngineSpec]
    engine_conditions: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    def conditions(self) -> dict[str, Any]:
        """What the arena's games are played under, as a store keeps a tournament's."""
        v = self.variant
        return {
            "format": "arena",
            "tc": str(self.tc),
            "size": v.size,
            "islands": v.islands,
            "pie": v.pie,
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


def _get(
    table: Mapping[str, Any],
    key: str,
    where: str,
    default: Any,
    keys: Mapping[str, type] = _ARENA_KEYS,
) -> Any:
    return typed_key(table, key, where, default, keys)


def _number(
    table: Mapping[str, Any], key: str, where: str, default: float, low: float, high: float
) -> float:
    value = float(_get(table, key, where, default))
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"must be between {low:g} and {high:g}", where=f"{where}.{key}")
    return value


def _count(
    table: Mapping[str, Any], key: str, where: str, default: int, low: int, high: int
) -> int:
    value = int(_get(table, key, where, default))
    if not low <= value <= high:
        raise ConfigError(f"must be between {low} and {high}", where=f"{where}.{key}")
    return value


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
    here = file.resolve().parent
    where = f"{file}: arena"
    unknown_top = set(data) - _TOP_KEYS
    if unknown_top:
        raise ConfigError(
            f"unknown table(s) or key(s) {', '.join(sorted(unknown_top))}",
            where=str(file),
            hint="an arena file has [arena], [[player]] and [[engine]] tables",
        )
    table = data.get("arena")
    if not isinstance(table, dict):
        raise ConfigError(
            "no [arena] table",
            where=str(file),
            hint='start the file with [arena], name = "..." and listen = "127.0.0.1:8080"',
        )
    unknown = set(table) - set(_ARENA_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(sorted(unknown))}",
            where=where,
            hint=f"allowed keys: {', '.join(sorted(_ARENA_KEYS))}",
        )
    name = _get(table, "name", where, file.stem)
    check_name(name, f"{where}.name")
    listen = _get(table, "listen", where, None)
    if listen is None:
        raise ConfigError("listen is missing", where=where, hint='e.g. listen = "127.0.0.1:8080"')
    host, port = parse_listen(listen, f"{where}.listen")
    try:
        tc = TimeControl.parse(_get(table, "tc", where, "10+0.1"))
    except ConfigError as exc:
        raise exc.located(f"{where}.tc") from exc
    if tc.infinite:
        raise ConfigError("an arena needs a clock", where=f"{where}.tc", hint=TC_HELP)
    islands = _get(table, "islands", where, 8)
    size = _get(table, "size", where, 11)
    pie = _get(table, "pie", where, True)
    try:
        variant = Variant(islands, size, pie)
    except ValueError as exc:
        raise ConfigError(
            str(exc),
            where=f"{where}.size",
            hint="Atoll sizes: 7, 11, 15, 19, 23; Hex (islands = 4): 2-26",
        ) from exc
    random_openings = _count(table, "random_openings", where, DEFAULT_RANDOM_OPENINGS, 0, 1)
    seed = _get(table, "seed", where, 1)
    margin = _number(table, "margin", where, 0.1, 0, 60)
    output_value = _get(table, "output", where, f"{name}.sqlite")
    output = resolved(here / output_value, f"{where}.output")
    if output == file.resolve() or not output_value.strip():
        raise ConfigError(
            f"{toml_value(output_value)} cannot be the results store",
            where=f"{where}.output",
            hint='give a new file name, e.g. output = "arena.sqlite"',
        )
    anchors_table = _get(table, "anchors", where, {})
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
        extra = set(entry) - set(_PLAYER_KEYS)
        if extra:
            raise ConfigError(
                f"unknown key(s) {', '.join(sorted(extra))}",
                where=spot,
                hint="a [[player]] has name, token_hash and games_at_once",
            )
        player_name = _get(entry, "name", spot, None, _PLAYER_KEYS)
        check_name(player_name, f"{spot}.name")
        spot = f"{file}: player {player_name!r}"
        if player_name in players or player_name in engines:
            raise ConfigError(
                f"duplicate name {toml_value(player_name)}",
                where=spot,
                hint="names are identities: make them unique",
            )
        token_hash = _get(entry, "token_hash", spot, None, _PLAYER_KEYS)
        if token_hash is None or not valid_hash(token_hash):
            raise ConfigError(
                "token_hash is missing or not a hash",
                where=f"{spot}.token_hash",
                hint=_EXAMPLE + "; the file keeps the hash, never the token",
            )
        at_once = _get(entry, "games_at_once", spot, 1, _PLAYER_KEYS)
        if not 1 <= at_once <= 64:
            raise ConfigError("must be between 1 and 64", where=f"{spot}.games_at_once")
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
        latency_allowance=_number(table, "latency_allowance", where, 0.25, 0, 10),
        anchors=anchors,
        open_registration=bool(_get(table, "open_registration", where, False)),
        disconnect_grace=_number(table, "disconnect_grace", where, 10.0, 0, 600),
        connections_per_address=_count(table, "connections_per_address", where, 32, 1, 100_000),
        logins_per_minute=_count(table, "logins_per_minute", where, 60, 1, 1_000_000),
        max_connections=_count(table, "max_connections", where, 4096, 1, 1_000_000),
        command_timeout=_number(table, "command_timeout", where, 10.0, 0.5, 600),
        trusted_proxies=_proxies(table, where),
        players=players,
        engines=engines,
        engine_conditions=conditions,
    )


def _proxies(table: Mapping[str, Any], where: str) -> frozenset[str]:
    """The reverse proxies whose `X-Forwarded-For` names the client (their own address
    would otherwise be every client's, for the limits)."""
    listed = _get(table, "trusted_proxies", where, [])
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
