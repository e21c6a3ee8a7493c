#!/usr/bin/env python3
"""Engines with the mistakes bot authors make, one per mode, for `arbiter check` tests.

Usage: checkbots.py MODE [--seed N]

Each mode is arbiter/bots/skeleton.py (random legal moves, every atoll-* command the
skeleton handles) with one realistic bug.  Unlike badbot.py, the bugs are not loud
faults on a chosen genmove: the engine looks healthy until a check puts it in the
situation its author did not test.  ``--seed`` seeds the move choice (default 1).

Modes:
  ok                   behaves correctly
  ignores-boardsize    accepts every size the protocol allows (and refuses the others)
                       but keeps its board at size 11, so on other sizes it refuses
                       valid plays and answers cells of the 11 board
  ignores-clear-board  answers clear_board but keeps the stones and history (boardsize
                       only resets when the size or island count changes), so after a
                       game it refuses plays of cells it believes taken ("? illegal
                       move") and never genmoves them
  transposed           reads the moves it is sent with the rank counted from the wrong
                       end of the file (rank k of a file of height H read as H+1-k, on
                       both boards) but writes its own moves correctly, so its board
                       differs from the referee's; it plays the most central cell it
                       believes empty, so after a few plays that are not mirror images
                       of each other, its genmove often names an occupied cell
  swaps-without-pie    answers atoll-pie off but ignores it, and answers "swap" to every
                       genmove on move 2
  debug-stdout         writes "thinking..." on stdout before every genmove answer
  overruns-time        once told its clock (atoll-time_left or time_left for the colour
                       it is then asked to play), sleeps remaining + 500 ms before
                       answering that genmove
  no-pipelining        reads stdin in chunks with os.read and runs only the first
                       command of each chunk, dropping the rest, so pipelined commands
                       are never answered
  ignores-quit         answers quit but does not exit, and at the end of input sleeps
                       forever instead of exiting
  wins                 behaves correctly and takes a winning cell when it has one (the
                       correct bot the reading mistakes below are copies of)
  hex-rows-from-bottom   "wins", but numbers Hex rows from the bottom (as Atoll ranks),
                       reading and writing: every move it makes is legal
  files-from-right     "wins", but counts file letters from the right, on both boards
  letter-number-swapped  "wins", but reads and writes the letter as the row and the
                       number as the column (on Atoll, names off the board)
  atoll-ranks-from-top   "wins", but counts Atoll ranks from the top of each file
  swaps-central-without-pie  forgets the pie setting when the first stone is within
                       one cell of the centre, and swaps there
  refuses-7-and-23     refuses boardsize 7 and 23 without saying so in any declaration
  one-newline          ends every answer with one newline instead of an empty line
  win-no-island-chain  "wins", but its win test joins stones only: a chain through a
                       third island of its colour is not a win to it
  win-any-two-islands  "wins", but counts any group touching two of its islands as a win
                       (takes the first such cell in name order)
  colour-cached        "wins", but looks for wins of the colour of its first genmove
  swap-recoloured      "wins", but recolours the swapped first stone on its own board
  large-board-bytes    "wins", but keeps cells in a byte-indexed board: on boards of more
                       than 256 cells the cells past 255 overwrite the first ones
  odd-files            "wins", but uses the Atoll neighbour rule of even files (ranks k
                       and k+1 of the files beside it) for odd files too
  top-cells            "wins", but gives even Atoll files the height of odd ones: it
                       believes in a cell above the top of each even file (where an island
                       stone stands) and scans its cells file by file for a win
  movetime-seconds     "wins", and thinks for a quarter of its movetime, but reads
                       movetime's milliseconds as seconds (at most 5 s)
"""

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "arbiter" / "bots"))

import skeleton  # noqa: E402, RUF100

MODES = [
    "ok",
    "ignores-boardsize",
    "ignores-clear-board",
    "transposed",
    "swaps-without-pie",
    "debug-stdout",
    "overruns-time",
    "no-pipelining",
    "ignores-quit",
    "wins",
    "hex-rows-from-bottom",
    "files-from-right",
    "letter-number-swapped",
    "atoll-ranks-from-top",
    "swaps-central-without-pie",
    "refuses-7-and-23",
    "one-newline",
    "win-no-island-chain",
    "win-any-two-islands",
    "colour-cached",
    "swap-recoloured",
    "large-board-bytes",
    "odd-files",
    "top-cells",
    "movetime-seconds",
]
WIN_MISTAKES = (
    "win-no-island-chain",
    "win-any-two-islands",
    "colour-cached",
    "swap-recoloured",
    "large-board-bytes",
    "odd-files",
    "top-cells",
)
MISREAD = (
    "hex-rows-from-bottom",
    "files-from-right",
    "letter-number-swapped",
    "atoll-ranks-from-top",
)
CHUNK = 65536


