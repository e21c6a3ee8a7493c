"""`arbiter engines`: the engines known by name here, and what is wrong with a broken one."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import click

from arbiter.engines.config import KnownEngines
from arbiter.errors import ConfigError
from arbiter.text import one_line, terminal

from . import options
from .options import examples
from .output import emit, handle_errors, say


@click.command(
    "engines",
    epilog=examples("arbiter engines", "arbiter engines --engines my_engines.toml --json"),
)
@options.engines_file(
    help="TOML file defining engines by name (default: engines/engines.toml here, if any).",
)
@options.as_json(help="Print one JSON list.")
@handle_errors
def engines_command(engines_file: str | None, as_json: bool) -> None:
    """List the engines known by name here: the engines file's, then the bundled bots.

    A name in the engines file wins over a bundled bot of the same name; such a bundled
    bot is listed as overridden. The command is the one a match runs (in the folder
    shown), so it can be tried by hand.

    A broken entry is listed too, and named on stderr with what is wrong; the others can
    still be used. Exit status 1 when an entry is broken, 2 when the file cannot be read.
    """
    rows = engine_rows(options.known_engines(engines_file))
    if as_json:
        emit(json.dumps(rows, indent=2))
    else:
        from tabulate import tabulate

        table = [
            [
                terminal(r["name"]),
                terminal(r["from"]),
                terminal(shlex.join(r["command"])) if r["command"] else "(broken: see below)",
            ]
            for r in rows
        ]
        say(tabulate(table, headers=["engine", "from", "command"], tablefmt="simple"))
        say()
        say(
            "Bundled bots run in the installed package's bots folder; an engines file's run in"
            " its folder unless it sets cwd. Use a name as ENGINE in `match` and `check`, or in"
            " a tournament's engines list."
        )
    broken = [r for r in rows if "problem" in r]
    for r in broken:
        say(f"error: {terminal(r['problem'])}", err=True)
    if broken:
        names = ", ".join(r["name"] for r in broken)
        say(
            f"{len(broken)} of {len(rows)} entries broken ({terminal(names)}): fix"
            f" or remove them; the other {len(rows) - len(broken)} can be used.",
            err=True,
        )
        sys.exit(1)


def engine_rows(known: KnownEngines) -> list[dict[str, Any]]:
    """Every entry of the engines file, then every bundled bot: its name, where it is
    from, the command a match runs and its folder, or what is wrong with it."""
    rows: list[dict[str, Any]] = []
    for book in known.books:
        for key in book:
            entry: dict[str, Any] = {
                "name": key,
                "from": "bundled" if book.bundled else str(book.path),
            }
            if book.bundled and known.user is not None and key in known.user:
                entry["from"] = f"bundled, overridden by {known.user.path}"
            try:
                spec = book.spec(key, local=False)
            except ConfigError as exc:
                entry.update(command=None, cwd=None, problem=one_line(str(exc)))
            else:
                entry.update(command=list(spec.argv), cwd=spec.cwd)
            rows.append(entry)
    return rows
