"""Engine definitions from TOML files and engine arguments from the command line.

An engines file names engines so that commands stay short:

    [engines.mc]
    command = ["{python}", "mc_bot.py", "--playouts", "1024"]
    # cwd defaults to this file's folder; {python} is the interpreter running arbiter
    name = "mc-1k"          # display name; defaults to the table key
    env = { OMP_NUM_THREADS = "1" }
    tc = "10+0.1"           # this engine's own time control (a match's --tc overrides it)
    sandbox = true          # run it under bubblewrap (see docs/guide/sandbox.md)
    read = ["/data/mc-weights.bin"]  # what a sandboxed engine may read besides its own
                                     # program folder (relative paths: from this file)
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from arbiter.definitions import Key, Keys, read_toml
from arbiter.engines import sandbox
from arbiter.engines.dialect import Dialect, TimeFamily
from arbiter.engines.params import placeholders
from arbiter.engines.process import BOTS_FOLDER, Deadlines, EngineSpec
from arbiter.engines.sandbox import Limits, parse_limits
from arbiter.errors import ConfigError
from arbiter.protocol.codec import is_token
from arbiter.rules import Variant
from arbiter.rules.clock import TC_HELP, ClockMode, TimeControl
from arbiter.text import toml_value

MAX_TIMEOUT = 3600.0  # seconds: an hour is long for any start-up, and a typo for more
_GUIDE = "../guide"  # the reference page's links, relative to docs/reference/

# The keys of an engine definition (an engines file's [engines.KEY] table, a
# tournament's or an arena's [[engine]]), in the order the reference lists them. Most
# have a grammar of their own, read by `engine_definition` and its helpers below.
ENGINE = Keys(
    Key(
        "command",
        object,
        "how to start it; `{python}` is the interpreter running arbiter, `{here}` the"
        " file's folder",
        shown="(required)",
        type_text="list of strings, or a string split like a shell",
    ),
    Key(
        "cwd",
        str,
        "its working folder, relative to the file",
        default=".",
        shown="the file's folder",
    ),
    Key("env", dict, "added to its environment", type_text="table of strings"),
    Key(
        "name",
        str,
        "its name in results (required and unique in a tournament)",
        shown="the key",
    ),
    Key(
        "tc",
        str,
        "its own time control (in a match, `--tc` wins over it; in a tournament it wins"
        " over the tournament's `tc`)",
        type_hint=TC_HELP,
    ),
    Key(
        "options",
        list,
        "whole command lines sent after the handshake, before the first game (e.g. the"
        " engine's own parameter commands); each word printable ASCII without `#`, checked"
        " when the file is read; a `?` answer stops the run naming the option",
        type_text="list of strings",
    ),
    Key(
        "islands",
        list,
        "the variants it plays when it does not list `atoll-islands`: `[4]` for a Hex program",
        shown="`[8]`",
        type_text="list of integers",
    ),
    Key(
        "sizes",
        list,
        "the board sizes it plays; a size it does not declare, or a `boardsize` it"
        " answers with `?`, is a configuration error before any game (exit 2)",
        shown="any",
        type_text="list of integers",
    ),
    Key(
        "swap",
        str,
        "how the pie move is spelled on the wire, both ways (Benzene engines say"
        " `swap-pieces`); one word of printable ASCII without `#`, checked when the file"
        " is read",
        default="swap",
    ),
    Key(
        "set_param",
        str,
        "the command that sets a tuned parameter without a `{NAME}` placeholder in"
        " `command`, sent during each game's set-up as `WORD NAME VALUE`:"
        ' `"kata-set-param"` for KataGo-style engines, `"param_mohex"` for MoHex\'s'
        " GoGui parameters; one word of printable ASCII without `#` (see [Tuning]"
        f"({_GUIDE}/tuning.md#parameters-by-protocol))",
        shown="`atoll-set-param` if it lists it",
    ),
    Key(
        "solve_command",
        str,
        "the command that asks it for the winner of the position it was given, when a"
        " tournament names it as its `solver`: answered `black` or `white` (a win proven"
        " by its search), anything else when it does not know (MoHex:"
        ' `"dfpn-solve-state"`; see [Adjudication]'
        f"({_GUIDE}/adjudication.md#an-outside-judge)); words of printable ASCII without `#`",
    ),
    Key(
        "solve_budget_command",
        str,
        "the command its time budget in seconds (the tournament's `solve_budget`) is"
        ' appended to before each `solve_command` (MoHex: `"param_dfpn timelimit"`);'
        " none: it is only given that long to answer",
    ),
    Key(
        "time",
        str,
        "which clock commands it is told: `atoll`, `gtp` or `none` (by default `atoll` if"
        " it lists `atoll-time_settings` and `atoll-time_left`, else `gtp` if it lists"
        " `time_settings` and `time_left`, else none; its clock runs all the same)",
        shown="from its commands",
    ),
    Key(
        "sandbox",
        bool,
        f"run it under bubblewrap (see [Untrusted bots]({_GUIDE}/sandbox.md); a"
        " tournament's `sandbox` is the default)",
        default=False,
    ),
    Key(
        "limits",
        dict,
        "`memory_mb`, `cpu_s`, `processes`, `disk_mb` (a tournament's `limits` fill the"
        f" ones not set here; see [Limits]({_GUIDE}/sandbox.md#limits))",
        type_text="table of positive integers",
    ),
    Key(
        "read",
        list,
        "host paths (files or folders, relative to the file; each must exist) a sandboxed"
        " engine may read besides its own folder: separate weights, opening books (see"
        f" [What it can read]({_GUIDE}/sandbox.md#what-it-can-read))",
        type_text="list of strings",
    ),
    Key(
        "start_timeout",
        float,
        "seconds it has to start and answer the handshake (`protocol_version`, `name`,"
        f" `version`, `list_commands`), above 0 and at most {MAX_TIMEOUT:g}; for engines that load"
        " large weights. `arbiter check --timeout` overrides it",
        shown=f"{Deadlines.handshake:g}",
        low=0,
        above=True,
        high=MAX_TIMEOUT,
        unit=" seconds",
        hint="e.g. start_timeout = 120 for an engine that loads large weights",
    ),
    Key(
        "command_timeout",
        float,
        "seconds it has to answer every other command but a move (setting up a game, its"
        f" options, clock commands), above 0 and at most {MAX_TIMEOUT:g}; moves are timed by the"
        " clock",
        shown=f"{Deadlines.command:g}",
        low=0,
        above=True,
        high=MAX_TIMEOUT,
        unit=" seconds",
        hint="e.g. command_timeout = 60 for an engine slow to set up a game",
    ),
    Key(
        "clock",
        str,
        "what its clock charges, whatever the competition's `clock`: `wall` for an engine"
        " that computes elsewhere (a GPU, a server), `cpu` for the CPU time of its own"
        f" processes (see [Clocks]({_GUIDE}/clocks.md))",
        choices=("wall", "cpu"),
        shown="the competition's",
    ),
    Key(
        "threads",
        int,
        "how many cores it uses (its search threads): its cores under a tournament's"
        " `affinity`, and the warning when slots would share cores",
        default=1,
        low=1,
        high=1024,
    ),
    sort=False,
)
ENGINE_KEYS = ENGINE.names()


def _expand(word: str, here: Path) -> str:
    return word.replace("{python}", sys.executable).replace("{here}", str(here))


class EnginesFile:
    """The engines of an engines file, each checked when it is used: one broken entry
    does not keep the others from playing."""

    def __init__(
        self, path: str | os.PathLike[str], *, bundled: bool = False, origin: str = "--engines"
    ) -> None:
        """`origin` names what gave the path (an option, a file's key), for the hint
        when the file cannot be read."""
        self.path = Path(path)
        self.bundled = bundled
        data = read_toml(self.path, "engines file", f"check the path given with {origin}")
        tables = data.get("engines")
        if not isinstance(tables, dict) or not tables:
            raise ConfigError(
                "no [engines.NAME] tables",
                where=str(self.path),
                hint='define engines like [engines.mc] with command = ["{python}", "mc_bot.py"]',
            )
        self.tables: dict[str, Any] = tables
        self.here = self.path.resolve().parent

    def __contains__(self, key: object) -> bool:
        return key in self.tables

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables)

    def spec(self, key: str, *, local: bool = True) -> EngineSpec:
        spec = engine_definition(
            self.tables[key], where=self.where(key), here=self.here, default_name=key, local=local
        )
        return replace(spec, bundled=True) if self.bundled else spec

    def where(self, key: str) -> str:
        """Where a definition comes from, for messages and `arbiter engines`."""
        return f"bundled bot {key!r}" if self.bundled else f"{self.path}: engines.{key}"


BUNDLED_FILE = BOTS_FOLDER / "engines.toml"


@functools.cache
def bundled() -> EnginesFile:
    """The bots installed with arbiter, known by name from any folder and on any worker."""
    return EnginesFile(BUNDLED_FILE, bundled=True)


class KnownEngines:
    """The engines known by name here: the user's engines file, then the bundled bots.

    The user's file comes first, so a user's definition of a bundled name (`mcts`, say)
    is the one that plays; `arbiter engines` shows which.
    """

    def __init__(self, user: EnginesFile | None) -> None:
        self.user = user
        self.books = [book for book in (user, bundled()) if book is not None]

    def book(self, key: str) -> EnginesFile | None:
        return next((book for book in self.books if key in book), None)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.book(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(key for book in self.books for key in book))

    def spec(self, key: str, *, local: bool = True) -> EngineSpec:
        book = self.book(key)
        if book is None:
            raise KeyError(key)
        return book.spec(key, local=local)

    def searched(self) -> str:
        """Where names were looked for, for a message about a name found nowhere."""
        if self.user is None:
            return "the bundled bots (no engines file was read)"
        return f"{self.user.path} and the bundled bots"


def unread_engines_file(folder: Path, user: EnginesFile | None) -> Path | None:
    """An `engines.toml` in `folder` that was not read: a name defined there is unknown,
    and the message should say how to name the file."""
    candidate = folder / "engines.toml"
    if not candidate.is_file():
        return None
    if user is not None and user.path.resolve() == candidate.resolve():
        return None
    return candidate


def default_engines_file() -> Path | None:
    """An engines file found without --engines: `engines/engines.toml` in this folder."""
    candidate = Path.cwd() / "engines" / "engines.toml"
    return candidate if candidate.is_file() else None


def load_engines(path: str | os.PathLike[str]) -> dict[str, EngineSpec]:
    """Read an engines file and check every engine in it."""
    book = EnginesFile(path)
    return {key: book.spec(key) for key in book}


def engine_definition(
    table: Any, *, where: str, here: Path, default_name: str | None = None, local: bool = True
) -> EngineSpec:
    """The one reader of an engine definition, for engines files and tournament files.

    `command` is an argv list or a string split like a shell; `cwd` (default: the folder
    of the defining file) and relative program paths are resolved from that folder;
    `{python}` is the interpreter running arbiter; `env` is added to the environment;
    `name` is the display name (required where `default_name` is None); `tc` is the
    engine's own time control; `read` lists host paths (relative to that folder) a
    sandboxed engine may read besides its own program folder.
    """
    if not isinstance(table, dict):
        raise ConfigError(
            "must be a table", where=where, hint='e.g. command = ["{python}", "my_bot.py"]'
        )
    ENGINE.refuse_unknown(table, where)
    command = table.get("command")
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(
                f"cannot split command: {exc}",
                where=f"{where}.command",
                hint="check the quotes, or give a list of words",
            ) from exc
    elif isinstance(command, list) and all(isinstance(w, str) for w in command):
        argv = list(command)
    else:
        raise ConfigError(
            "command is missing or not a string or list of strings",
            where=where,
            hint='e.g. command = ["{python}", "my_bot.py"]',
        )
    if not argv:
        raise ConfigError("command is empty", where=f"{where}.command")
    cwd_value = ENGINE.get(table, "cwd", where)
    try:
        cwd = (here / _expand(cwd_value, here)).resolve()
        folder = cwd.is_dir()
    except (OSError, RuntimeError) as exc:  # a name too long, a link loop
        why = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(
            f"cwd {cwd_value[:80]!r} cannot be used: {why}", where=f"{where}.cwd"
        ) from exc
    if local and not folder:
        raise ConfigError(f"cwd {str(cwd)!r} is not a folder", where=f"{where}.cwd")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(
            "env must be a table of strings",
            where=f"{where}.env",
            hint='e.g. env = { OMP_NUM_THREADS = "1" }',
        )
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ConfigError(
                f"{key!r} is not a valid environment variable",
                where=f"{where}.env",
                hint="names are non-empty, without '=' or NUL; values without NUL",
            )
    name = table.get("name", default_name)
    if name is None:
        raise ConfigError(
            "name is missing",
            where=where,
            hint='every engine needs a unique name = "..."; results are keyed by it',
        )
    check_name(name, f"{where}.name")
    tc = None
    if "tc" in table:
        try:
            tc = TimeControl.parse(ENGINE.get(table, "tc", where))
        except ConfigError as exc:
            raise exc.located(f"{where}.tc") from exc
    confined = ENGINE.get(table, "sandbox", where)
    limits = parse_limits(table["limits"], f"{where}.limits") if "limits" in table else Limits()
    spec = EngineSpec(
        argv=tuple(_expand(w, here) for w in argv),
        name=name,
        cwd=str(cwd),
        env=env or None,
        tc=tc,
        options=_options(table, where),
        dialect=dialect_from(table, where),
        sandbox=confined,
        limits=limits,
        read=_read(table, where, here, local),
        cwd_given="cwd" in table,
        start_timeout=ENGINE.get(table, "start_timeout", where),
        command_timeout=ENGINE.get(table, "command_timeout", where),
        threads=ENGINE.get(table, "threads", where),
        clock=None if "clock" not in table else ClockMode(ENGINE.get(table, "clock", where)),
    )
    if local:  # else the engine runs elsewhere (Dask workers), which checks it there
        check_executable(spec, where)
        check_confinement(spec, where)
    return spec


NAME_MAX = 100


def check_name(name: Any, where: str) -> None:
    """A name from a file is an identity printed in tables, progress lines and records:
    one line of visible characters, so it can never forge output or recolour a terminal."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("name must be a non-empty string", where=where)
    if not name.isprintable():
        bad = next(ch for ch in name if not ch.isprintable())
        raise ConfigError(
            f"name {name!r} holds the control character {bad!r}",
            where=where,
            hint="use visible characters only (no newline, tab or escape)",
        )
    if len(name) > NAME_MAX:
        raise ConfigError(
            f"name is {len(name)} characters long", where=where, hint=f"use at most {NAME_MAX}"
        )


def check_confinement(spec: EngineSpec, where: str) -> None:
    """Stop before any game when the engine's sandbox or limits cannot be had here, or
    when its sandbox would hold files that the user it runs as cannot read."""
    if spec.sandbox:
        sandbox.require(where)
        view = sandbox.view(spec.argv, spec.cwd, cwd_given=spec.cwd_given, read=spec.read)
        for bind in sandbox.unreadable(view):
            raise ConfigError(
                sandbox.unreadable_message(bind),
                where=f"{where}.{bind.why}" if bind.why != "program" else where,
            )
    sandbox.check_limits(spec.limits, f"{where}.limits")


_READ_HINT = 'e.g. read = ["/data/weights.bin", "books"] (relative paths: from this file\'s folder)'


def _read(table: dict[str, Any], where: str, here: Path, local: bool) -> tuple[str, ...]:
    """The `read` key: host paths a sandboxed engine may read, each one existing."""
    value = table.get("read", [])
    if not (isinstance(value, list) and all(isinstance(p, str) and p.strip() for p in value)):
        raise ConfigError(
            "read must be a list of paths (strings)", where=f"{where}.read", hint=_READ_HINT
        )
    paths = []
    for entry in value:
        if "\0" in entry:
            raise ConfigError("a read path holds a NUL character", where=f"{where}.read")
        path = os.path.normpath(here / _expand(entry, here))
        if local and not os.path.exists(path):
            raise ConfigError(
                f"read path {entry!r} does not exist (looked for {path})",
                where=f"{where}.read",
                hint="fix the path, or remove it from read",
            )
        if path == "/":
            raise ConfigError(
                "read must not hold / (the whole host)", where=f"{where}.read", hint=_READ_HINT
            )
        paths.append(path)
    return tuple(dict.fromkeys(paths))


def shared_folder_warnings(specs: Mapping[str, EngineSpec]) -> list[str]:
    """Warnings for sandboxed engines of one run that can read each other's files.

    Engines of one program (the same program files, seeing the same folders) that differ
    only in other arguments, as seeds or levels of one bot, keep no secret from each
    other: they are compared once, as one program playing itself is.
    """
    views: dict[str, sandbox.View] = {}
    seen: set[tuple[object, ...]] = set()
    for name, spec in specs.items():
        if not spec.sandbox:
            continue
        view = sandbox.view(spec.argv, spec.cwd, cwd_given=spec.cwd_given, read=spec.read)
        here = os.path.abspath(spec.cwd or os.getcwd())
        files = tuple(
            os.path.realpath(os.path.join(here, word))
            for word in spec.argv
            if os.path.isfile(os.path.join(here, word))
        )
        same = (view.start, view.binds, files)
        if same not in seen:
            seen.add(same)
            views[name] = view
    return [f"warning: {line}" for line in sandbox.shared_folders(views)]


def _options(table: dict[str, Any], where: str) -> tuple[str, ...]:
    options = table.get("options", [])
    if not (isinstance(options, list) and all(isinstance(o, str) and o.split() for o in options)):
        raise ConfigError(
            "options must be a list of command lines",
            where=f"{where}.options",
            hint='e.g. options = ["param_game allow_swap 1"]',
        )
    for line in options:
        bad = [word for word in line.split() if not is_token(word)]
        if bad:
            raise ConfigError(
                f"options line {toml_value(line)}: {toml_value(bad[0])} is not a word an"
                " engine can be sent (printable ASCII, no #)",
                where=f"{where}.options",
                hint="spell the option in ASCII, as the engine's own documentation does",
            )
    return tuple(" ".join(o.split()) for o in options)


def _int_list(
    table: dict[str, Any], key: str, where: str, allowed: Any, hint: str, what: str
) -> tuple[int, ...] | None:
    """A list of integers each in `allowed`; an error names the entry that is not
    (`what` says what each must be)."""
    if key not in table:
        return None
    value = table[key]
    if not (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise ConfigError(
            f"{key} must be a non-empty list of integers, not {toml_value(value)}",
            where=f"{where}.{key}",
            hint=hint,
        )
    for v in value:
        if v not in allowed:
            raise ConfigError(
                f"{key} = {toml_value(value)}: {v} is not {what}", where=f"{where}.{key}", hint=hint
            )
    return tuple(value)


def dialect_from(table: dict[str, Any], where: str) -> Dialect:
    """The engine's declared dialect: what it plays and how it says it."""
    islands = _int_list(
        table,
        "islands",
        where,
        (4, 8),
        "e.g. islands = [4] for Hex, [8] for Atoll",
        "an island count of a variant: 8 (Atoll) or 4 (Hex)",
    )
    sizes = _int_list(
        table, "sizes", where, range(2, 27), "e.g. sizes = [11, 13]", "a board size (2 to 26)"
    )
    swap = table.get("swap", "swap")
    if not (isinstance(swap, str) and swap and is_token(swap)):
        raise ConfigError(
            f"swap must be one plain ASCII word (no space, no #), not {toml_value(swap)}",
            where=f"{where}.swap",
            hint='e.g. swap = "swap-pieces"',
        )
    time = table.get("time")
    if time is not None and (
        not isinstance(time, str) or time not in {f.value for f in TimeFamily}
    ):
        raise ConfigError(
            f"time must be atoll, gtp or none, not {toml_value(time)}",
            where=f"{where}.time",
            hint="atoll: atoll-time_* commands; gtp: time_settings and time_left;"
            " none: no clock commands",
        )
    if islands is not None and sizes is not None:
        playable = [(k, n) for k in islands for n in sizes if _variant_ok(k, n)]
        if not playable:
            raise ConfigError(
                f"no declared size is a board of the declared islands {islands}",
                where=f"{where}.sizes",
                hint="Atoll sizes are 7, 11, 15, 19 and 23; Hex 2 to 26",
            )
    set_param = table.get("set_param")
    if set_param is not None and not (
        isinstance(set_param, str) and set_param and is_token(set_param)
    ):
        raise ConfigError(
            f"set_param must be one plain ASCII word (no space, no #), not {toml_value(set_param)}",
            where=f"{where}.set_param",
            hint='e.g. set_param = "kata-set-param"',
        )
    return Dialect(
        islands=islands,
        sizes=sizes,
        swap=swap.lower(),
        time=None if time is None else TimeFamily(time),
        set_param=set_param,
        solve=_words(table, "solve_command", where, '"dfpn-solve-state"'),
        solve_budget=_words(table, "solve_budget_command", where, '"param_dfpn timelimit"'),
    )


def _words(table: dict[str, Any], key: str, where: str, example: str) -> tuple[str, ...] | None:
    """A command of a definition, as the words sent: checked when the file is read."""
    value = table.get(key)
    if value is None:
        return None
    words = value.split() if isinstance(value, str) else []
    if not words or not all(is_token(w) for w in words):
        raise ConfigError(
            f"{key} must be a command of plain ASCII words (no #), not {toml_value(value)}",
            where=f"{where}.{key}",
            hint=f"e.g. {key} = {example}",
        )
    return tuple(words)


def _variant_ok(islands: int, size: int) -> bool:
    try:
        Variant(islands, size)
    except ValueError:
        return False
    return True


def check_executable(spec: EngineSpec, where: str) -> None:
    """Fail early, as a usage error, when the engine's program does not exist."""
    try:
        _check_executable(spec, where)
    except OSError as exc:  # a name too long, a link loop
        raise ConfigError(
            f"engine program {spec.argv[0][:80]!r} cannot be checked: {exc.strerror}",
            where=where,
            hint="fix the path",
        ) from exc


def _check_executable(spec: EngineSpec, where: str) -> None:
    program = spec.argv[0]
    if "\0" in "".join(spec.argv):
        raise ConfigError("the command holds a NUL character", where=where)
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(spec.cwd or ".") / program
        if path.is_dir():
            raise ConfigError(
                f"engine program {program!r} is a folder, not a program",
                where=where,
                hint="give the engine's executable or script inside it, e.g. 'python3"
                " my_bot/main.py'",
            )
        if not path.exists():
            raise ConfigError(
                f"engine program {program!r} does not exist"
                + (f" (looked in {spec.cwd})" if spec.cwd else ""),
                where=where,
                hint="fix the path, or put the interpreter first, e.g. 'python3 bot.py'",
            )
        if not os.access(path, os.X_OK):
            raise ConfigError(
                f"engine program {program!r} is not executable",
                where=where,
                hint=f"run 'chmod +x {program}' or put the interpreter first",
            )
    elif shutil.which(program) is None:
        raise ConfigError(
            f"engine program {program!r} is not on PATH",
            where=where,
            hint="give a path to it, or install it",
        )


def resolve_engine(text: str, engines: KnownEngines, *, local: bool = True) -> EngineSpec:
    """An ENGINE argument: a name known here (the engines file's, then a bundled bot's),
    a command line, or NAME=COMMAND (a command line with the name its results go under).
    Its program is looked for here only when it runs here (`local`): on a cluster the
    workers' preflight checks it."""
    if text in engines:
        spec = engines.spec(text, local=local)
        unfilled = placeholders(spec.argv)
        if unfilled:
            book = engines.book(text)
            raise ConfigError(
                f"the command's placeholder {{{unfilled[0]}}} is not filled by anything",
                where=f"{book.where(text) if book else text}.command",
                hint='only a tune (a tournament file with format = "spsa") fills'
                " placeholders; write the value in the command, or tune it",
            )
        return spec
    name = None
    head, sep, rest = text.partition("=")
    if sep and head and rest.strip() and all(c.isalnum() or c in "-_.#+" for c in head):
        name, text = head, rest
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"cannot split engine command {text!r}: {exc}") from exc
    if not argv:
        raise ConfigError("empty engine command", hint="give a command line or an engine name")
    if len(argv) == 1 and os.sep not in text and shutil.which(text) is None and name is None:
        unread = unread_engines_file(Path.cwd(), engines.user)
        hint = (
            f"{unread} is not read (only --engines FILE, else engines/engines.toml): give"
            f" --engines {unread.name}"
            if unread is not None
            else f"known engine names: {', '.join(sorted(engines))} (`arbiter engines` lists"
            " them); or give a command line such as 'python3 my_bot.py'"
        )
        raise ConfigError(f"unknown engine {text!r}: not in {engines.searched()}", hint=hint)
    spec = EngineSpec(argv=tuple(argv), name=name)
    if local:
        check_executable(spec, f"engine {text!r}")
    return spec


def _sha256(path: Path) -> str | None:
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def program_hashes(spec: EngineSpec) -> tuple[str | None, str | None]:
    """SHA-256 of the program run and, for an interpreter running a script, the script:
    the first argument that names a file (with or without a suffix)."""
    cwd = Path(spec.cwd or ".")
    program = spec.argv[0]
    found = shutil.which(program, path=os.environ.get("PATH")) if os.sep not in program else None
    program_path = Path(found) if found else cwd / program
    script = None
    for arg in spec.argv[1:]:
        candidate = cwd / arg
        if not arg.startswith("-") and candidate.is_file():
            script = candidate
            break
    return _sha256(program_path), (_sha256(script) if script else None)
