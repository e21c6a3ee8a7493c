"""Hex games as SGF (FF[4], GM[11]): the game record format HexGui writes and MoHex loads.

The conventions are HexGui's, read from its SGF writer and reader and from the game files
Benzene keeps (MoHex's `loadsgf` reads them with Fuego's SGF reader):

- Cells are written as our records name them, column letter and row number with a1 at the
  top left (`B[c3]`), not as Go's two letters. HexGui reads both; Fuego's reader only
  this one under GM[11].
- The swap is `W[swap-pieces]` and, as in our rules, it leaves the first stone where it is
  and White moves next: `;B[c3];W[swap-pieces];W[d2];B[b4]`. Fuego's reader does not know
  the word, skips that node and plays the rest, which is the same position.
- PB and PW name the players of the black and white stones as the game ended (after a swap
  the first stone's player is White), as the record's `black` and `white` do, so RE's
  colour names the winner under PB or PW. (Benzene's twogtp script writes the players as
  they were before the swap and turns RE round to match; we keep SGF's plain meaning.)
- RE is `B+`/`W+` for a connection or a proven one (adjudicated), `B+Resign`, `B+Time`,
  `B+Forfeit` for every other fault (the record's termination and reason are in GC),
  `Void` for a void attempt.

Atoll has no SGF game number or any other standard record format: its games stay in JSON
lines. Text values are escaped as SGF asks (`\\` before `]` and `\\`) and have control
characters written as visible escapes, so a file can be shown on a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from arbiter.results.records import GameRecord, StoneColor, Termination
from arbiter.rules import SWAP, Color, Game
from arbiter.text import escape
from arbiter.views.report import describe_result

HEX_GAME = 11  # SGF's GM number for Hex
HEX_ISLANDS = 4
SWAP_MOVE = "swap-pieces"  # HexGui's and Benzene's name for the swap
LINE = 72  # HexGui's line length: nodes are wrapped between properties, never inside one
APPLICATION = "Atoll Arbiter"

NO_STANDARD_FORMAT = "Atoll has no standard game record format (SGF has no game number for it)"
USE_RECORDS = "keep Atoll games in JSON lines: `tournament export FILE --records OUT.jsonl`"


def is_hex(record: GameRecord) -> bool:
    """Whether SGF can hold the game: Hex, not Atoll."""
    return bool(record.variant["islands"] == HEX_ISLANDS)


def text(value: str) -> str:
    """A text value as SGF writes it: one line, control characters escaped visibly,
    then `\\` and `]` escaped (readers drop line breaks inside values)."""
    return escape(value).replace("\\", "\\\\").replace("]", "\\]")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("atoll-arbiter")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def colours(record: GameRecord) -> tuple[str, str]:
    """The players of the black and white stones as the game ended: the record's `black`
    and `white`, or from the seats and the swap where a record leaves them empty."""
    swapped = record.swapped or record.moves[1:2] == [SWAP]
    black = record.black or (record.seat2 if swapped else record.seat1)
    white = record.white or (record.seat1 if swapped else record.seat2)
    return black, white


def result(record: GameRecord) -> str:
    """The RE value: the winner's colour and how, in SGF's words."""
    if record.void or record.winner is None:
        return "Void"
    black, _ = colours(record)
    if record.winner_color is not None:
        colour = "B" if record.winner_color is StoneColor.BLACK else "W"
    else:
        colour = "B" if record.winner == black else "W"
    if record.termination in (Termination.CONNECTION, Termination.ADJUDICATED):
        return f"{colour}+"  # a proven connection: the board shows the proof's stones
    if record.termination is Termination.RESIGN:
        return f"{colour}+Resign"
    if record.termination is Termination.TIME:
        return f"{colour}+Time"
    return f"{colour}+Forfeit"


_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})T")


def _comment(record: GameRecord) -> str:
    swapped = record.swapped or record.moves[1:2] == [SWAP]
    outcome = describe_result(record)
    parts = [
        f"Atoll Arbiter game {record.game_id}.",
        f"Seat 1: {record.seat1} (first stone); seat 2: {record.seat2}"
        + (" (swapped, took Black)." if swapped else "."),
        outcome[:1].upper() + outcome[1:] + ".",
    ]
    tc = record.tc
    if tc.get("seat1") == tc.get("seat2"):
        parts.append(f"Time control {tc.get('seat1')}.")
    else:
        parts.append(f"Time control: seat 1 {tc.get('seat1')}, seat 2 {tc.get('seat2')}.")
    if record.void:
        parts.append("A void attempt: replayed, never rated.")
    return " ".join(parts)


def moves(record: GameRecord) -> list[tuple[str, str]]:
    """The moves as (colour, value) pairs: the rules say whose turn each move was (White
    moves again after a swap); IllegalMove where a record's moves do not replay."""
    game = Game(record.rules)
    out = []
    for move in record.moves:
        colour = "B" if game.to_move is Color.BLACK else "W"
        game.play(move)
        out.append((colour, SWAP_MOVE if move == SWAP else move))
    return out


