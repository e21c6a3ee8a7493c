#!/usr/bin/env python3
"""A hostile engine: plays random legal moves, and at its first genmove attacks.

Usage: attacker.py ATTACK [--token TOKEN] [--path FILE]... [--port PORT]

TOKEN is a string found in the command lines of the processes it goes after (the
referee's records path, the opponent's arguments). What it did is written on stderr as
"attack ATTACK: RESULT" lines, so a test can tell a refused attack from one not tried.

Attacks:
  kill-opponent   SIGKILL every other process whose command line holds TOKEN and which
                  is not a referee, then play on
  kill-referee    SIGKILL every process running arbiter whose command line holds TOKEN
  term-referee    the same with SIGTERM
  inject          write a forged answer into the stdout pipe of the opponent (found as
                  for kill-opponent) through /proc/PID/fd/1, then play on
  write           append a forged line to every --path FILE, then play on
  remount         as write, after trying to unmount each FILE (a hidden one) and to
                  remount its folder and / read-write, also from a new user namespace
  connect         connect to 127.0.0.1:PORT and send a line, then play on
  escape          start a child in a new session, with an empty environment, that sleeps
                  with TOKEN in its command line, then play on
  memory          allocate and touch memory 16 MiB at a time until stopped
  cpu             burn CPU until stopped
  fork            start sleeping children until a fork is refused, then exit 1
  disk            with SIGXFSZ at its default action (as for a C program), write one file
                  in $TMPDIR until stopped
  fill            write 1 MiB files in $TMPDIR until the disk is full, then exit 1
  flood           write to stdout without end, never a newline
  think           not an attack: think 11 seconds over its first move, then play on
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from arbiter.bot import Bot
from arbiter.rules import Color, Game


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def others(token: str) -> list[tuple[int, str]]:
    """Processes this one can see whose command line holds the token."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if token in cmdline and "attacker.py" not in cmdline:
            found.append((int(entry.name), cmdline))
    return found


def is_referee(cmdline: str) -> bool:
    return "arbiter" in cmdline and ("match" in cmdline or "tournament" in cmdline)


class Attacker(Bot):
    name = "attacker"

    def __init__(self, opts: argparse.Namespace) -> None:
        super().__init__()
        self.opts = opts
        self.attacked = False

    def choose_move(self, game: Game, color: Color) -> str:
        if not self.attacked:
            self.attacked = True
            attack(self.opts)
        return game.move_name(game.legal_cells()[0])


def signal_all(token: str, sig: int, referee: bool) -> str:
    hit = []
    for pid, cmdline in others(token):
        if is_referee(cmdline) == referee:
            try:
                os.kill(pid, sig)
                hit.append(str(pid))
            except OSError as exc:
                hit.append(f"{pid} refused ({exc.strerror})")
    return "signalled " + ", ".join(hit) if hit else "no target found"


def attack(opts: argparse.Namespace) -> None:
    name = opts.attack
    result = "done"
    if name == "kill-opponent":
        result = signal_all(opts.token, signal.SIGKILL, referee=False)
    elif name in ("kill-referee", "term-referee"):
        sig = signal.SIGKILL if name == "kill-referee" else signal.SIGTERM
        result = signal_all(opts.token, sig, referee=True)
    elif name == "inject":
        hits = []
        for pid, cmdline in others(opts.token):
            if is_referee(cmdline):
                continue
            try:
                with open(f"/proc/{pid}/fd/1", "w") as pipe:
                    pipe.write("= z99\n\n= z99\n\n")
                hits.append(str(pid))
            except OSError as exc:
                hits.append(f"{pid} refused ({exc.strerror})")
        result = "wrote to " + ", ".join(hits) if hits else "no target found"
    elif name in ("write", "remount"):
        if name == "remount":
            for path in opts.path:
                for command in (
                    ["umount", path],
                    ["mount", "-o", "remount,bind,rw", os.path.dirname(path)],
                    ["mount", "-o", "remount,bind,rw", "/"],
                    ["unshare", "-Urm", "mount", "-o", "remount,bind,rw", "/"],
                ):
                    done = subprocess.run(command, capture_output=True, text=True)
                    log(f"attack remount: {' '.join(command)} -> {done.returncode}")
        outcomes = []
        for path in opts.path:
            try:
                with open(path, "a") as handle:
                    handle.write('{"forged": true}\n')
                outcomes.append(f"{path} written")
            except OSError as exc:
                outcomes.append(f"{path} refused ({exc.strerror})")
        result = "; ".join(outcomes)
    elif name == "connect":
        try:
            with socket.create_connection(("127.0.0.1", opts.port), timeout=2) as conn:
                conn.sendall(b"attacker was here\n")
            result = "connected"
        except OSError as exc:
            result = f"refused ({exc})"
    elif name == "escape":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", opts.token],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={},
        )
        result = f"child {child.pid} started"
    elif name == "memory":
        hoard = []
        while True:
            block = bytearray(16 * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            hoard.append(block)
    elif name == "cpu":
        while True:
            pass
    elif name == "fork":
        started = 0
        while True:
            try:
                pid = os.fork()
            except OSError as exc:
                log(f"attack fork: refused after {started} ({exc.strerror})")
                os._exit(1)
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            started += 1
    elif name == "disk":
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        chunk = b"x" * (1024 * 1024)
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "big"), "wb") as handle:
            while True:
                handle.write(chunk)
                handle.flush()
    elif name == "fill":
        folder = os.environ.get("TMPDIR", "/tmp")
        chunk = b"x" * (1024 * 1024)
        written = 0
        try:
            while written < 10_000:
                with open(os.path.join(folder, f"fill-{os.getpid()}-{written}"), "wb") as h:
                    h.write(chunk)
                written += 1
        except OSError as exc:
            log(f"attack fill: stopped after {written} MiB ({exc.strerror})")
            os._exit(1)
        result = f"wrote {written} MiB"
    elif name == "think":
        time.sleep(11)
    elif name == "flood":
        while True:
            sys.stdout.write("x" * 65536)
    log(f"attack {name}: {result}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("attack")
    parser.add_argument("--token", default="")
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--port", type=int, default=0)
    Attacker(parser.parse_args()).run()


if __name__ == "__main__":
    main()
