"""A bot that takes a win in one somewhere must take it everywhere.

The plain positions (standard size, Black to move) decide whether the bot looks for
wins: taking all of them by chance is unlikely (each has dozens of empty cells). A bot
that does is then held to every other position, and each miss names the position,
the winning cell, its answer and the mistake it most likely shows. A bot that takes
none is not blamed: the summary says plainly that its win test was not checked.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from arbiter.check.checker import Checker, CheckFailed
from arbiter.check.positions import MAIN_SIZE
from arbiter.check.wins import (
    COLOUR,
    JOIN,
    SPECIFIC,
    SWAP_HINT,
    BlockThenWin,
    WinPosition,
    block_then_win,
    choose_first,
    joins,
)
from arbiter.engines.player import Player
from arbiter.engines.process import Engine
from arbiter.rules import Color, Game, Variant
from arbiter.rules.clock import TimeControl


@dataclass(frozen=True)
class WinsReport:
    detail: str
    note: str = ""


def replay_command(c: Checker, engine: Engine, position: WinPosition) -> str:
    """A shell command that sends the engine this position as the check did."""
    player = Player.of(engine)
    lines = [
        " ".join(cmd) for cmd in player.setup_commands(position.variant, TimeControl(infinite=True))
    ]
    replay = Game(position.variant)
    for i, move in enumerate(position.moves):
        color = replay.to_move
        replay.play(move)
        # (a move the bot chose itself is asked for again: it answers the same when seeded)
        lines.append(
            f"genmove {color.letter}" if i in position.genmoves else f"play {color.letter} {move}"
        )
    lines.append(f"genmove {position.mover.letter}")
    lines.append("quit")
    script = "\\n".join(lines) + "\\n"
    return f"printf {shlex.quote(script)} | {shlex.join(c.spec.argv)}"


def _variant(position: WinPosition, variants: list[Variant]) -> WinPosition:
    """The position on a variant the engine plays (the pie setting does not matter
    where no swap was made)."""
    v = position.variant
    if v in variants or "swap" in position.moves:
        return position
    other = Variant(v.islands, v.size, not v.pie)
    if other not in variants:
        return position
    return replace(position, variant=other)


def _joins_on_offer(position: WinPosition) -> set[str]:
    """The cells where the mover's stone makes a non-winning join of two of its islands."""
    game = Game(position.variant)
    for move in position.moves:
        game.play(move)
    names = position.variant.geometry.names
    return {names[c] for c in joins(game, position.mover) if names[c] != position.win}


