"""Engine dialects: how the referee's moves, variants and clocks are said to one engine.

Engines speak GTP with differences: a plain GTP Hex program says nothing about islands,
spells the pie move `swap-pieces`, and knows `time_left` but not `time_settings`. The
referee keeps the rules, the clocks and the verdicts; this module turns them into the
commands a given engine understands, from what the engine lists (`list_commands`) and
what its definition declares (`islands`, `sizes`, `swap`, `time` in an engines file or a
tournament's `[[engine]]`). It is pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from arbiter.rules import Color, Variant
from arbiter.rules.clock import GameClock, TimeControl

Command = tuple[str, ...]


class TimeFamily(StrEnum):
    ATOLL = "atoll"  # atoll-time_settings / atoll-time_left, milliseconds
    GTP = "gtp"  # time_settings / time_left, whole seconds
    NONE = "none"  # told nothing; the clock runs all the same


@dataclass(frozen=True)
class Dialect:
    """What an engine's definition declares about how it speaks (None: ask the engine)."""

    islands: tuple[int, ...] | None = None  # variants it plays if it lists no atoll-islands
    sizes: tuple[int, ...] | None = None  # board sizes it plays; None: any the rules allow
    swap: str = "swap"  # the pie move on the wire, both ways
    time: TimeFamily | None = None  # None: by the commands it lists (PROTOCOL.md 5.2)
    # The command that sets a parameter (`WORD NAME VALUE`); None: `atoll-set-param`,
    # if the engine lists it (PROTOCOL.md 5.4).
    set_param: str | None = None
    # The command that asks it for the winner of the position it has been given (its
    # words; MoHex: `dfpn-solve-state`), when it serves as a tournament's `solver`; and
    # the command its time budget in seconds is appended to before each question
    # (MoHex: `param_dfpn timelimit`), if it takes one.
    solve: Command | None = None
    solve_budget: Command | None = None


SET_PARAM = "atoll-set-param"
LIST_PARAMS = "atoll-params"


def param_commands(
    dialect: Dialect, supports: Callable[[str], bool], values: Sequence[tuple[str, str]]
) -> list[Command] | str:
    """The commands that set a game's parameter values (name, value as written), or why
    the engine cannot be told them (it lists no `atoll-set-param` and its definition
    names no `set_param`)."""
    if not values:
        return []
    word = dialect.set_param or SET_PARAM
    if dialect.set_param is None and not supports(SET_PARAM):
        return (
            f"it lists no {SET_PARAM} to be given {', '.join(n for n, _ in values)}: put"
            " {NAME} placeholders in its command, or set its set_param to the command"
            " that sets a parameter"
        )
    return [(word, name, value) for name, value in values]


def time_family(dialect: Dialect, supports: Callable[[str], bool]) -> TimeFamily:
    """Which clock commands the engine is told: declared, else as PROTOCOL.md 5.2 says."""
    if dialect.time is not None:
        return dialect.time
    if supports("atoll-time_settings") and supports("atoll-time_left"):
        return TimeFamily.ATOLL
    if supports("time_settings") and supports("time_left"):
        return TimeFamily.GTP
    return TimeFamily.NONE


def unsupported(
    dialect: Dialect, supports: Callable[[str], bool], name: str, variant: Variant
) -> str | None:
    """Why this engine cannot play this variant at all, from its commands and definition."""
    if not supports("atoll-islands"):
        allowed = dialect.islands or (8,)
        if len(allowed) > 1:
            return (
                f"{name} declares islands = {list(allowed)} but does not list"
                " atoll-islands, so it can never be told which one a game is; declare one"
            )
        if variant.islands not in allowed:
            kinds = " or ".join(f"{k}-island" for k in allowed)
            if dialect.islands:
                return (
                    f"{name} declares islands = {list(allowed)} ({kinds} games), so it"
                    f" cannot play {variant.islands} islands"
                )
            return (
                f"{name} does not list atoll-islands, so it can only play 8-island Atoll,"
                f" not {variant.islands} islands; declare islands = [4] in its definition"
                " if it plays Hex"
            )
    if dialect.sizes is not None and variant.size not in dialect.sizes:
        return (
            f"{name} declares sizes = {list(dialect.sizes)}, so it cannot play size {variant.size}"
        )
    if not variant.pie and not supports("atoll-pie"):
        return f"{name} does not list atoll-pie, so it cannot play without the pie rule"
    return None


