#!/usr/bin/env python3
"""Plain-GTP Hex engine in the dialect of the Benzene family (MoHex, Wolve), for tests.

Usage: gtphex.py [--seed N] [--always-swap] [--max-size N] [--protocol-version V]
                 [--banner TEXT]

It knows nothing of the Atoll extensions, so the referee has to host it through a
dialect (arbiter/dialect.py).  What differs from an engine written for PROTOCOL.md:

  - no ``atoll-*`` command; ``list_commands`` lists protocol_version, name, version,
    known_command, list_commands, quit, boardsize, clear_board, play, genmove,
    showboard, param_game and time_left, and not time_settings;
  - Hex only, on an N x N board with HexGui names (column letter a.., row 1..N from
    the top); ``boardsize N`` (or ``boardsize N N``) outside 2..--max-size (default 19)
    answers ``? unacceptable size``;
  - the pie move is spelled ``swap-pieces`` both ways: ``genmove`` answers it, ``play``
    accepts it as move 2, and ``play COLOR swap`` (or any other spelling) answers
    ``? illegal move``.  The swap is the protocol's: the first stone stays black;
  - it swaps only after ``param_game allow_swap 1``, and then only as move 2 when the
    first stone is in the central area (at least N // 4 cells from every edge) or
    with ``--always-swap``.  ``param_game`` with no argument lists the parameters, with
    a name shows its value, with a name and a value sets it; unknown names answer
    ``? unknown parameter``;
  - ``time_left COLOR SECONDS STONES`` is accepted and ignored; ``time_settings`` is
    an unknown command;
  - ``showboard`` answers a drawing with lines made only of spaces inside the
    response, so a reader must treat only a truly empty line as its end.

Flags:
  --seed N              seed of the random move choice (default 1: games are repeatable)
  --always-swap         swap as move 2 whatever the first stone (once allow_swap is 1)
  --max-size N          largest size boardsize accepts (default 19; the rules allow 26)
  --protocol-version V  answer V to protocol_version (default 2), to test refusals
  --banner TEXT         write TEXT and a newline on stdout before reading any command
"""

import argparse
import os
import random
import re
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "arbiter" / "bots"))

import skeleton  # noqa: E402, RUF100
from skeleton import GtpError  # noqa: E402, RUF100

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
    "param_game",
    "time_left",
]
SWAP = "swap-pieces"
PARAMS = ("allow_swap",)