async def play_wins(
    c: Checker, engine: Engine, positions: list[WinPosition], variants: list[Variant], seed: int
) -> WinsReport:
    """Ask for a move in every position; FAIL on a bot that takes some wins and not others."""
    answers: list[tuple[WinPosition, str]] = []
    files: dict[int, Path | None] = {}  # each answered position's --transcripts file
    firsts = [v for v in variants if v.pie and v.size == MAIN_SIZE]
    for variant in firsts[:1]:
        # A bot asked for the first stone, then told of the opponent's swap: its colour
        # is now White, whatever it was at its first genmove.
        chosen: list[WinPosition] = []

        def then(
            answer: str, variant: Variant = variant, chosen: list[WinPosition] = chosen
        ) -> list[str]:
            found = choose_first(variant, answer, seed)
            if found is None:
                return [answer, "swap"]
            chosen.append(found)
            return list(found.moves)

        answer = await c.position(engine, variant, Game(variant), then=then)
        if chosen:
            answers.append((chosen[0], answer))
            files[id(chosen[0])] = c.last_transcript
        # Then a block after the swap, and a win that needs the blocking stone: a bot that
        # kept the colour of its first genmove recorded its block as the other colour.
        found_lines: list[BlockThenWin] = []
        blocked: list[bool] = []

        def first_then(
            answer: str, variant: Variant = variant, found_lines: list[BlockThenWin] = found_lines
        ) -> list[str]:
            found = block_then_win(variant, answer, seed)
            if found is None:
                return [answer, "swap"]
            found_lines.append(found)
            return list(found.moves)

        def after_block(
            answer: str,
            found_lines: list[BlockThenWin] = found_lines,
            blocked: list[bool] = blocked,
        ) -> list[str] | None:
            if not found_lines or answer != found_lines[0].block:
                return None  # it did not block: the line shows nothing (blocking is its choice)
            blocked.append(True)
            return list(found_lines[0].more)

        answer = await c.position(engine, variant, Game(variant), then=first_then, more=after_block)
        if blocked:
            line = found_lines[0]
            position = WinPosition(
                variant,
                (*line.moves, line.block, *line.more),
                Color.WHITE,
                line.win,
                "its first stone swapped, after its block",
                SWAP_HINT,
                first_genmove=True,
                genmoves=(0, len(line.moves)),
            )
            answers.append((position, answer))
            files[id(position)] = c.last_transcript
    for position in positions:
        position = _variant(position, variants)
        game = Game(position.variant)
        try:
            answer = await c.position(engine, position.variant, game, moves=list(position.moves))
        except CheckFailed as exc:
            exc.detail = f"{position.describe()}: {exc.detail}"
            raise
        answers.append((position, answer))
        files[id(position)] = c.last_transcript
    evidence = [(p, a) for p, a in answers if p.evidence]
    families = {p.variant.islands for p, _ in evidence}
    looks = any(all(a == p.win for p, a in evidence if p.variant.islands == k) for k in families)
    taken = sum(a == p.win for p, a in answers)
    if not looks:
        return WinsReport(
            f"took {taken} of {len(answers)} winning cells, no more than chance",
            f"it does not look for wins: it took {taken} of {len(answers)} wins in one, so"
            " check cannot tell whether its win test and board agree with the referee's",
        )
    missed = [(p, a) for p, a in answers if a != p.win]
    if not missed:
        situations = sorted({p.situation for p, _ in answers})
        return WinsReport(f"took the win in all {len(answers)} positions ({', '.join(situations)})")
    lines = [f"took wins in one in {taken} of {len(answers)} positions but missed {len(missed)}:"]
    for p, a in missed[:3]:
        where = files.get(id(p))
        shown = f" (the exchange is in {where})" if where is not None else ""
        lines.append(f"{p.describe()}: the winning cell is {p.win}, it answered {a}{shown}")
    replay = replay_command(c, engine, missed[0][0])
    lines.append(f"replay the first by hand (whole in --json): {replay}")
    raise CheckFailed(" | ".join(lines), likely_mistake(answers, missed))


def likely_mistake(
    answers: list[tuple[WinPosition, str]], missed: list[tuple[WinPosition, str]]
) -> str:
    """The mistake a bot's misses most likely show. Misses of one kind of situation
    name its mistake; a wrong board misses plain wins of its variant (and others); a bot
    that plays the other colour misses every win of one colour; a bot that counts any
    two islands as a win misses plain wins too, answering a join each time."""
    kinds = {p.mistake for p, _ in missed}
    if len(kinds) == 1:
        return kinds.pop()
    mistake = min(kinds, key=lambda m: SPECIFIC.index(m) if m in SPECIFIC else len(SPECIFIC))
    share = {
        color: [a != p.win for p, a in answers if p.mover is color and "swap" not in p.moves]
        for color in Color
    }
    for color in Color:
        mine, theirs = share[color], share[color.other]
        # (a random answer takes a small board's win now and then)
        if mine and theirs and sum(mine) >= 0.75 * len(mine) and sum(theirs) <= len(theirs) / 4:
            mistake = COLOUR
    for k in {p.variant.islands for p, _ in answers}:
        plain = [(p, a) for p, a in answers if p.evidence and p.variant.islands == k]
        if plain and 2 * sum(a != p.win for p, a in plain) > len(plain):
            mistake = plain[0][0].mistake
            if all(a in _joins_on_offer(p) for p, a in missed):
                mistake = JOIN
    return mistake
