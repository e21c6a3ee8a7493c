#!/usr/bin/env python3
"""Misbehaving GTP engine for the harness tests.

Usage: badbot.py MODE [--after N] [--ms M] [--name NAME] [--say TEXT] [--hostile]

The engine plays like arbiter/bots/skeleton.py (random legal moves) until its
fault triggers.  For the modes that act on genmove, the first N genmove
commands (``--after N``, default 0) are answered normally and the fault
happens on every genmove after that.  ``--ms`` is the delay used by "slow" and
"slow-start" (default 500); ``--name`` is the answer to "name" (default
"badbot"; ``{pid}`` in it becomes the process id, so each process answers its
own).  At startup the engine writes "badbot pid PID mode MODE" on stderr, then the
``--say`` text after decoding its backslash escapes; ``--hostile`` decodes escapes in
the name too (for the terminal-safety tests).

Modes:
  ok                behaves normally
  crash-start       exits with status 3 before reading anything
  crash             genmove: writes "boom" on stderr, exits with status 1, no answer
  hang              genmove: never answers (sleeps forever)
  hang-handshake    never answers anything; reads and ignores input, sleeps forever
  slow              every genmove sleeps --ms milliseconds, then answers normally
  garbage           genmove: answers "hello there" (not a GTP response)
  huge-line         genmove: writes 20 MiB of "x" without a newline, sleeps forever
  stderr-flood      plays normally, writes about 1 MiB on stderr for every command
  wrong-id          genmove: answers a legal move with the id + 1000 (1000 if no id)
  question          genmove: answers "?id cannot play"
  illegal-occupied  genmove: answers an occupied cell (plays normally while the
                    board is empty, so the fault moves to the next genmove)
  illegal-offboard  genmove: answers "z99"
  illegal-island    genmove: answers "b11" (an island position on the 11 Atoll board)
  unparseable       genmove: answers "@@"
  swap-late         genmove: answers "swap" (plays normally while fewer than two
                    moves have been played, so the swap is always late)
  swapper           genmove with exactly one stone on the board and no swap played
                    yet: answers "swap" (whatever the pie setting); else normal
  resign            genmove: answers "resign"
  resign-white      genmove w: answers "resign" (so, without the pie rule, it loses
                    every game it plays white: half its games); genmove b: normal
  reject-play       answers "? illegal move" to every "play" of a cell once N
                    genmoves have been answered
  ignore-quit       answers "quit" but does not exit; at end of input sleeps forever
  ignore-sigterm    ignores SIGTERM, and behaves like ignore-quit
  fork-child        forks a child that keeps stdin/stdout/stderr open and sleeps
                    forever (same session); writes "child pid PID" on stderr
  no-newline-eof    genmove: answers "=id move\\n" without the empty line, exits 0
  crlf              ends every line with CR LF, writes "= " for empty results and
                    a stray empty line before every response
  slow-start        sleeps --ms milliseconds before reading anything
  stop-parent       genmove, once --after N have been answered and only if it is the
                    first process to create the --flag file: after --ms, stops its
                    parent (the harness or its worker) with SIGSTOP, then answers
  escape            forks a child that starts a new session (leaving the engine's
                    process group) and keeps stdin/stdout/stderr open, sleeping
                    forever; writes "child pid PID" on stderr; at its first genmove
                    the engine itself exits with status 1 without answering
"""

import argparse
import codecs
import os
import random
import signal
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "arbiter" / "bots"))

import skeleton  # noqa: E402, RUF100

MODES = [
    "ok",
    "crash-start",
    "crash",
    "hang",
    "hang-handshake",
    "slow",
    "garbage",
    "huge-line",
    "stderr-flood",
    "wrong-id",
    "question",
    "illegal-occupied",
    "illegal-offboard",
    "illegal-island",
    "unparseable",
    "swap-late",
    "swapper",
    "resign",
    "resign-white",
    "reject-play",
    "ignore-quit",
    "ignore-sigterm",
    "fork-child",
    "no-newline-eof",
    "crlf",
    "slow-start",
    "escape",
    "stop-parent",
]
# Modes whose fault is a wrong answer (or no answer) to genmove.
GENMOVE_FAULTS = {
    "crash",
    "escape",
    "hang",
    "garbage",
    "huge-line",
    "wrong-id",
    "question",
    "illegal-occupied",
    "illegal-offboard",
    "illegal-island",
    "unparseable",
    "swap-late",
    "resign",
    "resign-white",
    "no-newline-eof",
}
FIXED_ANSWERS = {
    "illegal-offboard": "z99",
    "illegal-island": "b11",
    "unparseable": "@@",
    "swap-late": "swap",
    "resign": "resign",
}
NEVER_QUIT = {"ignore-quit", "ignore-sigterm"}


def sleep_forever():
    while True:
        time.sleep(3600)