def setup_commands(
    dialect: Dialect,
    supports: Callable[[str], bool],
    variant: Variant,
    tc: TimeControl,
    params: Sequence[Command] = (),
) -> list[Command]:
    """The set-up before every game, in PROTOCOL.md's order (`params`: the commands
    that set the game's parameter values, after `clear_board`)."""
    commands: list[Command] = []
    if supports("atoll-islands"):
        commands.append(("atoll-islands", str(variant.islands)))
    commands += [("boardsize", str(variant.size)), ("clear_board",), *params]
    if supports("atoll-pie"):
        commands.append(("atoll-pie", "on" if variant.pie else "off"))
    return commands + time_settings(time_family(dialect, supports), tc)


def position_setup(supports: Callable[[str], bool], variant: Variant) -> list[Command]:
    """An empty board of `variant` with no clock: what a solver is told before the
    moves of the game it is asked about."""
    commands: list[Command] = []
    if supports("atoll-islands"):
        commands.append(("atoll-islands", str(variant.islands)))
    commands += [("boardsize", str(variant.size)), ("clear_board",)]
    if supports("atoll-pie"):
        commands.append(("atoll-pie", "on" if variant.pie else "off"))
    return commands


def time_settings(family: TimeFamily, tc: TimeControl) -> list[Command]:
    """The clock's settings in the engine's family (GTP: Canadian overtime for MOVES/BASE)."""
    if family is TimeFamily.ATOLL:
        if tc.infinite:
            return [("atoll-time_settings", "none")]
        if tc.per_move:
            return [("atoll-time_settings", "movetime", str(int(tc.per_move * 1000)))]
        base, inc = str(int(tc.base * 1000)), str(int(tc.increment * 1000))
        if tc.moves:
            return [("atoll-time_settings", "moves", str(tc.moves), base, inc)]
        return [("atoll-time_settings", "fischer", base, inc)]
    if family is TimeFamily.GTP:
        if tc.infinite:
            return [("time_settings", "0", "1", "0")]
        if tc.per_move:
            return [("time_settings", "0", str(max(1, int(tc.per_move))), "1")]
        base = str(max(1, int(tc.base))) if tc.base else "0"
        if tc.moves:
            return [("time_settings", "0", base, str(tc.moves))]
        return [("time_settings", base, "0", "0")]
    return []


def time_updates(family: TimeFamily, clocks: Sequence[GameClock]) -> list[Command]:
    """Both colours' clocks (Black's, White's), Black first, right before a `genmove`."""
    if family is TimeFamily.NONE:
        return []
    out: list[Command] = []
    for color, clock in zip((Color.BLACK, Color.WHITE), clocks, strict=True):
        if clock.tc.infinite:
            continue
        ms = clock.remaining_ms()
        if family is TimeFamily.ATOLL:
            out.append(("atoll-time_left", color.letter, str(ms)))
        else:
            # GTP counts overtime in stones per period (Canadian): the moves left in the
            # current block of a MOVES/BASE clock, 1 under a fixed time per move, and 0
            # (absolute time) for a Fischer clock.
            tc = clock.tc
            stones = clock.moves_left if tc.moves else (1 if tc.per_move else 0)
            out.append(("time_left", color.letter, str(ms // 1000), str(stones)))
    return out


def ply_commands(
    dialect: Dialect,
    family: TimeFamily,
    unseen: Sequence[tuple[str, str]],
    clocks: Sequence[GameClock],
    color: Color,
) -> list[Command]:
    """One ply's batch, written in one go: the moves the engine has not seen (colour
    letter, move name), both clocks (Black's, White's), then `genmove` for `color`."""
    swap = dialect.swap
    commands: list[Command] = [("play", c, swap if m == "swap" else m) for c, m in unseen]
    commands += time_updates(family, clocks)
    commands.append(("genmove", color.letter))
    return commands


def solve_commands(dialect: Dialect, budget: float) -> list[Command]:
    """The question to a solver about the position it has been given: its budget (if
    its definition says how to tell it one), then its solve command."""
    assert dialect.solve is not None
    told = [] if dialect.solve_budget is None else [(*dialect.solve_budget, f"{budget:g}")]
    return [*told, dialect.solve]


def play_command(dialect: Dialect, letter: str, move: str) -> Command:
    """`play` of a move in the engine's spelling (the pie move may be `swap-pieces`)."""
    return ("play", letter, dialect.swap if move == "swap" else move)
