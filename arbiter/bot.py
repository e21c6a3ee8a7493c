"""Helper for writing engines in Python: the protocol loop and the board, done once.

A bot subclasses `Bot` and implements `choose_move`; `Bot.run()` reads commands from
stdin and answers on stdout until `quit` or EOF. The referee is the authority on the
rules, but the bot keeps its own board with the real rules core so that it only ever
proposes legal moves.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from arbiter.protocol.codec import Command, format_response, parse_command
from arbiter.rules import SWAP, Color, Game, IllegalMove, Variant

BASE_COMMANDS = (
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
    "atoll-islands",
    "atoll-pie",
    "atoll-time_settings",
    "atoll-time_left",
    "showboard",
    "final_score",
)


class CommandError(Exception):
    """Answered to the referee as a `?` response."""


class Bot:
    """Base class for a protocol engine. Override `choose_move`."""

    name = "bot"
    version = "1.0"

    def __init__(self) -> None:
        self.islands = 8
        self.size = 11
        self.pie = True
        self.game = Game(Variant(self.islands, self.size, self.pie))
        self.time_left_ms: dict[Color, int | None] = {Color.BLACK: None, Color.WHITE: None}
        self.time_settings: tuple[str, ...] = ("none",)
        self._handlers: dict[str, Callable[[tuple[str, ...]], str]] = {
            "protocol_version": lambda a: "2",
            "name": lambda a: self.name,
            "version": lambda a: self.version,
            "known_command": self._known_command,
            "list_commands": lambda a: "\n".join(BASE_COMMANDS),
            "quit": lambda a: "",
            "boardsize": self._boardsize,
            "clear_board": self._clear_board,
            "play": self._play,
            "genmove": self._genmove,
            "atoll-islands": self._islands,
            "atoll-pie": self._pie,
            "atoll-time_settings": self._time_settings,
            "atoll-time_left": self._time_left,
            "showboard": lambda a: "\n" + self.game.render(),
            "final_score": self._final_score,
        }

    def choose_move(self, game: Game, color: Color) -> str:
        """Return a move name (a cell or `swap`) or `resign` for `color` in `game`."""
        raise NotImplementedError

    def think_time(self, color: Color, moves_left: float) -> float | None:
        """Seconds this move may take by the referee's clock, or None without a clock.

        A fifth of the base time is kept back as insurance against the machine stalling
        the bot; of the rest, a share spread over `moves_left` more moves of this player
        plus most of the increment, never more than a quarter of it, minus a reserve for
        the round trip. Below the insurance only half the increment is spent, so the
        clock builds up again.
        """
        settings = self.time_settings
        kind = settings[0] if settings else "none"
        try:
            numbers = [int(x) / 1000 for x in settings[1:]]
        except ValueError:
            return None
        reserve = 0.01
        if kind == "movetime" and numbers:
            allowance = numbers[0]
            if allowance < 0.1:  # a very short move time: half of it, not nothing
                return allowance * 0.5
            return min(allowance * 0.5, allowance - 0.05)
        if kind not in ("fischer", "moves") or len(numbers) < 2:
            return None
        base, increment = numbers[-2], numbers[-1]
        left_ms = self.time_left_ms.get(color)
        left = base + increment if left_ms is None else left_ms / 1000
        if kind == "moves":
            moves_left = min(moves_left, numbers[0] * 1000)  # the block's length, a count
        spendable = left - 0.2 * base
        if spendable <= 0:
            return max(0.0, min(0.5 * increment, left * 0.25) - reserve)
        share = spendable / max(1.0, moves_left) + 0.8 * increment
        return max(0.0, min(share, spendable * 0.25) - reserve)

    def new_game(self) -> None:
        """Called on every `clear_board`; bots with per-game state reset it here."""

    # -- the protocol loop -------------------------------------------------

    def run(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        stdin = stdin or sys.stdin
        stdout = stdout or sys.stdout
        for line in stdin:
            command = parse_command(line)
            if command is None:
                continue
            reply = self.handle(command)
            stdout.write(reply)
            stdout.flush()
            if command.name == "quit":
                return

    def handle(self, command: Command) -> str:
        handler = self._handlers.get(command.name)
        if handler is None:
            return format_response(command.id, False, "unknown command")
        try:
            return format_response(command.id, True, handler(command.args))
        except CommandError as exc:
            return format_response(command.id, False, str(exc))

    # -- command handlers --------------------------------------------------

    def _known_command(self, args: tuple[str, ...]) -> str:
        return "true" if args and args[0] in self._handlers else "false"

    def _reset(self, islands: int, size: int, pie: bool) -> None:
        try:
            variant = Variant(islands, size, pie)
        except ValueError as exc:
            raise CommandError(f"unacceptable size: {exc}") from exc
        self.islands, self.size, self.pie = islands, size, pie
        self.game = Game(variant)

    def _boardsize(self, args: tuple[str, ...]) -> str:
        if len(args) != 1 or not (args[0].isascii() and args[0].isdigit()):
            raise CommandError("syntax error: boardsize N")
        self._reset(self.islands, int(args[0]), self.pie)
        return ""

    def _clear_board(self, args: tuple[str, ...]) -> str:
        self._reset(self.islands, self.size, self.pie)
        self.new_game()
        return ""

    def _islands(self, args: tuple[str, ...]) -> str:
        if args not in (("8",), ("4",)):
            raise CommandError("unsupported island count (8 or 4)")
        islands = int(args[0])
        size = self.size if _valid(islands, self.size) else 11
        self._reset(islands, size, self.pie)
        return ""

    def _pie(self, args: tuple[str, ...]) -> str:
        if args not in (("on",), ("off",)):
            raise CommandError("syntax error: atoll-pie on|off")
        self._reset(self.islands, self.size, args[0] == "on")
        return ""

    def _time_settings(self, args: tuple[str, ...]) -> str:
        if not args:
            raise CommandError("syntax error: atoll-time_settings none|fischer|movetime|moves")
        self.time_settings = args
        return ""

    def _time_left(self, args: tuple[str, ...]) -> str:
        try:
            color = Color.parse(args[0])
            self.time_left_ms[color] = int(args[1])
        except (IndexError, ValueError) as exc:
            raise CommandError("syntax error: atoll-time_left COLOR MS") from exc
        return ""

    def _color(self, args: tuple[str, ...], index: int = 0) -> Color:
        try:
            return Color.parse(args[index])
        except (IndexError, ValueError) as exc:
            raise CommandError("syntax error: expected a colour (b or w)") from exc

    def _play(self, args: tuple[str, ...]) -> str:
        color = self._color(args)
        if len(args) != 2:
            raise CommandError("syntax error: play COLOR MOVE")
        try:
            self.game.play(self.game.parse_move(args[1]), color)
        except IllegalMove as exc:
            raise CommandError(str(exc)) from exc
        return ""

    def _genmove(self, args: tuple[str, ...]) -> str:
        color = self._color(args)
        if self.game.over:
            raise CommandError("game is over")
        if color is not self.game.to_move:
            raise CommandError(f"it is {self.game.to_move}'s turn, not {color}'s")
        move = self.choose_move(self.game, color)
        if move == "resign":
            return move
        try:
            self.game.play(self.game.parse_move(move), color)
        except IllegalMove as exc:
            raise CommandError(f"internal error: the bot chose {exc}") from exc
        return SWAP if move.lower() in ("swap", "swap-pieces", "swap-sides") else move.lower()

    def _final_score(self, args: tuple[str, ...]) -> str:
        if self.game.winner is None:
            raise CommandError("cannot score: the game is not over")
        return "B+" if self.game.winner is Color.BLACK else "W+"


def moves_left(game: Game, by_empty: float, *, floor: float = 6.0) -> float:
    """How many more moves this player will likely make, for sharing out its clock.

    Games end long before the board fills: on big boards a share of the empty cells
    overestimates the moves left several times over, so it is capped by a length that
    grows with the board's size.
    """
    by_size = 2.5 * game.variant.size - len(game.moves) / 2
    return max(floor, min(by_empty, by_size))


def _valid(islands: int, size: int) -> bool:
    try:
        Variant(islands, size)
    except ValueError:
        return False
    return True
