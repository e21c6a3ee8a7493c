#!/usr/bin/env python3
"""Minimal Atoll/Hex bot speaking the Atoll Arbiter dialect of GTP version 2.

Copy this file and replace ``choose_move`` with your own strategy.  Everything
else (reading commands, tracking the board, formatting answers) already works.

The bot reads one command per line on stdin and writes answers on stdout:
    success:  "=[id] result" followed by an empty line
    failure:  "?[id] message" followed by an empty line
Nothing else may be printed on stdout; use ``log()`` (stderr) for debugging.

Structure: choose_move(game) is the strategy; Game holds the geometry, stones,
history and settings; Bot speaks the protocol (``Bot().run()`` is the main loop,
command "atoll-pie" is handled by the method cmd_atoll_pie, and handle_command,
execute, respond and send can be overridden by a subclass); raising GtpError
inside a command answers "? message".
"""

import os
import random
import re
import sys
import traceback
from collections.abc import Callable
from typing import BinaryIO

# Names for the kinds of values the bot passes around (Colour, Cell and Move are plain str).
Colour = str  # "b" (black) or "w" (white)
Cell = str  # a cell name: file letter then rank, such as "f5"
Move = str  # a cell name or "swap"; choose_move may also return "resign"
# A kind, then its numbers, such as ("fischer", 60000, 500).
# Read it with:  kind, *numbers = game.time_settings
TimeSettings = tuple[str, *tuple[int, ...]]
TimeLeft = tuple[int, int | None]  # (milliseconds, stones or None)

# Probability of using the pie rule ("swap") when it is allowed.  0 = never.
SWAP_PROBABILITY = 0.0


# "Game" is in quotes because the class is defined further down.
def choose_move(game: "Game") -> Move:
    """Return the move for ``game.to_move``: a cell name such as "f5", or "swap".

    ``game`` is a Game object.  Useful attributes and methods:
        game.to_move         "b" or "w": the colour that must move now
        game.empty_cells()   list of the free cells (all of them are legal)
        game.swap_allowed()  True when "swap" (pie rule) is a legal answer now
        game.stones          dict: cell name -> "b" or "w"
        game.history         list of (colour, move) played so far
        game.islands         8 = Atoll, 4 = Hex;  game.size: board size
        game.time_settings   ("none",), ("fischer", base_ms, inc_ms), ("movetime", ms),
                             ("moves", moves, base_ms, inc_ms) or ("gtp", main, byo, stones)
        game.time_left       dict: colour -> (milliseconds, stones or None)
    Returning "resign" is also allowed.  This version plays a random free cell.
    """
    if game.swap_allowed() and random.random() < SWAP_PROBABILITY:
        return "swap"
    return random.choice(game.empty_cells())


# ---------------------------------------------------------------- helpers

FILE_LETTERS = "abcdefghijklmnopqrstuvwxyz"
SWAP_ALIASES = ("swap", "swap-pieces", "swap-sides")
COLOURS: dict[str, Colour] = {"b": "b", "black": "b", "w": "w", "white": "w"}


def log(*parts: object) -> None:
    """Print a debugging message on stderr (stdout is reserved for the protocol)."""
    print(*parts, file=sys.stderr, flush=True)


class GtpError(Exception):
    """A command failed; the message becomes the text of the "?" answer."""


def preprocess(line: str) -> str:
    """Clean one input line: drop control characters, tabs to spaces, cut comments."""
    kept = [
        " " if ch == "\t" else ch
        for ch in line
        if ch in "\t\n" or (ord(ch) >= 32 and ord(ch) != 127)
    ]
    return "".join(kept).split("#", 1)[0].strip()


def split_command(line: str) -> tuple[str, str, list[str]]:
    """Split a cleaned line into (id, name, args); id is a digit string or ""."""
    words = line.split()
    cmd_id = words.pop(0) if words and is_number(words[0]) else ""
    return cmd_id, (words[0] if words else ""), words[1:]


def format_response(cmd_id: str, ok: bool, text: str) -> str:
    """Build the complete answer, including the terminating empty line."""
    head = ("=" if ok else "?") + cmd_id
    return (head + " " + text if text else head) + "\n\n"