def sleep_forever():
    while True:
        time.sleep(3600)


def mirrored(game, cell):
    """The wrong reading of a cell name in transposed mode: the rank counted from the
    wrong end of its file (Hex row 1 is the top, Atoll rank 1 the bottom, and code
    reused between the two mixes them up).  Always a valid name of the same board."""
    x, k = skeleton.FILE_LETTERS.index(cell[0]), int(cell[1:])
    height = game.size if game.islands == 4 else game.size - 2 + x % 2
    return f"{cell[0]}{height + 1 - k}"


def position(game, cell):
    """Where a cell is drawn, in units of the distance between neighbouring centres."""
    x, k = skeleton.FILE_LETTERS.index(cell[0]), int(cell[1:])
    if game.islands == 4:
        return x + k / 2, k * math.sqrt(3) / 2
    # Atoll: files are sqrt(3)/2 apart and each file is offset by half a cell from
    # its neighbours; axial r = k + x // 2 as in atoll-board.md.
    return x * math.sqrt(3) / 2, k + x // 2 - x / 2


def centre_distances(game):
    """Distance of every cell from the centre of the board."""
    points = {cell: position(game, cell) for cell in game.cells}
    cx = sum(p[0] for p in points.values()) / len(points)
    cy = sum(p[1] for p in points.values()) / len(points)
    return {cell: math.hypot(px - cx, py - cy) for cell, (px, py) in points.items()}


def misread(mode, game, cell):
    """A name read (or written: each mistake is its own inverse) through a mode's
    mistake; the name itself where the mistake does not apply."""
    x, k = skeleton.FILE_LETTERS.index(cell[0]), int(cell[1:])
    height = game.size if game.islands == 4 else game.size - 2 + x % 2
    if (mode == "hex-rows-from-bottom" and game.islands == 4) or (
        mode == "atoll-ranks-from-top" and game.islands == 8
    ):
        k = height + 1 - k
    elif mode == "files-from-right":
        x = game.size - 1 - x
    elif mode == "letter-number-swapped":
        x, k = k - 1, x + 1
    if not 0 <= x < len(skeleton.FILE_LETTERS):
        return "z99"  # a name off every board: the referee refuses it
    return f"{skeleton.FILE_LETTERS[x]}{k}"


def winning_cell(game, mode="wins", colour=None):
    """A cell that wins at once for the side to move (or `colour`), on this bot's own
    board, through the win test of `mode`."""
    from arbiter.rules import Color, Game, Variant

    board = Game(Variant(game.islands, game.size, pie=False))
    names = board.geometry.names
    stones = dict(game.stones)
    if mode == "swap-recoloured" and game.history[1:2] and game.history[1][1] == "swap":
        first = game.history[0][1]
        stones[first] = "w"  # the Hex habit: the swapped stone changes colour
    if mode == "large-board-bytes" and len(names) > 256:
        stones = {names[board.geometry.name_index[c] % 256]: v for c, v in stones.items()}
    try:
        for cell, value in stones.items():
            board.to_move = Color.BLACK if value == "b" else Color.WHITE
            board.play(cell)
    except ValueError:
        return None  # a board the rules do not accept: no opinion
    me = Color.BLACK if (colour or game.to_move) == "b" else Color.WHITE
    if mode == "top-cells" and game.islands == 8:
        return top_cells_win(board, me)
    if mode == "odd-files" and game.islands == 8:
        return odd_files_win(board, me)
    if mode in ("win-no-island-chain", "win-any-two-islands"):
        from arbiter.check.wins import _islands_of, _stone_groups

        geom = board.geometry
        for cell in board.legal_cells():
            trial = board.copy()
            trial.to_move = me
            trial.play(cell)
            if mode == "win-any-two-islands":
                root = trial._find(cell)
                if bin(trial._mask[root] & geom.island_mask[me]).count("1") >= 2:
                    return names[cell]
            elif any(
                _islands_of(trial, me, g) in geom.winning_masks for g in _stone_groups(trial, me)
            ):
                return names[cell]
        return None
    wins = board.winning_cells(me)
    return board.move_name(wins[0]) if wins else None


