#!/usr/bin/env python3
"""The arena under load: one real server against many simulated remote engines.

Run: python bench/arena_bench.py [--quick] [--ramp 100,200,500,1000] [--period S]
[--tc TC] [--size N] [--islands 4|8] [--clients K] [--login-timeout S] [--api-timeout S]
[--code DIR] [--frontends N] [--keep DIR]. A ramp to ten thousand engines:
`--ramp 100,1000,2000,5000,10000`; main's server beside this one: `--code /path/to/main`.

The server is a real `python -m arbiter arena serve` process on 127.0.0.1 (port 0), with
one `[[player]]` entry per simulated engine (token hashes made by
`arbiter.arena.config.hash_token`), no engines of its own (all of its CPU goes to the
network path, the referee and the store) and the per-address limits raised, since every
engine comes from 127.0.0.1; it logs at every level to `server.log`, from which each
step counts its harness stalls. The engines are simulated in `--clients` client
processes (by default one per 2,500 engines: one process's event loop and open files
would not hold ten thousand), each this script run with `--client URL` and asked over
its stdin and stdout; each raises its open-file limit as far as the hard limit allows
and says so where that is too low. Each engine speaks the relay protocol of
docs/guide/arena.md itself, answers every command at once, tracks the position with
`arbiter.rules` from the `play` commands it is sent and answers `genmove` with a random
empty cell, so every move is legal. Before each answer it sends `{"type": "t", "ms":
...}`, the time from receiving the command's bytes to answering, which the server
records per move as `reported_ms`.

For each step of the ramp, engines are added until the step's count is connected (each
engine logs in once; a refused or dropped login is counted and tried again after a
short pause, as `arbiter arena connect` does), then the arena plays for `--period`
seconds. Per step:

- logged in: the remote engines GET /api/live lists as connected once the logins of the
  step are done (or `--login-timeout` has passed), and the wall time from the step's
  first new connection to its last engine's answer to the handshake (the server
  welcomes a login, runs the handshake through the relay, then pairs the engine);
- server RSS (VmRSS of the server process, from /proc, at the end of the period) and the
  server's CPU use over the period (utime + stime; 100% is one core), and beside it its
  front ends' together (`--frontends N` writes `frontends = N` into the arena file:
  processes that hold the engines' WebSocket connections);
- games per second: the games the server stored during the period (its count in
  /api/live); and moves per second, the `genmove` commands the engines answered. After
  a step adds many engines at once their games start together and end together, so
  games per second is lumpy over a short period and moves per second is the steadier
  figure of throughput;
- the server's resend buffers: each session keeps the last `RETAIN` bytes it sent, to
  resend after a reconnect; the sum of min(RETAIN, bytes sent) over the sessions is
  printed beside the RSS (it grows with every game an engine plays, up to RETAIN);
- harness stalls: the server's own log of its event loop not running for more than
  0.2 s (arbiter/games/pauses.py), per step, with their total;
- games in play at the end of the period, and the heartbeats in the period at which
  the server's loop was behind (`held` in /api/live: its pacing then cut the pairs
  that may play at once, docs/guide/arena.md "Pacing"); both from /api/live, and 0 for a
  server without pacing (`--code` of an older checkout);
- network time per move: for each engine move of the games that ended in the period,
  read back from the store after the run, the server's measured wait for the answer
  (`move_ms` charged + `allowance_ms` not charged) less what the engine's client
  reported it took (`reported_ms`). It is everything between the referee's write of the
  commands and its read of the answer that is not the engine thinking: the server's own
  event loop, the loopback TCP and WebSocket framing both ways, and the client
  processes' event loops (which run the simulated engines on the same cores: at high
  counts part of the figure is the simulator's own queueing, shown as its lag and CPU).
  The referee excludes from `move_ms` any span in which the server's event loop itself
  stalled (arbiter/games/pauses.py), so the figure leaves those out; the stalled
  milliseconds are shown beside (summed over the games: a stall that many games waited
  through counts once per game).

At the end the server is stopped with SIGTERM and its store read back through the real
CLI (`arbiter arena export FILE --records OUT`): every game seen to end on GET /events
(followed by a child process, raw bytes, so that it is not the slow reader) is in the
store exactly once, no game id is stored twice, no stored game is void, and the store
holds at least the games the server counted just before SIGTERM. The server drops a
page that falls more than its queue behind (arbiter/arena/web.py); the reader then
follows again and the reconnections are counted, so "seen" may be fewer than stored.

A step that cannot be measured is reported as such in the table, with why, and the
ramp goes on while the server runs: the server did not answer GET /api/live within
`--api-timeout` (or exited), the step's engines did not all answer the handshake within
`--login-timeout` (refusals and connection errors are counted by kind, EMFILE among
them), or a client process exited or stopped answering.

The figures depend on the machine and on what else runs on it: the load average
before and after is printed, and the server's and the clients' CPU shares beside each
step.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402
from trio_websocket import (  # noqa: E402
    ConnectionClosed,
    ConnectionRejected,
    HandshakeError,
    open_websocket_url,
)

from arbiter.arena.config import hash_token  # noqa: E402
from arbiter.arena.relay import open_file_limit  # noqa: E402
from arbiter.bots.skeleton import COMMAND_NAMES  # noqa: E402
from arbiter.engines.remote import (  # noqa: E402
    MAX_FRAME,
    PROTOCOL,
    RETAIN,
    control,
    parse_control,
)
from arbiter.rules import Game, Variant  # noqa: E402


def token_of(i: int) -> str:
    return f"bench-token-{i:05d}-0123456789abcdef"


def name_of(i: int) -> str:
    return f"sim{i:04d}"


def arena_file(
    work: Path, engines: int, tc: str, size: int, islands: int, code: Path, frontends: int = 0
) -> Path:
    """The arena file: its per-address limits raised (every engine is on 127.0.0.1), the
    request limit only where the server's code (`--code`) has one, so that an older
    checkout's server can be run beside this one, and its `frontends`."""
    declared = (code / "arbiter" / "arena" / "config.py").read_text()
    requests = "requests_per_minute = 1000000\n" if "requests_per_minute" in declared else ""
    if frontends and '"frontends"' not in declared:
        raise SystemExit(f"the server's code ({code}) has no front ends: leave out --frontends")
    if frontends:
        requests += f"frontends = {frontends}\n"
    players = "".join(
        f'\n[[player]]\nname = "{name_of(i)}"\ntoken_hash = "{hash_token(token_of(i))}"\n'
        for i in range(engines)
    )
    path = work / "arena.toml"
    path.write_text(
        f'[arena]\nname = "bench"\nlisten = "127.0.0.1:0"\ntc = "{tc}"\nsize = {size}\n'
        f'islands = {islands}\noutput = "bench.sqlite"\nconnections_per_address = 100000\n'
        f"max_connections = {max(4096, 4 * engines)}\nlogins_per_minute = 1000000\n"
        f"{requests}{players}"
    )
    return path


