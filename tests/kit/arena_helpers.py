"""A real arena server and real clients on 127.0.0.1, for the arena's tests."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arbiter.arena.config import hash_token

TOKENS = {name: f"token-of-{name}-0123456789" for name in ("alice", "bob", "carol", "dave")}


def arena_file(
    folder: Path,
    *,
    players: tuple[str, ...] = ("alice", "bob", "carol"),
    extra: str = "",
    engines: str = 'engines = ["random"]\nanchors = { random = 0 }',
    port: int = 0,
    tc: str = "10+0.1",
) -> Path:
    entries = "".join(
        f'\n[[player]]\nname = "{n}"\ntoken_hash = "{hash_token(TOKENS[n])}"\n' for n in players
    )
    path = folder / "arena.toml"
    path.write_text(
        f'[arena]\nname = "test-arena"\nlisten = "127.0.0.1:{port}"\ntc = "{tc}"\n'
        f"size = 7\n{engines}\n{extra}\n{entries}"
    )
    return path


class Lines:
    """A process's stderr, read line by line in a thread (it never blocks the test)."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self.lines.append("<EOF>")
            self._cond.notify_all()

    def wait_for(self, needle: str, timeout: float = 30.0, count: int = 1) -> str:
        """The count-th line holding needle (waiting for it to be printed)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [line for line in self.lines if needle in line]
                if len(found) >= count:
                    return found[count - 1]
                left = deadline - time.monotonic()
                if left <= 0 or (self.lines and self.lines[-1] == "<EOF>"):
                    raise AssertionError(f"no line with {needle!r} in:\n" + "\n".join(self.lines))
                self._cond.wait(left)

    def join(self) -> None:
        self._thread.join(10)

    def text(self) -> str:
        with self._cond:
            return "\n".join(self.lines)


class Proc:
    def __init__(
        self,
        args: list[str],
        cwd: Path,
        env: dict[str, str] | None = None,
        *,
        open_files: int | None = None,
    ) -> None:
        def limit() -> None:  # in the child: its open-file limit, soft and hard
            if open_files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

        self.popen = subprocess.Popen(
            [sys.executable, "-m", "arbiter", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
            preexec_fn=limit if open_files is not None else None,
        )
        self.out = Lines(self.popen.stdout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout: float = 30.0) -> int:
        """The exit status, once the process has ended and its output is read."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise
        finally:
            self.out.join()
            assert self.popen.stdout is not None
            self.popen.stdout.close()
        return code


class Server(Proc):
    def __init__(self, file: Path, *, open_files: int | None = None) -> None:
        super().__init__(["arena", "serve", str(file)], file.parent, open_files=open_files)
        line = self.out.wait_for("is listening on")
        self.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
            body = r.read()
            return (
                json.loads(body)
                if r.headers.get_content_type() == "application/json"
                else body.decode()
            )


def client(
    server_port: int,
    name: str,
    engine: str,
    cwd: Path,
    *,
    token: str | None = None,
    room: str | None = None,
) -> Proc:
    where = ["--room", room] if room is not None else []
    return Proc(
        ["arena", "connect", f"127.0.0.1:{server_port}", "--name", name, *where, engine],
        cwd,
        {"ARBITER_ARENA_TOKEN": token if token is not None else TOKENS[name]},
    )


@contextmanager
def events(port: int, timeout: float = 60.0) -> Iterator[Iterator[tuple[str, Any]]]:
    """The server's events as they come, (name, data); a silent stream fails the test."""
    response = urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=timeout)

    def read() -> Iterator[tuple[str, Any]]:
        name = ""
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                yield name, json.loads(line[6:])

    try:
        yield read()
    finally:
        response.close()


def wait_games(
    stream: Iterator[tuple[str, Any]], count: int, where: Any = None
) -> list[dict[str, Any]]:
    """The next `count` finished games (those `where` accepts)."""
    games = []
    for name, data in stream:
        if name == "game" and (where is None or where(data)):
            games.append(data)
            if len(games) == count:
                return games
    raise AssertionError("the event stream ended")


def readable_within(sock: Any, timeout: float) -> bool:
    return bool(select.select([sock], [], [], timeout)[0])


class Proxy:
    """A TCP proxy in front of the server, in threads: `delay` seconds added to every
    chunk each way (a slow network), and `cut()` drops every connection it carries (a
    network that fails), while it keeps accepting new ones. With `forwarded_for` it is a
    reverse proxy: it names that address in an `X-Forwarded-For` header of each request."""

    def __init__(
        self, target_port: int, delay: float = 0.0, forwarded_for: str | None = None
    ) -> None:
        import socket

        self.target = target_port
        self.delay = delay
        self.forwarded_for = forwarded_for
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._open: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket

        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                down.close()
                continue
            with self._lock:
                self._open += [down, up]
            for a, b, head in ((down, up, self.forwarded_for), (up, down, None)):
                threading.Thread(target=self._pipe, args=(a, b, head), daemon=True).start()

    def _pipe(self, source: Any, sink: Any, forwarded_for: str | None = None) -> None:
        try:
            while data := source.recv(65536):
                if forwarded_for is not None and b"\r\n" in data:  # the request's first line
                    line, rest = data.split(b"\r\n", 1)
                    data = line + f"\r\nx-forwarded-for: {forwarded_for}\r\n".encode() + rest
                    forwarded_for = None
                if self.delay:
                    time.sleep(self.delay)  # the network's latency, not a synchronisation
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(2)

    def cut(self) -> None:
        with self._lock:
            carried, self._open = self._open, []
        for s in carried:
            with contextlib.suppress(OSError):
                s.shutdown(2)
            s.close()

    def close(self) -> None:
        self.cut()
        self.listener.close()