def top_cells_win(board, me):
    """The first winning cell, file by file, on a board with a cell invented above the
    top of each even file (rank size-1 there)."""
    from arbiter.check.wins import invented_wins

    geom = board.geometry
    found = [(geom.cells[c][0], geom.cells[c][1], geom.names[c]) for c in board.winning_cells(me)]
    for x in invented_wins(board, me):
        found.append((x, 10**6, f"{skeleton.FILE_LETTERS[x]}{board.variant.size - 1}"))
    return min(found)[2] if found else None


def odd_files_win(board, me, wrong=True):
    """A winning cell of `me` on `board` with the even files' neighbour rule used on odd
    files too: a flood fill over `me`'s stones and through its islands, as the referee's
    win test, but over the wrong neighbours."""
    geom = board.geometry
    index = geom.index
    neighbours = []
    for name, (q, r) in zip(geom.names, geom.cells, strict=True):
        odd = wrong and skeleton.FILE_LETTERS.index(name[0]) % 2 == 1
        near = [(q + dq, r + dr + (1 if odd and dq else 0)) for dq, dr in geom.directions]
        neighbours.append([index[c] for c in near if c in index])
    mine = geom.island_mask[me]
    islands_of = [sum(1 << k for k in geom.shores[c] if mine >> k & 1) for c in range(geom.n_cells)]
    stones = [c for c in range(geom.n_cells) if board.colors[c] == me]
    for cell in board.legal_cells():
        seen, todo, reached = {cell}, [cell], 0
        while todo:
            c = todo.pop()
            fresh = islands_of[c] & ~reached
            reached |= islands_of[c]
            near = [s for s in stones if islands_of[s] & fresh] if fresh else []
            for nb in near + [n for n in neighbours[c] if board.colors[n] == me]:
                if nb not in seen:
                    seen.add(nb)
                    todo.append(nb)
        if reached in geom.winning_masks:
            return geom.names[cell]
    return None


