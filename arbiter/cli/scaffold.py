"""Starting points a user edits: a new bot from the skeleton, a new tournament file.

They are written only where nothing exists yet: a starting point never replaces work.
"""

from __future__ import annotations

import json
import os
import stat
import textwrap
from collections.abc import Sequence
from pathlib import Path

from arbiter.cli.outfile import STDOUT, write_lines
from arbiter.engines.config import bundled, check_name
from arbiter.engines.process import BOTS_FOLDER
from arbiter.errors import ArbiterInternalError, ConfigError

SKELETON = BOTS_FOLDER / "skeleton.py"
# The one line of the skeleton that names the bot; `bot_source` fills it in.
NAME_LINE = '    name = "skeleton"  # change this: match results and tables show it\n'
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def examples() -> list[str]:
    """The tournament files installed with arbiter (`--example NAME`)."""
    return sorted(p.stem for p in EXAMPLES.glob("*.toml"))


# What a starting point written to standard output (`-`) is called in it, as if saved so.
STDOUT_NAMES = {"bot": "my_bot.py", "tournament": "league.toml"}


def saved_as(path: str, kind: str) -> str:
    """The file name a starting point speaks of: its own, or the one suggested for `-`."""
    return STDOUT_NAMES[kind] if path == STDOUT else path


def _label(path: str, name: str | None, where: str) -> str:
    label = name if name is not None else Path(path).stem
    check_name(label, where)
    return label


def bot_source(name: str) -> str:
    text = SKELETON.read_text(encoding="utf-8")
    if text.count(NAME_LINE) != 1:
        raise ArbiterInternalError("the bot skeleton's name line has changed")
    literal = json.dumps(name, ensure_ascii=False)  # also a Python string literal
    return text.replace(NAME_LINE, f"    name = {literal}  # match results and tables show it\n")


def _refuse_existing(path: str) -> None:
    if path != STDOUT and os.path.lexists(path):
        raise ConfigError(
            "the file exists and was left alone",
            where=path,
            hint="choose a new file name: `new` never replaces a file",
        )


def new_bot(path: str, name: str | None) -> str:
    """Write the skeleton, named, as a program of its own; returns the name."""
    _refuse_existing(path)
    label = _label(saved_as(path, "bot"), name, "--name" if name is not None else path)
    write_lines(
        path,
        bot_source(label).splitlines(keepends=True),
        hint="choose a new file name, or remove the file first",
    )
    if path == STDOUT:
        return label
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):  # runnable as ./my_bot.py, as its first line says
            os.chmod(path, mode | ((mode & 0o444) >> 2))
    except OSError:
        pass  # written; only not executable, and `python3 my_bot.py` still runs it
    return label


def _engine_entry(bot: str, folder: Path) -> list[str]:
    program = Path(bot)
    if not program.is_file():
        raise ConfigError(
            f"there is no bot program {bot!r}",
            where="--bot",
            hint="write one with `arbiter new bot FILE`, or fix the path",
        )
    relative = os.path.relpath(program.resolve(), folder)
    command = ["{python}", relative] if program.suffix == ".py" else [relative]
    name = _label(bot, None, f"--bot {bot}")
    return [
        "",
        "[[engine]]",
        f"name = {json.dumps(name)}",
        f"command = {json.dumps(command)}  # run in this file's folder",
        "# sandbox = true                  # untrusted code: run it under bubblewrap",
    ]


# The bundled bots a new tournament plays: the ladder, one bot per strength (random <
# heuristic < mcts). The others are variants of these (mc and mc-fast: flat Monte-Carlo;
# skeleton: a random mover) that would only lengthen the league.
LADDER = ("random", "heuristic", "mcts")
ROUNDS, TC, SIZE = 10, "5+0.05", 11  # what a new tournament file starts with


def league_games(engines: int, rounds: int = ROUNDS) -> int:
    """The games of a round-robin: two (one pair, seats swapped) per pairing and round."""
    return engines * (engines - 1) // 2 * rounds * 2