# ------------------------------------------------------------------ the server


class ServerProcess:
    """`arbiter arena serve FILE` as a child process; its output read in a thread."""

    def __init__(self, file: Path, code: Path) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "arbiter", "arena", "serve", str(file), "--log", "server.log"],
            cwd=file.parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": str(code)},
        )
        self.lines: list[str] = []
        self._port: int | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        if not self._ready.wait(60) or self._port is None:
            self.popen.kill()
            raise SystemExit("the arena server did not start:\n" + "\n".join(self.lines))
        self.port = self._port
        self.log = file.parent / "server.log"

    def logged(self, start: int) -> tuple[int, str]:
        """The server's log file (every level) from byte `start`: (its end, the text)."""
        try:
            with open(self.log, "rb") as handle:
                handle.seek(start)
                data = handle.read()
        except OSError:
            return start, ""
        return start + len(data), data.decode("utf-8", "replace")

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
            if found:
                self._port = int(found.group(1))
                self._ready.set()
        self._ready.set()

    def status(self, key: str) -> int:
        """A /proc/PID/status figure in KiB (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def frontends_cpu(self) -> dict[int, float]:
        """CPU seconds of each of the server's front-end processes (`frontends`), by pid."""
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) != self.popen.pid:
                    continue
                if b"arbiter.arena.frontend" not in (entry / "cmdline").read_bytes():
                    continue
            except (OSError, IndexError, ValueError):
                continue
            found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return found

    def get(self, path: str, timeout: float = 30.0) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read())

    def stop(self) -> int:
        self.popen.send_signal(signal.SIGTERM)
        try:
            code = self.popen.wait(60)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait()
        self._thread.join(10)
        return code


FOLLOW = r"""
import re, socket, sys, time
# Raw bytes, not a line reader: the stream is busy (every move of every game), and a
# slow reader is dropped. Each server-sent event is whole inside one HTTP chunk, so
# the chunk-size lines never split one.
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
sock.sendall(b"GET /events HTTP/1.1\r\nHost: bench\r\n\r\n")
print("open", flush=True)
game = re.compile(rb'event: game\ndata: \{"number":\d+,"game":"([^"]+)"')
tail = b""
while data := sock.recv(1 << 20):
    now = time.monotonic()
    data = tail + data
    end = data.rfind(b"\n\n")
    if end < 0:
        tail = data
        continue
    ids = game.findall(data, 0, end)
    tail = data[end:]
    if ids:
        print("\n".join(f"{now} {g.decode()}" for g in ids), flush=True)
"""


