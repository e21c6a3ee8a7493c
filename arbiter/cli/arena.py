"""`arbiter arena`: serve an arena, connect an engine to one, tokens, status, export."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import click

from arbiter.engines.config import resolve_engine
from arbiter.errors import ConfigError
from arbiter.results.store import resolved
from arbiter.running import run_trio
from arbiter.text import one_line

from . import options
from .options import examples
from .output import ConfigExit, emit, first_leaf, handle_errors, say
from .sources import show_arena_status
from .tournament import tournament_export


@click.group(
    "arena",
    epilog=examples(
        "arbiter arena serve arena.toml",
        "arbiter arena connect arena.example.org:8080 --name alice --token T mybot",
    ),
)
def arena() -> None:
    """A continuous rated ladder that engines connect to over the network."""


@arena.command(
    "serve",
    epilog=examples("arbiter arena serve arena.toml", "arbiter arena serve arena.toml -v"),
)
@click.argument("file", type=click.Path(dir_okay=False))
@options.log_options
@handle_errors
def arena_serve(file: str) -> None:
    """Run the arena of FILE until stopped: engines connect, play and are rated.

    The server listens on the file's `listen` address: browsers read the live page at
    `/`, engines connect at `/engine` (`arbiter arena connect`). Ctrl-C or SIGTERM stops
    it; games in flight are void and never stored, and the next start goes on from the
    store. TLS belongs in a reverse proxy in front (docs/guide/arena.md)."""
    from arbiter.arena.config import load_arena
    from arbiter.arena.serve import serve

    spec = load_arena(file)
    run_trio(functools.partial(serve, spec, lambda line: say(line, err=True)))


@arena.command(
    "connect",
    epilog=examples(
        "arbiter arena connect 127.0.0.1:8080 --name alice --token T heuristic",
        "arbiter arena connect wss://arena.example.org --name alice --token T"
        " 'alice=./alice --threads 4'",
    ),
)
@click.argument("address")
@click.argument("engine")
@click.option("--name", required=True, help="The name the arena knows this engine by.")
@click.option(
    "--token",
    default=None,
    envvar="ARBITER_ARENA_TOKEN",
    help="The token `arbiter arena token` printed (or set ARBITER_ARENA_TOKEN, which keeps"
    " it out of the process list).",
)
@options.engines_file(
    help="Engines file for ENGINE names (default: engines/engines.toml here, then the"
    " bundled bots).",
)
@click.option(
    "--sessions",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Engine processes to run, each playing one game at a time (up to the"
    " games_at_once of the arena's entry for NAME).",
)
@click.option(
    "--room",
    default=None,
    help="The room to play in, where the arena has several (its index page lists them).",
)
@options.log_options
@handle_errors
def arena_connect(
    address: str,
    engine: str,
    name: str,
    token: str | None,
    engines_file: str | None,
    sessions: int,
    room: str | None,
) -> None:
    """Run ENGINE here and relay it to the arena at ADDRESS until stopped.

    ADDRESS is HOST:PORT, or a ws:// or wss:// URL. ENGINE is a name from an engines
    file, a bundled bot or NAME=COMMAND, with its dialect keys. A dropped connection or a
    restarted server is reconnected to with backoff, and the engine is kept running
    across it; a refused name or token is one line and exit status 2."""
    from arbiter.arena.client import Refused, arena_url, connect
    from arbiter.engines.config import check_name

    if not token:
        raise ConfigError(
            "no token",
            where="--token",
            hint="give --token or set ARBITER_ARENA_TOKEN; the arena's"
            " organiser makes one with `arbiter arena token NAME`",
        )
    check_name(name, "--name")
    url = arena_url(address)
    spec = resolve_engine(engine, options.known_engines(engines_file))
    try:
        run_trio(
            functools.partial(
                connect, url, name, token, spec, lambda line: say(line, err=True), sessions, room
            )
        )
    except Refused as exc:
        raise ConfigExit(one_line(f"the arena refused {name}: {exc}")) from exc
    except BaseExceptionGroup as group:
        refused = group.subgroup(Refused)
        if refused is not None:
            raise ConfigExit(
                one_line(f"the arena refused {name}: {first_leaf(refused)}")
            ) from group
        raise


@arena.command(
    "token",
    epilog=examples("arbiter arena token alice", "arbiter arena token alice --games-at-once 2"),
)
@click.argument("name")
@click.option(
    "--games-at-once",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Games this engine may play at the same time.",
)
@handle_errors
def arena_token(name: str, games_at_once: int) -> None:
    """Print a new token for NAME on the first line, then the [[player]] entry to paste
    into the arena file (it holds a salted hash of the token, never the token)."""
    from arbiter.arena.config import hash_token, new_token
    from arbiter.engines.config import check_name

    check_name(name, "NAME")
    token = new_token()
    emit(token)
    entry = f'\n[[player]]\nname = {json.dumps(name)}\ntoken_hash = "{hash_token(token)}"\n'
    if games_at_once != 1:
        entry += f"games_at_once = {games_at_once}\n"
    emit(entry)
    say(
        f"Give the token (the first line) to {name}'s owner; paste the rest into the arena"
        " file and restart the server.",
        err=True,
    )


@arena.command(
    "status",
    epilog=examples(
        "arbiter arena status arena.toml",
        "arbiter arena status rooms.toml --room hex11 --json",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@options.as_json(help="One JSON object (with rooms: keyed by room name).")
@options.room(help="Only this room, where the arena file has rooms (default: every room).")
@handle_errors
def arena_status(file: str, as_json: bool, room: str | None) -> None:
    """The arena's games so far and its ratings (anchors held at theirs), from its store.

    It reads the store only, and works while the server runs. Where the file has rooms,
    each room in turn, headed by its name (a room without a store yet says so)."""
    from arbiter.arena.config import load_arena

    show_arena_status(load_arena(file, engines_here=False), room, as_json, strict=False)


@arena.command(
    "export",
    epilog=examples(
        "arbiter arena export arena.toml --records games.jsonl",
        "arbiter arena export rooms.toml --room hex11 --records hex11.jsonl",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@options.records_out(required=True, default=None)
@options.force()
@options.strict_store()
@options.room()
@click.pass_context
@handle_errors
def arena_export(
    ctx: click.Context, file: str, records_out: str, force: bool, strict: bool, room: str | None
) -> None:
    """Write the arena's games as records (what `ratings`, `report` and `show` read).

    Where the file has several rooms, --room names the one to write."""
    from .sources import arena_room

    spec = arena_room(file, room, "export writes one")
    if resolved(records_out, "--records") == spec.path.resolve():
        raise ConfigError(
            "the records file would overwrite the arena file",
            where=records_out,
            hint="choose a new .jsonl path",
        )
    ctx.invoke(
        tournament_export,
        file=str(spec.output),
        example=None,
        records_out=records_out,
        fmt=None,
        out=None,
        force=force,
        strict=strict,
        room=None,
    )


@arena.group(
    "player",
    epilog=examples(
        "arbiter arena player add arena.toml dave",
        'arbiter arena player ban arena.toml mallory --reason "plays an engine not its own"',
    ),
)
def arena_player() -> None:
    """Add, remove, ban or unban players while the arena runs, without a restart.

    The changes go to the players file beside the arena's store (NAME.players.json),
    never to the arena file; a running server takes them within a second. A banned or
    removed engine's games in play end and count; then its connection is closed."""