def time_estimate(games: int, tc: str, size: int, concurrency: int) -> str:
    """How long a league may take, from the clock: each game's two clocks hold at most
    twice the base time plus an increment for every cell of the board. It is an upper
    bound for engines that spend their time; quick bots take far less."""
    from arbiter.rules import Variant
    from arbiter.rules.clock import TimeControl

    clock = TimeControl.parse(tc)
    cells = Variant(8, size).geometry.n_cells
    most = 2 * clock.base + cells * clock.increment  # seconds one game can last
    total = games * most / concurrency
    return (
        f"{games} games: an estimate of at most {_duration(total)} at concurrency"
        f" {concurrency} (a game lasts at most {_duration(most)}: two clocks of {tc});"
        " quick bots take much less (the demo's 30 games take about 40 seconds on two cores)"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def tournament_text(path: str, bots: Sequence[str]) -> str:
    path = saved_as(path, "tournament")
    folder = Path(path).resolve().parent
    name = _label(path, None, path)
    concurrency = _concurrency()
    ladder = _ladder()
    entries = [line for bot in bots for line in _engine_entry(bot, folder)]
    estimate = league_estimate(len(bots))
    if not entries:
        entries = [
            "",
            "# Your bot (any program that speaks the protocol; `arbiter new bot` writes one):",
            "# [[engine]]",
            '# name = "my_bot"',
            '# command = ["{python}", "my_bot.py"]  # run in this file\'s folder',
        ]
    lines = [
        f"# A round-robin of the bundled bots{' and yours' if bots else ''}. Play it (run it",
        "# again to resume after a stop; raise `rounds` and run again to play more):",
        f"#   arbiter tournament run {path}",
        f"#   arbiter tournament status {path}",
        "# `arbiter tournament run --help` and the documentation's reference explain every key.",
        *(f"# {line}" for line in textwrap.wrap(estimate[0].upper() + estimate[1:] + ".", 86)),
        "",
        "[tournament]",
        f"name = {json.dumps(name)}",
        'format = "round-robin"            # or "gauntlet": challenger = "NAME" plays the rest;',
        '                                  # or "swiss": rounds paired by score (large fields);',
        '                                  # or "adaptive" with games = N instead of rounds',
        f"rounds = {ROUNDS}                       # seat-swapped game pairs per pairing",
        f"concurrency = {concurrency}"
        + " " * (34 - len(f"concurrency = {concurrency}"))
        + "# games at once: two engines each, so at most half the cores",
        f'tc = "{TC}"                     # base+increment seconds, as `arbiter match --tc`',
        f"size = {SIZE}"
        + "                         # Atoll: 7, 11, 15, 19, 23; Hex (islands = 4): 2-26",
        "islands = 8                       # 8 for Atoll, 4 for Hex",
        "pie = true                        # the second player may swap on move 2",
        "random_openings = 1               # each pair starts from its own random first stone",
        "seed = 1",
        f"output = {json.dumps(name + '.sqlite')}"
        + " " * max(1, 34 - len(f"output = {json.dumps(name + '.sqlite')}"))
        + "# the results store, beside this file",
        f"engines = {json.dumps(ladder)}  # the bundled ladder, one bot per strength;",
        "# `arbiter engines` lists the others (mc, mc-fast, skeleton): add names to play them",
        *entries,
    ]
    return "\n".join(lines) + "\n"


def new_tournament(path: str, bots: Sequence[str]) -> str:
    """Write a new tournament file; returns how long its league may take (an estimate)."""
    _refuse_existing(path)
    write_lines(
        path,
        tournament_text(path, bots).splitlines(keepends=True),
        hint="choose a new file name, or remove the file first",
    )
    return league_estimate(len(bots))


def _ladder() -> list[str]:
    return [k for k in LADDER if k in bundled()]


def _concurrency() -> int:
    """Games at once in a new file: two engines each, so at most half the cores."""
    return max(1, (os.cpu_count() or 2) // 2)


def league_estimate(bots: int) -> str:
    """How long a new file's league (the ladder and `bots` more) may take."""
    return time_estimate(league_games(len(_ladder()) + bots), TC, SIZE, _concurrency())