class Events:
    """GET /events followed by a child process (a reader in this process, sharing its
    interpreter with the simulated engines, would fall behind and be dropped by the
    server): when each game was seen to end, in CLOCK_MONOTONIC, which both share.
    When the server drops the stream, a new reader follows it again (counted)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.ended: dict[str, float] = {}
        self.duplicates = 0  # a game event seen twice
        self.reconnects = 0  # the stream ended while the server ran (a reader dropped)
        self.stopping = False
        self._open = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._open.wait(30):
            raise SystemExit("GET /events did not answer")

    def _run(self) -> None:
        while not self.stopping:
            child = subprocess.Popen(
                [sys.executable, "-c", FOLLOW, str(self.port)],
                text=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert child.stdout is not None
            for line in child.stdout:
                if line.startswith("open"):
                    self._open.set()
                    continue
                when, game = line.split()
                if game in self.ended:
                    self.duplicates += 1
                self.ended[game] = float(when)
            child.wait()
            if not self.stopping:
                self.reconnects += 1
                time.sleep(0.2)

    def join(self) -> None:
        self._thread.join(10)

    def between(self, start: float, end: float) -> list[str]:
        return [g for g, t in list(self.ended.items()) if start <= t < end]


# ------------------------------------------------------------------ simulated engines


@dataclass
class Tally:
    """What the simulated engines saw, for the whole run."""

    welcomed: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    closed: Counter[int] = field(default_factory=Counter)
    moves: int = 0
    bad_commands: Counter[str] = field(default_factory=Counter)


class SimEngine:
    """One remote engine: the relay protocol and an instant, legal GTP engine in one."""

    def __init__(self, index: int, url: str, tally: Tally, seed: int) -> None:
        self.index = index
        self.url = url
        self.tally = tally
        self.rng = random.Random(seed * 100_003 + index)
        self.islands, self.size, self.pie = 8, 11, True
        self.game: Game | None = None
        self.pending = b""
        self.welcomed = trio.Event()
        self.stopped = False
        self.done = trio.Event()  # its connection, once playing, was closed by the server
        self.ready = trio.Event()  # it answered the handshake's last command
        self.ready_at = 0.0
        self.received = 0  # bytes of commands the server sent it (its session's, resent none)

    # ---- the engine

    def _fresh(self) -> Game:
        self.game = Game(Variant(self.islands, self.size, self.pie))
        return self.game

    def answer(self, line: str) -> str:
        words = line.split()
        cmd_id = words.pop(0) if words and words[0].isdigit() else ""
        if not words:
            return ""
        name, args = words[0], words[1:]
        try:
            ok, text = True, self._execute(name, args)
        except (ValueError, IndexError) as exc:
            self.tally.bad_commands[name] += 1
            ok, text = False, str(exc) or "syntax error"
        head = ("=" if ok else "?") + cmd_id
        return (f"{head} {text}" if text else head) + "\n\n"

    def _execute(self, name: str, args: list[str]) -> str:
        if name == "protocol_version":
            return "2"
        if name == "name":
            return "sim"
        if name == "version":
            return "1.0"
        if name == "list_commands":
            if not self.ready.is_set():
                self.ready_at = time.monotonic()
                self.ready.set()
            return "\n".join(COMMAND_NAMES)
        if name == "known_command":
            return "true" if args[0] in COMMAND_NAMES else "false"
        if name == "boardsize":
            self.size, self.game = int(args[0]), None
            return ""
        if name == "atoll-islands":
            self.islands, self.game = int(args[0]), None
            return ""
        if name == "atoll-pie":
            self.pie, self.game = args[0].lower() == "on", None
            return ""
        if name == "clear_board":
            self._fresh()
            return ""
        if name == "play":
            game = self.game or self._fresh()
            game.play(args[1])  # IllegalMove is a ValueError: answered with "?"
            return ""
        if name == "genmove":
            game = self.game or self._fresh()
            cell = self.rng.choice(game.legal_cells())
            game.play(cell)
            self.tally.moves += 1
            return game.move_name(cell)
        if name in (
            "time_settings",
            "time_left",
            "atoll-time_settings",
            "atoll-time_left",
            "quit",
            "showboard",
        ):
            return ""
        raise ValueError("unknown command")

    # ---- the relay

    async def run(self, stop: trio.Event) -> None:
        """Log in (again, after a refusal or a dropped login) until welcomed, then play
        until the server closes the connection or `stop` is set."""
        backoff = 0.5
        while not stop.is_set():
            try:
                await self._connection(stop)
            except OSError as exc:  # EMFILE: out of open files, ECONNREFUSED, ...
                self.tally.errors[errno.errorcode.get(exc.errno or 0, type(exc).__name__)] += 1
            except (HandshakeError, ConnectionRejected, trio.TooSlowError) as exc:
                self.tally.errors[type(exc).__name__] += 1
            if self.stopped or stop.is_set():
                return
            with trio.move_on_after(backoff * self.rng.uniform(0.8, 1.2)):
                await stop.wait()
            backoff = min(10.0, backoff * 2)

    async def _connection(self, stop: trio.Event) -> None:
        self.pending, self.game = b"", None
        async with open_websocket_url(
            self.url,
            subprotocols=[PROTOCOL],
            max_message_size=MAX_FRAME,
            connect_timeout=60,
            disconnect_timeout=5,
        ) as ws:
            await ws.send_message(
                control(
                    "login",
                    protocol=PROTOCOL,
                    name=name_of(self.index),
                    token=token_of(self.index),
                    session=None,
                    received=0,
                    dialect={},
                    options=[],
                )
            )
            try:
                await self._relay(ws)
            except ConnectionClosed as exc:
                code = exc.reason.code if exc.reason is not None else 1006
                self.tally.closed[int(code)] += 1
                if self.welcomed.is_set():
                    self.stopped = True  # a connection that was playing ends the engine
                    self.done.set()

    async def _relay(self, ws: Any) -> None:
        while True:
            message = await ws.get_message()
            if isinstance(message, str):
                data = parse_control(message)
                if data["type"] == "welcome":
                    self.tally.welcomed += 1
                    self.welcomed.set()
                elif data["type"] == "refused":
                    self.tally.refused[str(data.get("reason", ""))[:60]] += 1
                continue
            start = time.perf_counter()
            self.received += len(message)
            self.pending += message
            *lines, self.pending = self.pending.split(b"\n")
            out = "".join(self.answer(line.decode()) for line in lines if line.strip())
            if out:
                took = (time.perf_counter() - start) * 1000
                await ws.send_message(control("t", ms=round(took, 3)))
                await ws.send_message(out.encode())


# ------------------------------------------------------------------ client processes


async def client_run(url: str, seed: int, files: int) -> None:
    """A client process (`--client URL`): runs the engines it is told to add, and
    answers the bench's questions, one JSON line per line of its stdin."""
    tally = Tally()
    engines: dict[int, SimEngine] = {}
    last: list[SimEngine] = []  # those the last "add" started
    stop = trio.Event()
    lags: list[float] = []

    def say(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def report(final: bool = False) -> dict[str, Any]:
        ready = [e for e in last if e.ready.is_set()]
        out = {
            "ready": len(ready),
            "ready_at": max((e.ready_at for e in ready), default=0.0),
            "welcomed": sum(e.welcomed.is_set() for e in engines.values()),
            "moves": tally.moves,
            "refused": dict(tally.refused),
            "errors": dict(tally.errors),
            "closed": {str(k): v for k, v in tally.closed.items()},
            "bad": dict(tally.bad_commands),
            "retained": sum(min(RETAIN, e.received) for e in engines.values()),
            "lags": list(lags),
            "final": final,
        }
        lags.clear()
        return out

    async def watch_lag() -> None:
        """How late this process's event loop wakes a task (every 50 ms): the part of
        the network figure that is the simulator's own queueing."""
        while True:
            due = time.monotonic() + 0.05
            await trio.sleep(0.05)
            lags.append((time.monotonic() - due) * 1000)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_lag)
        say({"files": files})
        while True:
            line = await trio.to_thread.run_sync(sys.stdin.readline)
            if not line:
                break
            message = json.loads(line)
            if "add" in message:
                last = [SimEngine(i, url, tally, seed) for i in message["add"]]
                for engine in last:
                    engines[engine.index] = engine
                    nursery.start_soon(engine.run, stop)
                say({"added": len(last)})
            elif "tally" in message:
                say(report())
            elif "stop" in message:
                # The server was stopped with the engines connected: each that was playing
                # sees its connection closed (counted), then the rest are cancelled.
                with trio.move_on_after(message["stop"]):
                    for engine in engines.values():
                        if engine.welcomed.is_set():
                            await engine.done.wait()
                stop.set()
                say(report(final=True))
                break
        nursery.cancel_scope.cancel()