@arena_player.command(
    "add",
    epilog=examples(
        "arbiter arena player add arena.toml dave",
        "arbiter arena player add arena.toml dave --games-at-once 2",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("name")
@click.option(
    "--token-hash",
    default=None,
    help="The hash of a token made before (`arbiter arena token`); without it a new token"
    " is made and printed.",
)
@click.option(
    "--games-at-once",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Games this engine may play at the same time.",
)
@handle_errors
def arena_player_add(file: str, name: str, token_hash: str | None, games_at_once: int) -> None:
    """Let NAME log in to the arena of FILE: a new token is printed on stdout (give it
    to NAME's owner), unless --token-hash gives the hash of one."""
    from arbiter.arena.config import hash_token, load_arena, new_token
    from arbiter.arena.roster import add_player

    spec = load_arena(file, engines_here=False)
    token = new_token() if token_hash is None else None
    done = add_player(spec, name, token_hash or hash_token(token or ""), games_at_once)
    if token is not None:
        emit(token)
    say(done + ("; give the token (stdout) to its owner" if token is not None else ""), err=True)


@arena_player.command(
    "remove",
    epilog=examples(
        "arbiter arena player remove arena.toml dave",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("name")
@handle_errors
def arena_player_remove(file: str, name: str) -> None:
    """Remove NAME, a player added with `arena player add`: it logs in no more."""
    from arbiter.arena.roster import remove_player

    _change_players(file, remove_player, name)


@arena_player.command(
    "ban",
    epilog=examples(
        'arbiter arena player ban arena.toml mallory --reason "plays an engine not its own"',
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("name")
@click.option("--reason", default="", help="Why, as the engine's client is told.")
@handle_errors
def arena_player_ban(file: str, name: str, reason: str) -> None:
    """Ban NAME: it logs in and is paired no more; its games in play end and count."""
    from arbiter.arena.roster import ban_player

    _change_players(file, ban_player, name, reason)


@arena_player.command(
    "unban",
    epilog=examples(
        "arbiter arena player unban arena.toml mallory",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("name")
@handle_errors
def arena_player_unban(file: str, name: str) -> None:
    """Let a banned NAME log in again."""
    from arbiter.arena.roster import unban_player

    _change_players(file, unban_player, name)


def _change_players(file: str, change: Callable[..., str], *args: str) -> None:
    """One change to the players file of the arena `file`, said on stderr."""
    from arbiter.arena.config import load_arena

    say(change(load_arena(file, engines_here=False), *args), err=True)