class GtpHex(skeleton.Bot):
    """The skeleton's framing and board, with Benzene's command set and pie spelling."""

    name = "GtpHex"
    version = "1.0"

    def __init__(self, opts):
        super().__init__(chooser=None)
        self.opts = opts
        self.rng = random.Random(opts.seed)
        self.allow_swap = False
        # Replace the skeleton's command table: only what a Benzene program implements.
        self.commands = {name: getattr(self, "cmd_" + name) for name in COMMAND_NAMES}
        game = self.game
        game.islands = opts.islands  # 4: Hex; 8: the same program playing Atoll, unannounced
        game.size = min(11, opts.max_size)
        game.clear()

    def cmd_protocol_version(self, args):
        return self.opts.protocol_version

    def cmd_boardsize(self, args):
        # HexGui sends "boardsize N N" to Benzene programs; accept both forms.
        if len(args) not in (1, 2):
            raise GtpError("syntax error: usage: boardsize N [N]")
        sizes = [skeleton.parse_int(arg, "size") for arg in args]
        if len(set(sizes)) != 1:
            raise GtpError("unacceptable size: the board must be square")
        if not 2 <= sizes[0] <= self.opts.max_size:
            raise GtpError("unacceptable size")
        if self.game.islands == 8 and sizes[0] not in (7, 11, 15, 19, 23):
            raise GtpError("unacceptable size")
        self.game.size = sizes[0]
        self.game.clear()
        return ""

    def cmd_play(self, args):
        skeleton.expect_args(args, 2, "play COLOR MOVE")
        colour = skeleton.parse_colour(args[0])
        move = args[1].lower()
        game = self.game
        if move == SWAP:
            if len(game.history) != 1 or game.history[0][1] == "swap":
                raise GtpError("illegal move")
            self.record_swap(colour)
            return ""
        # The skeleton's Game would take "swap" and "swap-sides"; this dialect does not.
        if not re.fullmatch(r"[a-z][0-9]{1,4}", move):
            raise GtpError("illegal move")
        try:
            game.play(colour, move)
        except GtpError:
            raise GtpError("illegal move") from None
        return ""

    def cmd_genmove(self, args):
        skeleton.expect_args(args, 1, "genmove COLOR")
        colour = skeleton.parse_colour(args[0])
        game = self.game
        if self.wants_swap():
            self.record_swap(colour)
            return SWAP
        empty = game.empty_cells()
        if not empty:
            return "resign"  # what Benzene answers once nothing is left to play
        return game.play(colour, self.rng.choice(empty))

    def wants_swap(self):
        game = self.game
        if not self.allow_swap or len(game.history) != 1 or game.history[0][1] == "swap":
            return False
        return self.opts.always_swap or self.is_central(game.history[0][1])

    def is_central(self, cell):
        margin = self.game.size // 4
        column = skeleton.FILE_LETTERS.index(cell[0])
        row = int(cell[1:]) - 1
        return all(margin <= i < self.game.size - margin for i in (column, row))

    def record_swap(self, colour):
        # PROTOCOL.md 4.3: the stone stays black where it is and the same colour that
        # swapped moves again, so only the history changes.
        self.game.history.append((colour, "swap"))
        self.game.to_move = colour

    def cmd_param_game(self, args):
        if not args:
            return "\n".join(f"{name} {self.param(name)}" for name in PARAMS)
        if args[0] not in PARAMS:
            raise GtpError("unknown parameter")
        if len(args) == 1:
            return self.param(args[0])
        if len(args) != 2 or args[1] not in ("0", "1"):
            raise GtpError("syntax error: usage: param_game allow_swap 0|1")
        self.allow_swap = args[1] == "1"
        return ""

    def param(self, name):
        return str(int(getattr(self, name)))

    def cmd_time_left(self, args):
        skeleton.expect_args(args, 3, "time_left COLOR SECONDS STONES")
        skeleton.parse_colour(args[0])
        skeleton.parse_int(args[1], "time")
        skeleton.parse_int(args[2], "stones")
        return ""

    def cmd_showboard(self, args):
        # Rows are indented to draw the rhombus, and the drawing is framed by lines of
        # spaces as wide as the board: they belong to the response, which only the
        # truly empty line after the last row ends.
        game, size = self.game, self.game.size
        mark = {"b": "X", "w": "O"}
        letters = skeleton.FILE_LETTERS[:size]
        header = "    " + "  ".join(letters)
        rows = []
        for row in range(1, size + 1):
            cells = "  ".join(mark.get(game.stones.get(f"{x}{row}"), ".") for x in letters)
            rows.append(f"{row:2d}" + " " * (row + 1) + cells + f"  {row}")
        blank = " " * max(len(line) for line in rows)
        footer = " " * (size + 3) + header.strip()
        title = f"GtpHex {size}x{size}, {len(game.history)} moves"
        return "\n".join([title, blank, header, *rows, footer, blank])


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Plain-GTP Hex engine (Benzene dialect).")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--always-swap", action="store_true", help="swap as move 2 whenever allow_swap is 1"
    )
    parser.add_argument(
        "--max-size", type=int, default=19, help="largest accepted board size (default 19)"
    )
    parser.add_argument(
        "--protocol-version", default="2", help="answer to protocol_version (default 2)"
    )
    parser.add_argument(
        "--islands",
        type=int,
        choices=(4, 8),
        default=4,
        help="4: Hex (default); 8: plays Atoll without saying so",
    )
    parser.add_argument(
        "--banner", default=None, help="written on stdout, with a newline, before reading commands"
    )
    return parser.parse_args(argv)


def main(argv=None):
    opts = parse_args(argv)
    try:
        if opts.banner is not None:
            sys.stdout.write(opts.banner + "\n")
            sys.stdout.flush()
        return GtpHex(opts).run()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