def raise_file_limit(need: int) -> int:
    """This process's open-file limit, first raised toward `need` as far as the hard
    limit allows (each engine's connection is a file), as the server raises its own."""
    return open_file_limit(need)


class Client:
    """One client process of simulated engines, asked over its stdin and stdout. A
    process that exits or stops answering is noted in `problem`, never raised: the step
    that needed it says so."""

    def __init__(self, index: int, url: str, seed: int, engines: int, timeout: float) -> None:
        self.index = index
        self.timeout = timeout
        self.popen = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--client",
                url,
                "--seed",
                str(seed),
                "--files",
                str(engines + 256),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.problem: str | None = None
        self.last: dict[str, Any] = {}
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=20)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        hello = self._answer()
        self.files = int(hello["files"]) if hello else 0
        if self.files and self.files < engines + 64:
            print(
                f"client {index}: its open-file limit is {self.files} (the hard limit):"
                f" about {self.files - 64} of its {engines} engines can connect; raise"
                " `ulimit -Hn` or use more --clients",
                flush=True,
            )

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def _read_stderr(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self._stderr.append(line.rstrip())

    def _answer(self, timeout: float | None = None) -> dict[str, Any] | None:
        try:
            line = self._answers.get(timeout=timeout or self.timeout)
        except queue.Empty:
            self.problem = f"client process {self.index} did not answer in {self.timeout:.0f} s"
            return None
        if line is None:
            self.popen.wait()
            tail = " | ".join(list(self._stderr)[-3:])[-300:]
            self.problem = (
                f"client process {self.index} exited with status {self.popen.returncode}"
                f" ({tail or 'no output'})"
            )
            return None
        data: dict[str, Any] = json.loads(line)
        return data

    def ask(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
        if self.problem is not None:
            return None
        assert self.popen.stdin is not None
        try:
            self.popen.stdin.write(json.dumps(message) + "\n")
            self.popen.stdin.flush()
        except OSError:
            return self._answer(1)  # it exited: its end of the pipe says why
        answer = self._answer(timeout)
        if answer is not None and "moves" in answer:
            self.last = answer
        return answer

    def cpu_seconds(self) -> float:
        try:
            stat = Path(f"/proc/{self.popen.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()


class Clients:
    """The client processes together: engines spread evenly, figures summed."""

    def __init__(self, count: int, url: str, seed: int, most: int, timeout: float) -> None:
        per = -(-most // count)
        self.all = [Client(k, url, seed, per, timeout) for k in range(count)]

    def add(self, start: int, end: int) -> None:
        for client in self.all:
            client.ask({"add": list(range(start + client.index, end, len(self.all)))})

    def tally(self) -> list[dict[str, Any]]:
        return [a for c in self.all if (a := c.ask({"tally": True})) is not None]

    def problems(self) -> list[str]:
        return [c.problem for c in self.all if c.problem is not None]

    def moves(self) -> int:
        return sum(int(c.last.get("moves", 0)) for c in self.all)

    def cpu_seconds(self) -> float:
        return sum(c.cpu_seconds() for c in self.all)

    def stop(self, wait: float) -> Tally:
        """Each client's final figures (after the server's SIGTERM), summed."""
        tally = Tally()
        for client in self.all:
            final = client.ask({"stop": wait}, timeout=wait + 30) or client.last
            tally.welcomed += int(final.get("welcomed", 0))
            tally.moves += int(final.get("moves", 0))
            tally.refused.update(final.get("refused", {}))
            tally.errors.update(final.get("errors", {}))
            tally.closed.update({int(k): v for k, v in final.get("closed", {}).items()})
            tally.bad_commands.update(final.get("bad", {}))
            client.close()
        return tally


# ------------------------------------------------------------------ the run


@dataclass
class Step:
    engines: int
    live: int = 0
    login_s: float = 0.0
    welcomed: int = 0
    rss_mb: float = 0.0
    cpu: float = 0.0
    front_cpu: float = 0.0  # the server's front ends together (`--frontends`)
    client_cpu: float = 0.0
    period: float = 0.0
    games: list[str] = field(default_factory=list)
    api_games: int | None = None
    moves: int = 0  # genmove commands the engines answered in the period
    lag: list[float] = field(default_factory=list)  # the clients' event-loop lag, ms
    retained_mb: float = 0.0  # what the server keeps of its sessions' sent bytes
    stalls: list[float] = field(default_factory=list)  # the server's logged stalls, s
    problem: str | None = None  # why the step, or part of it, could not be measured
    playing: int = 0  # games in play at the end of the period (/api/live)
    held: int = 0  # heartbeats the server was behind in the period (its pacing cut the cap)


STALL = re.compile(r"the harness did not run for ([0-9.]+) s")


def drive(
    server: ServerProcess, events: Events, args: argparse.Namespace, ramp: list[int]
) -> tuple[list[Step], Tally, int | None]:
    """The ramp (module docstring): the steps, what the engines saw, and the server's
    count of games stored just before it was stopped (None if it did not answer). A
    step that cannot be measured (the server does not answer its API within
    `--api-timeout`, exited, or a client process failed) is reported as such, and the
    ramp goes on while the server runs."""
    url = f"ws://127.0.0.1:{server.port}/engine"
    clients = Clients(args.clients, url, args.seed, ramp[-1], args.api_timeout)
    steps: list[Step] = []
    connected = 0

    failure = [""]

    def api(path: str) -> Any:
        """GET path, or None when the server does not answer within the timeout."""
        try:
            return server.get(path, args.api_timeout)
        except urllib.error.HTTPError as exc:
            failure[0] = f"answered GET {path} with HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            failure[0] = f"did not answer GET {path} within {args.api_timeout:.0f} s ({exc})"
        return None

    def unanswered(what: str) -> str:
        if server.popen.poll() is not None:
            return f"the server exited (status {server.popen.returncode}) {what}"
        return f"the server {failure[0][:200]} {what}"

    for target in ramp:
        step = Step(target)
        steps.append(step)
        if server.popen.poll() is not None:
            step.problem = f"not run: the server exited (status {server.popen.returncode})"
            continue
        start = time.monotonic()
        clients.add(connected, target)
        new = target - connected
        connected = target
        # Welcomed is not yet playing: the server welcomes a login, then runs the engine's
        # handshake through the relay, and then lists it in the hall.
        deadline = start + args.login_timeout
        ready, ready_at = 0, start
        while time.monotonic() < deadline and not clients.problems():
            answers = clients.tally()
            ready = sum(a["ready"] for a in answers)
            ready_at = max([ready_at, *(a["ready_at"] for a in answers)])
            if ready >= new:
                break
            time.sleep(0.5)
        live = api("/api/live")
        while live is not None and time.monotonic() < deadline:
            step.live = sum(1 for e in live["connected"] if e["remote"])
            if step.live >= target:
                break
            time.sleep(0.5)
            live = api("/api/live")
        step.login_s = (ready_at if ready >= new else time.monotonic()) - start
        step.welcomed = sum(int(c.last.get("welcomed", 0)) for c in clients.all)
        problems = clients.problems()
        if problems:
            step.problem = "; ".join(problems)
        elif live is None:
            step.problem = unanswered("after the logins")
        elif ready < new:
            step.problem = (
                f"{ready} of the {new} new engines answered the handshake within"
                f" {args.login_timeout:.0f} s (--login-timeout)"
            )
        print(
            f"{target} engines: {step.welcomed} welcomed, {step.live} listed as connected"
            f" in /api/live; logins took {step.login_s:.1f} s"
            + (f"; {step.problem}" if step.problem else ""),
            flush=True,
        )
        if live is None or problems:
            continue  # nothing to measure the period against
        api0 = live["games"]
        log0, _ = server.logged(0)
        clients.tally()
        fronts0 = server.frontends_cpu()
        cpu0, ccpu0, moves0, t0 = (
            server.cpu_seconds(),
            clients.cpu_seconds(),
            clients.moves(),
            time.monotonic(),
        )
        time.sleep(args.period)
        t1 = time.monotonic()
        step.cpu = (server.cpu_seconds() - cpu0) / (t1 - t0)
        fronts = server.frontends_cpu()
        step.front_cpu = sum(c - fronts0.get(pid, 0.0) for pid, c in fronts.items()) / (t1 - t0)
        step.client_cpu = (clients.cpu_seconds() - ccpu0) / (t1 - t0)
        answers = clients.tally()
        step.moves = clients.moves() - moves0
        step.lag = [lag for a in answers for lag in a["lags"]]
        step.retained_mb = sum(a["retained"] for a in answers) / 2**20
        step.period = t1 - t0
        step.games = events.between(t0, t1)
        _, logged = server.logged(log0)
        step.stalls = [float(m.group(1)) for m in STALL.finditer(logged)]
        step.rss_mb = server.status("VmRSS") / 1024
        after = api("/api/live")
        if after is not None:
            step.api_games = after["games"] - api0
            step.playing = len(after["playing"])
            step.held = int(after.get("held", 0)) - int(live.get("held", 0))  # 0: no pacing
        elif step.problem is None:
            step.problem = unanswered("at the end of the period")
        games = "?" if step.api_games is None else f"{step.api_games / step.period:.1f}"
        print(
            f"{target} engines: {games} games/s,"
            f" {step.moves / step.period:.0f} moves/s over"
            f" {step.period:.0f} s ({len(step.games)} seen on /events), server CPU"
            f" {step.cpu:.0%}"
            + (f" (front ends {step.front_cpu:.0%})" if fronts else "")
            + f", RSS {step.rss_mb:.0f} MB (of which sessions' resend buffers"
            f" {step.retained_mb:.1f} MB), {len(step.stalls)} harness stalls logged"
            + (f"; {step.problem}" if step.problem else ""),
            flush=True,
        )
    # Stop the server with the engines still connected and playing.
    live = api("/api/live")
    counted = None if live is None else int(live["games"])
    events.stopping = True
    code = server.stop()
    print(f"server stopped with SIGTERM: exit status {code}", flush=True)
    tally = clients.stop(15)
    return steps, tally, counted


def per_move_network(
    records: dict[str, dict[str, Any]], games: list[str]
) -> tuple[list[float], float, int]:
    """Per engine move: server-measured wait less the engine's reported time (ms); the
    stalled ms of those games; the moves that had no reported time."""
    out, stalled, missing = [], 0.0, 0
    for game in games:
        record = records.get(game)
        if record is None or "allowance_ms" not in record:
            continue
        stalled += record.get("stalled_ms", 0.0)
        opening = record.get("opening", 0)
        plies = zip(record["move_ms"], record["allowance_ms"], record["reported_ms"], strict=True)
        for i, (charged, free, told) in enumerate(plies):
            if i < opening:
                continue
            if told < 0:
                missing += 1
                continue
            out.append(charged + free - told)
    return out, stalled, missing


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--ramp",
        default="100,200,500,1000",
        help="engine counts, one step each (default 100,200,500,1000)",
    )
    parser.add_argument(
        "--period",
        type=float,
        default=20.0,
        help="seconds of play measured at each step (default 20)",
    )
    parser.add_argument(
        "--login-timeout",
        type=float,
        default=120.0,
        help="seconds a step's logins may take before it goes on (default 120)",
    )
    parser.add_argument(
        "--api-timeout",
        type=float,
        default=30.0,
        help="seconds the server and the client processes have to answer (default 30)",
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=0,
        help="client processes the engines are spread over (default: one per 2,500)",
    )
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="the checkout whose arbiter the server runs (default: this one), to compare two",
    )
    parser.add_argument(
        "--frontends",
        type=int,
        default=0,
        help="the arena's `frontends`: processes holding the engines' connections (default 0)",
    )
    parser.add_argument("--tc", default="30+0.5", help="the arena's time control")
    parser.add_argument("--size", type=int, default=7)
    parser.add_argument("--islands", type=int, default=8, choices=(4, 8))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--keep", type=Path, help="keep the arena file, store, export and server log here"
    )
    parser.add_argument(
        "--quick", action="store_true", help="4 engines, 3 s: that it runs, not the figures"
    )
    parser.add_argument("--client", help=argparse.SUPPRESS)  # a client process: its URL
    parser.add_argument("--files", type=int, default=1024, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        trio.run(client_run, args.client, args.seed, raise_file_limit(args.files))
        return
    if args.quick:
        args.ramp, args.period = "4", 3.0
    ramp = sorted({int(n) for n in args.ramp.split(",") if n.strip()})
    args.clients = args.clients or -(-ramp[-1] // 2500)
    # The server holds one socket per engine: it raises its own limit as far as the hard
    # limit allows, and says so when that is too low (a step then reports its logins).
    files = raise_file_limit(ramp[-1] + 256)
    if files < ramp[-1] + 64:
        print(
            f"the open-file limit is {files} (hard): the server can hold about"
            f" {files - 64} engines; raise `ulimit -Hn` for more",
            flush=True,
        )
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        file = arena_file(
            work, ramp[-1], args.tc, args.size, args.islands, args.code, args.frontends
        )
        (work / "bench.sqlite").unlink(missing_ok=True)
        load0 = os.getloadavg()[0]
        server = ServerProcess(file, args.code)
        events = Events(server.port)
        try:
            steps, tally, counted = drive(server, events, args, ramp)
        finally:
            if server.popen.poll() is None:
                server.popen.kill()
        events.join()
        out = work / "games.jsonl"
        exported = subprocess.run(
            [
                sys.executable,
                "-m",
                "arbiter",
                "arena",
                "export",
                str(file),
                "--records",
                str(out),
                "--force",
            ],
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(args.code)},
        )
        stored: Counter[str] = Counter()
        records: dict[str, dict[str, Any]] = {}
        terminations: Counter[str] = Counter()
        voids = 0
        if exported.returncode == 0:
            for line in out.read_text().splitlines():
                record = json.loads(line)
                stored[record["game_id"]] += 1
                records[record["game_id"]] = record
                terminations[record["termination"]] += 1
                voids += bool(record.get("void"))
        server_log = server.lines + server.logged(0)[1].splitlines()

    print()
    print(
        f"load average (1 min) before the run {load0:.2f}, after {os.getloadavg()[0]:.2f}"
        f" on {os.cpu_count()} cores"
    )
    print(
        f"arena: tc {args.tc}, {'Hex' if args.islands == 4 else 'Atoll'} size {args.size};"
        f" {sum(tally.refused.values())} refusals, {sum(tally.errors.values())} connection"
        f" errors; engines simulated in {args.clients} client process(es)"
    )
    print()
    print(
        "| engines | logged in (/api/live) | login time | server RSS | server CPU"
        " | front ends CPU | games/s"
        " | moves/s | net ms/move p50 | p99 | max | moves measured | harness stalls"
        " | stalled ms in games | simulator CPU | simulator lag ms p50 | p99"
        " | games in play | beats behind |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    unmeasured = []
    for step in steps:
        if not step.period:
            print(f"| {step.engines} | {step.live} | not measured |" + " |" * 16)
            unmeasured.append(step)
            continue
        net, stalled, _ = per_move_network(records, step.games)
        games = "?" if step.api_games is None else f"{step.api_games / step.period:.1f}"
        print(
            f"| {step.engines} | {step.live} | {step.login_s:.2f} s | {step.rss_mb:.0f} MB |"
            f" {step.cpu:.0%} | {step.front_cpu:.0%} | {games} |"
            f" {step.moves / step.period:.0f} | {pct(net, 0.5):.2f} |"
            f" {pct(net, 0.99):.2f} | {max(net, default=float('nan')):.1f} | {len(net)} |"
            f" {len(step.stalls)} ({sum(step.stalls):.1f} s) | {stalled:.0f} |"
            f" {step.client_cpu:.0%} | {pct(step.lag, 0.5):.1f} | {pct(step.lag, 0.99):.1f} |"
            f" {step.playing} | {step.held} |"
        )
        if step.problem:
            unmeasured.append(step)
    for step in unmeasured:
        print(f"step {step.engines}: {step.problem}")
    seen = set(events.ended)
    lost = sorted(seen - set(stored))
    doubled = sorted(g for g, n in stored.items() if n > 1)
    print()
    if exported.returncode != 0:
        print(f"the store could not be exported: {exported.stderr.strip()[-300:]}")
    print(
        f"games: {len(seen)} seen to end on /events,"
        f" {'?' if counted is None else counted} counted by the server"
        f" before SIGTERM, {sum(stored.values())} stored; lost"
        f" {len(lost)}, stored twice {len(doubled)}, void {voids}, events seen twice"
        f" {events.duplicates}, event stream reconnects {events.reconnects}"
    )
    print(f"terminations: {dict(sorted(terminations.items()))}")
    if tally.refused or tally.errors or tally.bad_commands:
        print(
            f"refused: {dict(tally.refused)}; errors: {dict(tally.errors)};"
            f" commands answered '?': {dict(tally.bad_commands)}"
        )
    print(f"connections closed by code: {dict(sorted(tally.closed.items()))}")
    trouble = [
        line
        for line in server_log
        if "Traceback" in line or "ERROR" in line or "did not run for" in line
    ]
    print(f"server log: {len(server_log)} lines, {len(trouble)} of errors or stalls")
    for line in trouble[:10]:
        print(f"  {line[:160]}")
    short = counted is not None and exported.returncode == 0 and sum(stored.values()) < counted
    # Past what the server can serve (a step not measured), void games are its verdicts
    # on the games it could not referee, reported above; below it, none may be void.
    if lost or doubled or (voids and not unmeasured) or short:
        raise SystemExit(f"games lost {lost[:5]} or doubled {doubled[:5]} or void ({voids})")


if __name__ == "__main__":
    main()