def flood_stderr(total=1 << 20, chunk=1 << 14):
    """Write about ``total`` bytes on stderr in lines of ``chunk`` bytes."""
    line = ("stderr flood " * (chunk // 13 + 1))[: chunk - 1] + "\n"
    for _ in range(total // chunk):
        sys.stderr.write(line)
        sys.stderr.flush()


class BadBot(skeleton.Bot):
    """The skeleton bot with one configurable fault."""

    def __init__(self, mode, after, ms, name):
        super().__init__()
        self.mode = mode
        self.after = after
        self.ms = ms
        self.normal_genmoves = 0  # genmove commands answered normally so far
        self.name = name

    def claim(self):
        """Once across every process of a run: the first to create the --flag file."""
        try:
            os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except OSError:
            return False
        return True

    def fault_due(self):
        return self.normal_genmoves >= self.after

    def handle_command(self, cmd_id, name, args):
        if self.mode == "stderr-flood":
            flood_stderr()
        if name == "genmove":
            self.genmove(cmd_id, args)
        elif (
            name == "play"
            and self.mode == "reject-play"
            and self.fault_due()
            and len(args) == 2
            and args[1].lower() not in skeleton.SWAP_ALIASES
        ):
            self.respond(cmd_id, False, "illegal move")
        elif name == "quit" and self.mode in NEVER_QUIT:
            self.respond(cmd_id, True, "")
        else:
            super().handle_command(cmd_id, name, args)

    def genmove(self, cmd_id, args):
        """Answer genmove, with the fault of the current mode when it is due."""
        if self.mode == "slow":
            time.sleep(self.ms / 1000)
        if self.mode == "stop-parent" and self.fault_due() and self.claim():
            time.sleep(self.ms / 1000)  # the harness is waiting for the answer
            os.kill(os.getppid(), signal.SIGSTOP)
        if self.mode == "swapper" and self.swap_wanted(args):
            colour = skeleton.COLOURS[args[0].lower()]
            self.game.history.append((colour, "swap"))  # recorded even if pie is off
            self.game.to_move = colour
            self.respond(cmd_id, True, "swap")
            return
        if self.mode in GENMOVE_FAULTS and self.fault_due() and self.fault(cmd_id, args):
            return
        super().handle_command(cmd_id, "genmove", args)
        self.normal_genmoves += 1

    def swap_wanted(self, args):
        """Swapper: one stone on the board, no swap yet and a valid colour argument."""
        game = self.game
        return (
            len(args) == 1
            and args[0].lower() in skeleton.COLOURS
            and len(game.stones) == 1
            and all(move != "swap" for _, move in game.history)
        )

    def fault(self, cmd_id, args):
        """Misbehave on a genmove; return False to answer normally this time."""
        mode, game = self.mode, self.game
        if mode == "escape":
            sys.stdout.flush()
            os._exit(1)
        if mode == "crash":
            sys.stderr.write("boom\n")
            sys.stderr.flush()
            sys.exit(1)
        elif mode == "hang":
            sleep_forever()
        elif mode == "garbage":
            self.send("hello there\n\n")
        elif mode == "huge-line":
            block = b"x" * (1 << 20)
            for _ in range(20):
                self.stdout.write(block)
                self.stdout.flush()
            sleep_forever()
        elif mode == "wrong-id":
            wrong_id = str(int(cmd_id) + 1000) if cmd_id else "1000"
            super().handle_command(wrong_id, "genmove", args)
        elif mode == "question":
            self.respond(cmd_id, False, "cannot play")
        elif mode == "illegal-occupied":
            occupied = sorted(game.stones) or [m for _, m in game.history if m != "swap"]
            if not occupied:
                return False
            self.respond(cmd_id, True, random.choice(occupied))
        elif mode == "swap-late" and len(game.history) < 2:
            return False
        elif mode == "resign-white":
            if not args or args[0].lower() not in ("w", "white"):
                return False
            self.respond(cmd_id, True, "resign")
        elif mode == "no-newline-eof":
            try:
                text = skeleton.format_response(cmd_id, True, self.execute("genmove", args))
            except skeleton.GtpError as error:
                text = skeleton.format_response(cmd_id, False, str(error))
            self.send(text[:-1])
            sys.exit(0)
        else:
            self.respond(cmd_id, True, FIXED_ANSWERS[mode])
        return True

    def respond(self, cmd_id, ok, text):
        if self.mode != "crlf":
            super().respond(cmd_id, ok, text)
            return
        head = ("=" if ok else "?") + cmd_id
        self.send("\r\n" + (head + " " + text).replace("\n", "\r\n") + "\r\n\r\n")


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Misbehaving GTP engine for tests.")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument(
        "--after", type=int, default=0, help="genmove commands answered normally before the fault"
    )
    parser.add_argument(
        "--ms", type=int, default=500, help="delay in milliseconds for slow and slow-start"
    )
    parser.add_argument(
        "--name", default="badbot", help="answer to the name command ({pid} becomes the process id)"
    )
    parser.add_argument(
        "--flag", default="", help="stop-parent: the file whose creation claims the one stop"
    )
    parser.add_argument(
        "--say", default="", help="written on stderr at startup, after decoding backslash escapes"
    )
    parser.add_argument(
        "--hostile", action="store_true", help="decode backslash escapes in --name too"
    )
    opts = parser.parse_args(argv)
    if opts.hostile:
        opts.name = codecs.decode(opts.name, "unicode_escape")
    opts.say = codecs.decode(opts.say, "unicode_escape")
    opts.name = opts.name.replace("{pid}", str(os.getpid()))
    return opts


def main(argv=None):
    opts = parse_args(argv)
    skeleton.log(f"badbot pid {os.getpid()} mode {opts.mode}")
    if opts.say:
        sys.stderr.write(opts.say)
        sys.stderr.flush()
    if opts.mode == "crash-start":
        return 3
    if opts.mode == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if opts.mode in ("fork-child", "escape"):
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
        if child == 0:  # the child: keep the inherited pipes open
            try:
                if opts.mode == "escape":
                    os.setsid()
                sleep_forever()
            finally:
                os._exit(0)
        skeleton.log(f"child pid {child}")
    if opts.mode == "slow-start":
        time.sleep(opts.ms / 1000)
    if opts.mode == "hang-handshake":
        while sys.stdin.buffer.readline():
            pass
        sleep_forever()

    bot = BadBot(opts.mode, opts.after, opts.ms, opts.name)
    bot.flag = opts.flag
    try:
        status = bot.run()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    if opts.mode in NEVER_QUIT:
        sleep_forever()
    return status


if __name__ == "__main__":
    sys.exit(main())