class CheckBot(skeleton.Bot):
    """The skeleton bot with the bug of one mode."""

    name = "checkbot"

    def __init__(self, mode, seed):
        self.mode = mode
        self.rng = random.Random(seed)
        super().__init__(chooser=self.choose)
        self.name = f"checkbot-{mode}"
        self.fresh_time = set()  # colours told their clock since their last genmove
        self.cached = None  # colour-cached: the colour of its first genmove

    # ---- strategy ------------------------------------------------------------
    def choose(self, game):
        if self.mode == "swaps-without-pie" and len(game.history) == 1:
            return "swap"
        if self.mode in WIN_MISTAKES:
            if self.mode == "colour-cached" and self.cached is None:
                self.cached = game.to_move
            win = winning_cell(game, self.mode, self.cached)
            if win is not None and (win in game.empty_cells() or self.mode == "top-cells"):
                return win
        if self.mode in ("wins", "movetime-seconds") or self.mode in MISREAD:
            win = winning_cell(game)
            if win is not None:
                return win
        empty = game.empty_cells()
        if self.mode == "transposed":
            # A "play near the centre" bot: it lands on the cells the opponent really
            # took, which it believes empty because it read them mirrored.
            distance = centre_distances(game)
            nearest = min(distance[cell] for cell in empty)
            return self.rng.choice([c for c in empty if distance[c] < nearest + 1e-9])
        return self.rng.choice(empty)

    # ---- the bugs --------------------------------------------------------------
    def run(self):
        if self.mode == "no-pipelining":
            return self.run_chunked()
        status = super().run()
        if self.mode == "ignores-quit":
            sleep_forever()
        return status

    def run_chunked(self):
        """The read()-based loop: one chunk is taken to be one command."""
        fd = self.stdin.fileno()
        while not self.quit_requested:
            data = os.read(fd, CHUNK)
            if not data:
                break
            for raw in data.decode("utf-8", errors="replace").split("\n"):
                line = skeleton.preprocess(raw)
                if line:
                    self.handle_command(*skeleton.split_command(line))
                    break  # the rest of the chunk is lost
        return 0

    def cmd_quit(self, args):
        if self.mode != "ignores-quit":
            return super().cmd_quit(args)
        return ""

    def cmd_boardsize(self, args):
        game = self.game
        if self.mode == "refuses-7-and-23" and args in (["7"], ["23"]) and game.islands == 8:
            raise skeleton.GtpError("unacceptable size")
        if self.mode not in ("ignores-boardsize", "ignores-clear-board"):
            return super().cmd_boardsize(args)
        skeleton.expect_args(args, 1, "boardsize SIZE")
        size = skeleton.parse_int(args[0], "size")
        # Sizes are still checked, so that only the ignoring itself shows.
        if not skeleton.size_is_valid(game.islands, size):
            raise skeleton.GtpError("unacceptable size")
        if self.mode == "ignores-clear-board" and size != game.size:
            game.size = size  # a new size needs a new board, even for this bot
            game.clear()
        return ""

    def cmd_atoll_islands(self, args):
        # The referee sends atoll-islands before every game, and the skeleton clears
        # the board there too: this bot only rebuilds it for a different variant.
        game = self.game
        if self.mode != "ignores-clear-board" or args != [str(game.islands)]:
            return super().cmd_atoll_islands(args)
        return ""

    def cmd_clear_board(self, args):
        if self.mode == "ignores-clear-board":
            return ""
        return super().cmd_clear_board(args)

    def cmd_play(self, args):
        if self.mode == "transposed" and len(args) == 2 and self.is_cell(args[1]):
            args = [args[0], mirrored(self.game, args[1].lower())]
        if self.mode in MISREAD and len(args) == 2 and args[1].lower() not in skeleton.SWAP_ALIASES:
            args = [args[0], misread(self.mode, self.game, args[1].lower())]
        return super().cmd_play(args)

    def respond(self, cmd_id, ok, text):
        if self.mode != "one-newline":
            return super().respond(cmd_id, ok, text)
        self.send(skeleton.format_response(cmd_id, ok, text)[:-1])

    def is_cell(self, text):
        return text.lower() in self.game.cell_set

    def cmd_atoll_pie(self, args):
        result = super().cmd_atoll_pie(args)
        if self.mode == "swaps-without-pie":
            self.game.pie = True  # "off" acknowledged, then forgotten
        return result

    def cmd_atoll_time_left(self, args):
        result = super().cmd_atoll_time_left(args)
        self.fresh_time.add(skeleton.parse_colour(args[0]))
        return result

    def cmd_time_left(self, args):
        result = super().cmd_time_left(args)
        self.fresh_time.add(skeleton.parse_colour(args[0]))
        return result

    def cmd_genmove(self, args):
        game = self.game
        if self.mode == "swaps-central-without-pie" and len(game.history) == 1:
            first = game.history[0][1]
            distance = centre_distances(game)
            if first != "swap" and distance[first] <= min(distance.values()) + 1.01:
                game.history.append((skeleton.parse_colour(args[0]), "swap"))
                return "swap"  # its swap logic never asks whether the pie rule is on
        if self.mode in MISREAD:
            move = self.genmove(args)
            return move if move in ("resign", "swap") else misread(self.mode, self.game, move)
        return self.genmove(args)

    def genmove(self, args):
        if self.mode == "overruns-time" and len(args) == 1:
            colour = skeleton.parse_colour(args[0])
            if colour in self.fresh_time:
                time.sleep((self.game.time_left[colour][0] + 500) / 1000)
        self.fresh_time.clear()
        if self.mode == "movetime-seconds" and self.game.time_settings[0] == "movetime":
            # "movetime 500" read as 500 seconds: a quarter of it, at most 5 s
            time.sleep(min(self.game.time_settings[1] / 4, 5.0))
        if self.mode == "debug-stdout":
            self.send("thinking...\n")
        if self.mode == "top-cells" and len(args) == 1:
            self.game.to_move = skeleton.parse_colour(args[0])
            move = self.choose(self.game)
            if move not in self.game.cell_set:
                return move  # a cell only on its own board: it answers it all the same
            return self.game.play(self.game.to_move, move)
        return super().cmd_genmove(args)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Engines with typical bot-author bugs.")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    return parser.parse_args(argv)


def main(argv=None):
    opts = parse_args(argv)
    skeleton.log(f"checkbot pid {os.getpid()} mode {opts.mode}")
    try:
        return CheckBot(opts.mode, opts.seed).run()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