def parse_colour(text: str) -> Colour:
    if text.lower() not in COLOURS:
        raise GtpError(f"syntax error: invalid color '{text}'")
    return COLOURS[text.lower()]


def is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_int(text: str, what: str) -> int:
    if not is_number(text):
        raise GtpError(f"syntax error: {what} must be a non-negative integer, got '{text}'")
    return int(text)


def expect_args(args: list[str], count: int, usage: str) -> None:
    if len(args) != count:
        raise GtpError(f"syntax error: usage: {usage}")


# ---------------------------------------------------------------- the board


def size_is_valid(islands: int, size: int) -> bool:
    """Atoll (8 islands): 7..23 with size % 4 == 3.  Hex (4 islands): 2..26."""
    if islands == 8:
        return 7 <= size <= 23 and size % 4 == 3
    return 2 <= size <= 26


def all_cells(islands: int, size: int) -> list[Cell]:
    """All playable cell names: file letter a.. and rank 1.. (rank 1 at the bottom).

    Hex: every file has ``size`` cells.  Atoll: files a, c, e, ... have size-2
    cells and files b, d, f, ... have size-1 (they stick out half a cell).
    """
    names: list[Cell] = []
    for x in range(size):
        height = size if islands == 4 else size - 2 + x % 2
        names += [f"{FILE_LETTERS[x]}{rank}" for rank in range(1, height + 1)]
    return names