def game_tree(record: GameRecord) -> str:
    """One Hex game as an SGF game tree, ending with a newline; ValueError for Atoll."""
    if not is_hex(record):
        raise ValueError(NO_STANDARD_FORMAT)
    black, white = colours(record)
    root = [
        "FF[4]",
        f"GM[{HEX_GAME}]",
        "CA[UTF-8]",
        f"AP[{APPLICATION}:{text(_version())}]",
        f"SZ[{record.variant['size']}]",
        f"PB[{text(black)}]",
        f"PW[{text(white)}]",
        f"RE[{result(record)}]",
    ]
    date = _DATE.match(record.started)
    if date:
        root.append(f"DT[{date.group(1)}]")
    root += [f"GN[{text(record.game_id)}]", f"GC[{text(_comment(record))}]"]
    lines: list[str] = []
    line = "(;"
    for i, prop in enumerate(root):
        # The root's properties stay on the lines they start on: GC may be long.
        if i and len(line) + len(prop) > LINE:
            lines.append(line)
            line = ""
        line += prop
    lines.append(line)
    line = ""
    for colour, value in moves(record):
        node = f";{colour}[{value}]"
        if line and len(line) + len(node) > LINE:
            lines.append(line)
            line = ""
        line += node
    lines.append(line + ")")
    return "\n".join(lines) + "\n"


@dataclass
class SgfSelection:
    """What a collection left out, and why: void attempts and Atoll games."""

    written: int = 0
    void: int = 0
    atoll: int = 0

    def notes(self) -> list[str]:
        lines = []
        if self.void:
            lines.append(
                f"Left out {self.void} void attempt(s): they were replayed and are never rated."
            )
        if self.atoll:
            lines.append(
                f"Left out {self.atoll} Atoll game(s): {NO_STANDARD_FORMAT}; {USE_RECORDS}."
            )
        return lines


def census(stored: Iterable[tuple[dict[str, Any], bool]]) -> SgfSelection:
    """What a collection of a store's records (JSON objects, void flags) would hold and
    leave out, known before anything is written."""
    found = SgfSelection()
    for data, void in stored:
        if void or data.get("void"):
            found.void += 1
        elif data["variant"]["islands"] == HEX_ISLANDS:
            found.written += 1
        else:
            found.atoll += 1
    return found


def games(n: int) -> str:
    return f"{n} Hex game{'' if n == 1 else 's'}"


def collection(records: Iterable[GameRecord], selection: SgfSelection) -> Iterator[str]:
    """The game trees of the rated Hex games among `records`, counting in `selection`
    what was left out: an SGF collection is its game trees one after the other."""
    for record in records:
        if record.void:
            selection.void += 1
        elif not is_hex(record):
            selection.atoll += 1
        else:
            selection.written += 1
            yield game_tree(record)