class Game:
    """Everything the bot knows about the current game."""

    def __init__(self) -> None:
        self.islands = 8  # 8 = Atoll, 4 = Hex
        self.size = 11
        self.pie = True  # pie rule: "swap" allowed as the second move
        self.time_settings: TimeSettings = ("none",)
        self.time_left: dict[Colour, TimeLeft] = {}
        self.clear()

    def clear(self) -> None:
        """Empty the board (and rebuild the cell list for the current geometry)."""
        self.cells: list[Cell] = all_cells(self.islands, self.size)
        self.cell_set: set[Cell] = set(self.cells)
        self.stones: dict[Cell, Colour] = {}  # cell name -> "b" or "w"
        self.history: list[tuple[Colour, Move]] = []  # in order; move may be "swap"
        self.to_move: Colour = "b"

    def empty_cells(self) -> list[Cell]:
        return [cell for cell in self.cells if cell not in self.stones]

    def swap_allowed(self) -> bool:
        """Swap is legal only as the second move (exactly one stone placed), pie on."""
        return self.pie and len(self.history) == 1 and self.history[0][1] != "swap"

    def play(self, colour: Colour, text: str) -> Move:
        """Play a move (cell name or swap) for colour; raise GtpError if it is illegal."""
        move = text.lower()
        if move in SWAP_ALIASES:
            if not self.swap_allowed():
                raise GtpError("illegal move: swap is only allowed as the second move")
            # The stone stays black and White moves again: the first player, now White,
            # places the next stone.
            move = "swap"
            self.to_move = colour
        else:
            match = re.fullmatch(r"([a-zA-Z])([0-9]{1,4})", text)
            if match is None:
                raise GtpError(f"syntax error: invalid move '{text}'")
            move = match.group(1).lower() + str(int(match.group(2)))  # "A01" -> "a1"
            if move not in self.cell_set:
                raise GtpError(f"illegal move: {move} is not a playable cell")
            if move in self.stones:
                raise GtpError(f"illegal move: {move} is occupied")
            self.stones[move] = colour
            self.to_move = "w" if colour == "b" else "b"
        self.history.append((colour, move))
        return move

    def winner(self) -> Colour | None:
        """Return "b" or "w" once a player has won, else None.  Not implemented here."""

    def drawing(self) -> str:
        """Text picture of the board: X = black stone, O = white stone, . = empty."""
        mark: dict[Colour | None, str] = {"b": "X", "w": "O"}  # None: no stone
        letters = FILE_LETTERS[: self.size]
        variant, pie = ("Hex" if self.islands == 4 else "Atoll"), ("on" if self.pie else "off")
        lines = [f"{variant} size {self.size}, {len(self.history)} moves, pie {pie}"]
        if self.islands == 4:
            # Hex rhombus: row 1 at the top, each row shifted half a cell right.
            lines.append("   " + " ".join(letters))
            for row in range(1, self.size + 1):
                cells = [mark.get(self.stones.get(f"{x}{row}"), ".") for x in letters]
                lines.append(f"{row:2d} " + " " * (row - 1) + " ".join(cells))
            return "\n".join(lines)
        # Atoll: neighbouring files are offset by half a cell, so each text line
        # is one half-row.  Half-row of file x, rank k, counted from the top:
        # h = 2*size + (x+1) - 2*(k + x//2) - 2; file x is drawn in column 3*x.
        rows: dict[int, list[str]] = {}
        for cell in self.cells:
            x, rank = FILE_LETTERS.index(cell[0]), int(cell[1:])
            h = 2 * self.size + x + 1 - 2 * (rank + x // 2) - 2
            rows.setdefault(h, [" "] * (3 * self.size))[3 * x] = mark.get(
                self.stones.get(cell), "."
            )
        header = "  ".join(letters)
        lines.append(header)
        lines += ["".join(rows[h]).rstrip() for h in sorted(rows)]
        lines.append(header)
        return "\n".join(lines)


# ---------------------------------------------------------------- the protocol

Chooser = Callable[[Game], Move]  # a strategy such as choose_move
Handler = Callable[[list[str]], str]  # a command: its arguments -> its result text

COMMAND_NAMES = [
    "protocol_version",
    "name",
    "version",
    "known_command",
    "list_commands",
    "quit",
    "boardsize",
    "clear_board",
    "play",
    "genmove",
    "showboard",
    "final_score",
    "atoll-islands",
    "atoll-pie",
    "atoll-time_settings",
    "atoll-time_left",
    "time_settings",
    "time_left",
]


class Bot:
    """Reads commands, keeps a Game up to date and answers on stdout."""

    name = "skeleton"  # change this: match results and tables show it
    version = "1.0"

    def __init__(
        self,
        chooser: Chooser = choose_move,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
    ) -> None:
        self.game = Game()
        self.chooser = chooser
        self.stdin = stdin if stdin is not None else sys.stdin.buffer
        self.stdout = stdout if stdout is not None else sys.stdout.buffer
        self.quit_requested = False
        self.commands: dict[str, Handler] = {
            name: getattr(self, "cmd_" + name.replace("-", "_")) for name in COMMAND_NAMES
        }

    def run(self) -> int:
        """Answer commands until "quit" or the end of input; return the exit status."""
        while not self.quit_requested:
            raw = self.stdin.readline()
            if not raw:
                break  # end of input: the referee has gone away
            line = preprocess(raw.decode("utf-8", errors="replace"))
            if line:
                self.handle_command(*split_command(line))
        return 0

    def handle_command(self, cmd_id: str, name: str, args: list[str]) -> None:
        """Run one command and send its answer."""
        try:
            result = self.execute(name, args)
        except GtpError as error:
            self.respond(cmd_id, False, str(error))
        except Exception as error:  # noqa: BLE001, RUF100 (a bug: report it)
            traceback.print_exc(file=sys.stderr)
            self.respond(cmd_id, False, f"internal error: {error}")
        else:
            self.respond(cmd_id, True, result)

    def execute(self, name: str, args: list[str]) -> str:
        """Run the handler of a command and return its result text."""
        if name not in self.commands:
            raise GtpError("unknown command")
        return self.commands[name](args)

    def respond(self, cmd_id: str, ok: bool, text: str) -> None:
        self.send(format_response(cmd_id, ok, text))

    def send(self, text: str) -> None:
        self.stdout.write(text.encode("utf-8"))
        self.stdout.flush()  # the referee is waiting: never keep output buffered

    # ---- standard GTP commands (each returns the result text) -------------
    def cmd_protocol_version(self, args: list[str]) -> str:
        return "2"

    def cmd_name(self, args: list[str]) -> str:
        return self.name

    def cmd_version(self, args: list[str]) -> str:
        return self.version

    def cmd_known_command(self, args: list[str]) -> str:
        expect_args(args, 1, "known_command COMMAND")
        return "true" if args[0] in self.commands else "false"

    def cmd_list_commands(self, args: list[str]) -> str:
        return "\n".join(self.commands)

    def cmd_quit(self, args: list[str]) -> str:
        self.quit_requested = True
        return ""

    def cmd_boardsize(self, args: list[str]) -> str:
        expect_args(args, 1, "boardsize SIZE")
        size = parse_int(args[0], "size")
        if not size_is_valid(self.game.islands, size):
            raise GtpError("unacceptable size")
        self.game.size = size
        self.game.clear()
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        self.game.clear()
        return ""

    def cmd_play(self, args: list[str]) -> str:
        expect_args(args, 2, "play COLOR MOVE")
        self.game.play(parse_colour(args[0]), args[1])
        return ""

    def cmd_genmove(self, args: list[str]) -> str:
        expect_args(args, 1, "genmove COLOR")
        game = self.game
        game.to_move = parse_colour(args[0])
        if not game.empty_cells():
            raise GtpError("board is full")
        move = self.chooser(game).lower()
        if move == "resign":
            return move
        try:
            return game.play(game.to_move, move)  # record our own move
        except GtpError as error:
            raise GtpError(f"choose_move returned '{move}': {error}") from None

    def cmd_showboard(self, args: list[str]) -> str:
        return self.game.drawing()

    def cmd_final_score(self, args: list[str]) -> str:
        winner = self.game.winner()
        if winner is None:
            raise GtpError("cannot score")
        return winner.upper() + "+"

    def cmd_time_settings(self, args: list[str]) -> str:
        expect_args(args, 3, "time_settings MAIN_TIME BYO_YOMI_TIME BYO_YOMI_STONES")
        self.game.time_settings = ("gtp", *[parse_int(arg, "time") for arg in args])
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        expect_args(args, 3, "time_left COLOR SECONDS STONES")
        self.game.time_left[parse_colour(args[0])] = (
            parse_int(args[1], "time") * 1000,
            parse_int(args[2], "stones"),
        )
        return ""

    # ---- Atoll extensions -------------------------------------------------
    def cmd_atoll_islands(self, args: list[str]) -> str:
        expect_args(args, 1, "atoll-islands COUNT")
        islands = parse_int(args[0], "island count")
        if islands not in (4, 8):
            raise GtpError("unsupported island count")
        self.game.islands = islands
        if not size_is_valid(islands, self.game.size):
            self.game.size = 11
        self.game.clear()
        return ""

    def cmd_atoll_pie(self, args: list[str]) -> str:
        expect_args(args, 1, "atoll-pie on|off")
        if args[0].lower() not in ("on", "off"):
            raise GtpError(f"syntax error: expected on or off, got '{args[0]}'")
        self.game.pie = args[0].lower() == "on"
        return ""

    def cmd_atoll_time_settings(self, args: list[str]) -> str:
        usage = (
            "atoll-time_settings none | fischer BASE_MS INC_MS | movetime MS"
            " | moves MOVES BASE_MS INC_MS"
        )
        counts = {"none": 0, "fischer": 2, "movetime": 1, "moves": 3}
        if not args or args[0].lower() not in counts:
            raise GtpError(f"syntax error: usage: {usage}")
        expect_args(args[1:], counts[args[0].lower()], usage)
        values = [parse_int(arg, "time") for arg in args[1:]]
        self.game.time_settings = (args[0].lower(), *values)
        return ""

    def cmd_atoll_time_left(self, args: list[str]) -> str:
        expect_args(args, 2, "atoll-time_left COLOR MS")
        self.game.time_left[parse_colour(args[0])] = (parse_int(args[1], "time"), None)
        return ""


def main() -> int:
    try:
        return Bot().run()
    except BrokenPipeError:
        # The referee closed our stdout: stop quietly, and keep Python from
        # complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
