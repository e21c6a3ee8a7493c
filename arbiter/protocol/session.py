"""Request/response with one engine over any pair of trio streams.

The session numbers commands, writes them (several back to back when asked), reads
responses in order and checks that each echoes its command's id. Deadlines are the
caller's: every public coroutine takes a `timeout` and raises EngineTimeout when it
passes, so no await on engine I/O can wait forever.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import trio

from arbiter.errors import EngineFailure, EngineTerminatedError, EngineTimeout, ProtocolError
from arbiter.protocol.codec import FramingError, Response, ResponseReader, format_batch
from arbiter.text import escape

TRANSCRIPT_LINES = 40
TRANSCRIPT_CHUNKS = 32
MAX_EVIDENCE_CHUNK = 4096


class ByteStream(Protocol):
    """The two stream methods the session uses; trio streams and PipeStream have them."""

    async def send_all(self, data: bytes | bytearray | memoryview) -> None: ...

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray: ...


class PipeStream:
    """A lean byte stream over an engine's stdin and stdout pipes.

    trio's own pipe streams yield to the scheduler on every call, several times per
    ply; here a call only waits when the pipe is not ready, and otherwise yields every
    few calls so other games still get their turn. Cancellation and deadlines work as
    usual because every wait is a trio wait. The fds stay owned by the trio Process,
    whose streams close them (and wake any waiter) at shutdown.
    """

    YIELD_EVERY = 16

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self._wfd = write_fd
        self._rfd = read_fd
        self._unyielded = 0
        self._exited = False
        os.set_blocking(write_fd, False)
        os.set_blocking(read_fd, False)

    def _yield_due(self) -> bool:
        """Counts a call; True every YIELD_EVERY calls. A plain method, so that the calls
        that need not yield (nearly all) create no coroutine on the hot path."""
        self._unyielded += 1
        return self._unyielded >= self.YIELD_EVERY

    async def _fair(self) -> None:
        """Let other tasks run (when `_yield_due` says so)."""
        self._unyielded = 0
        await trio.lowlevel.checkpoint()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._wfd, view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self._wfd)
                continue
            except OSError as exc:
                raise _stream_error(exc, "stdin") from exc
            view = view[written:]
        if self._yield_due():
            await self._fair()

    def writer_exited(self) -> None:
        """The engine process has exited: once what it wrote is read, stdout is at EOF,
        even if a process it left behind still holds the pipe open."""
        self._exited = True
        with contextlib.suppress(OSError):
            os.set_blocking(self._rfd, False)
        trio.lowlevel.notify_closing(self._rfd)  # wakes a reader waiting on the pipe

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        while True:
            try:
                data = os.read(self._rfd, max_bytes or 65536)
            except BlockingIOError:
                if self._exited:
                    return b""
                try:
                    await trio.lowlevel.wait_readable(self._rfd)
                except trio.ClosedResourceError:
                    if not self._exited:
                        raise
                continue
            except OSError as exc:
                raise _stream_error(exc, "stdout") from exc
            if self._yield_due():
                await self._fair()
            return data


def _stream_error(exc: OSError, pipe: str) -> Exception:
    """The trio stream error that matches an OS error on one of the engine's pipes."""
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError(f"{pipe} is closed")
    return trio.BrokenResourceError(f"{pipe}: {exc}")


class Transcript:
    """The last exchanges with an engine, kept as evidence for fault reports.

    Raw chunks are stored as they were written and read (cheap on the hot path) and
    turned into `> command` / `< response` lines only when someone asks.
    """

    def __init__(self, chunks: int = TRANSCRIPT_CHUNKS, lines: int = TRANSCRIPT_LINES) -> None:
        self._chunks: deque[tuple[bool, bytes]] = deque(maxlen=chunks)
        self._lines = lines

    def sent(self, data: bytes) -> None:
        self._chunks.append((True, data))

    def received(self, data: bytes) -> None:
        self._chunks.append((False, data[-MAX_EVIDENCE_CHUNK:]))

    def tail(self) -> list[str]:
        out: list[str] = []
        for outgoing, data in self._chunks:
            text = data.decode("utf-8", errors="replace").replace("\r", "")
            prefix = "> " if outgoing else "< "
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            out.extend(prefix + line if line else prefix.rstrip() for line in lines)
        return out[-self._lines :]


class GameLog:
    """Everything written to and read from both engines in one game, with the time of
    each write and read: the full transcript a bot author debugs with (as cutechess's
    debug log), on request only.

    Raw chunks are kept as they passed (cheap on the hot path), up to `cap` bytes: once
    the first three quarters of the cap are full, only the latest chunks are kept, in the
    last quarter, so that both the set-up and the end of a long game remain. `lines`
    turns them into lines when the game is over.
    """

    def __init__(self, cap: int) -> None:
        self.start = trio.current_time()
        self._head_room = cap - cap // 4
        self._tail_room = cap // 4
        self._head: list[tuple[float, int, bool, bytes]] = []
        self._tail: deque[tuple[float, int, bool, bytes]] = deque()
        self._tail_bytes = 0
        self.dropped = 0  # bytes left out between the head and the tail

    def add(self, seat: int, outgoing: bool, data: bytes) -> None:
        t = trio.current_time() - self.start
        if self._head_room:
            piece = data[: self._head_room]
            self._head.append((t, seat, outgoing, piece))
            self._head_room -= len(piece)
            data = data[len(piece) :]
        if len(data) > self._tail_room:
            self.dropped += len(data) - self._tail_room
            data = data[len(data) - self._tail_room :]
        if not data:
            return
        self._tail.append((t, seat, outgoing, data))
        self._tail_bytes += len(data)
        while self._tail_bytes > self._tail_room:
            _, _, _, old = self._tail.popleft()
            self._tail_bytes -= len(old)
            self.dropped += len(old)

    def lines(self, names: Sequence[str]) -> list[str]:
        """The exchanges line by line, as cutechess writes its debug log: milliseconds
        since the game's set-up, `>` for what was written to the engine and `<` for what
        it wrote, the engine's name and seat. Control characters are escaped; a line
        that a chunk did not finish is completed by the next chunk in its direction."""
        out: list[str] = []
        pending: dict[tuple[int, bool], bytes] = {}

        def emit(t: float, seat: int, outgoing: bool, data: bytes) -> None:
            parts = (pending.pop((seat, outgoing), b"") + data).split(b"\n")
            if parts[-1]:
                pending[(seat, outgoing)] = parts[-1]
            arrow = ">" if outgoing else "<"
            for part in parts[:-1]:
                text = escape(part.decode("utf-8", errors="replace").removesuffix("\r"))
                out.append(
                    f"{t * 1000:.0f} {arrow}{names[seat - 1]}({seat}):"
                    + (f" {text}" if text else "")
                )

        for chunk in self._head:
            emit(*chunk)
        if self.dropped:
            pending.clear()
            out.append(
                f"... {self.dropped} bytes left out here (the transcript of a game"
                " keeps its first and its last exchanges) ..."
            )
        for chunk in self._tail:
            emit(*chunk)
        unfinished, pending = pending, {}
        for (seat, outgoing), rest in unfinished.items():
            emit(self._last_time(), seat, outgoing, rest + b"\n")
        return out

    def _last_time(self) -> float:
        last = self._tail[-1] if self._tail else self._head[-1] if self._head else None
        return last[0] if last else 0.0


class EngineSession:
    """The referee's side of the protocol for one engine process."""

    def __init__(
        self,
        send: ByteStream | trio.abc.SendStream,
        receive: ByteStream | trio.abc.ReceiveStream,
        name: str,
        *,
        on_terminated: Callable[[str], EngineTerminatedError] | None = None,
    ) -> None:
        self._send = send
        self._receive = receive
        self.name = name
        self._reader = ResponseReader()
        self._ready: deque[Response] = deque()
        self._next_id = 1
        self._sent: deque[tuple[int, Sequence[str]]] = deque()
        self.transcript = Transcript()
        # The game's full transcript, while one is asked for, and this engine's seat in it.
        self.game_log: GameLog | None = None
        self.seat = 0
        self._on_terminated = on_terminated
        self.broken: BaseException | None = None

    def _terminated(self, message: str) -> EngineTerminatedError:
        if self._on_terminated is not None:
            return self._on_terminated(message)
        return EngineTerminatedError(self.name, message)

    async def send(self, name: str, *args: str) -> int:
        """Write one command without waiting for its answer; returns its id."""
        return (await self.send_many([(name, *args)]))[0]

    async def send_many(self, commands: Sequence[Sequence[str]]) -> list[int]:
        """Write several commands in one write, so the engine sees them back to back;
        returns their ids."""
        if self.broken is not None:
            self._check_usable()
        first = self._next_id
        data = format_batch(first, commands)
        self._next_id = first + len(commands)
        ids = list(range(first, self._next_id))
        self._sent.extend(zip(ids, commands, strict=True))
        self.transcript.sent(data)
        if self.game_log is not None:
            self.game_log.add(self.seat, True, data)
        try:
            await self._send.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.broken = exc
            raise self._terminated("stopped reading its stdin (broken pipe)") from exc
        return ids

    async def receive(self) -> Response:
        """The next response, checked against the oldest unanswered command."""
        if not self._sent:
            raise RuntimeError("receive() without a command in flight")
        if not self._ready:
            await self._read_response()
        return self.take()

    async def receive_ready(self) -> list[Response]:
        """Every response read so far that answers a command in flight, oldest first and
        each checked against its command; waits for one if none is read yet. An engine
        that answers a batch in one write has its whole batch taken by one call."""
        if self.broken is not None:
            self._check_usable()
        if not self._ready:
            await self._read_response()
        ready, sent = self._ready, self._sent
        answered = 0
        for response, (cmd_id, _) in zip(ready, sent, strict=False):
            if response.id != cmd_id:
                break
            answered += 1
        if not answered:
            return [self.take()]  # raises, naming the command that was not answered
        for _ in range(answered):
            sent.popleft()
        return [ready.popleft() for _ in range(answered)]

    async def _read_response(self) -> None:
        """Read until at least one more response is complete."""
        if self.broken is not None:
            self._check_usable()
        if not self._sent:
            raise RuntimeError("receive() without a command in flight")
        try:
            while not self._ready:
                try:
                    data = await self._receive.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    raise self._terminated("its stdout was closed") from exc
                if not data:
                    raise self._terminated("closed its stdout (exited or crashed)")
                data = bytes(data)
                self.transcript.received(data)
                if self.game_log is not None:
                    self.game_log.add(self.seat, False, data)
                try:
                    self._ready.extend(
                        self._reader.feed_answers(data, self._sent[0][0], len(self._sent))
                    )
                except FramingError as exc:
                    raise ProtocolError(self.name, str(exc)) from exc
        except BaseException as exc:
            # After a cancelled or failed read the stream position is unknown: the
            # session cannot be trusted for another command.
            self.broken = exc
            raise

    def take(self) -> Response:
        """The next response, already read (no await needed)."""
        if self.broken is not None:
            self._check_usable()
        response = self._ready.popleft()
        cmd_id, command = self._sent.popleft()
        if response.id != cmd_id:
            text = " ".join(command)
            self.broken = ProtocolError(self.name, "id mismatch")
            got = "no id" if response.id is None else f"id {response.id}"
            raise ProtocolError(
                self.name, f"answered {text!r} with {got}; responses must echo the command id"
            )
        return response

    def _check_usable(self) -> None:
        if self.broken is not None:
            raise EngineTerminatedError(
                self.name, "the session is unusable after an earlier fault; restart the engine"
            )

    async def command(self, name: str, *args: str, timeout: float) -> str:
        """Run one command and return its result; raise EngineFailure on a `?` answer."""
        return (await self.pipeline([(name, *args)], timeout=timeout))[0]

    async def pipeline(self, commands: Sequence[Sequence[str]], *, timeout: float) -> list[str]:
        """Send `commands` back to back and collect every result, all within `timeout`."""
        results = await self.pipeline_responses(commands, timeout=timeout)
        for (name, *args), response in zip(commands, results, strict=True):
            if not response.ok:
                raise EngineFailure(self.name, " ".join([name, *args]), response.text)
        return [r.text for r in results]

    async def pipeline_responses(
        self, commands: Sequence[Sequence[str]], *, timeout: float
    ) -> list[Response]:
        """Like `pipeline`, but return `?` answers as responses instead of raising."""
        with trio.move_on_after(timeout) as scope:
            await self.send_many(commands)
            return [await self.receive() for _ in commands]
        assert scope.cancelled_caught
        self.broken = EngineTimeout(self.name, "deadline")
        what = " ".join(commands[-1]) if len(commands) == 1 else f"{len(commands)} commands"
        raise EngineTimeout(
            self.name, f"no answer to {what!r} within {timeout:g} s" + self.unfinished()
        )

    def unfinished(self) -> str:
        """`: it answered '=1' but never ended ...` when an answer was begun and not
        finished, for a deadline's message; else nothing."""
        words = self._reader.unfinished()
        return f": it {words}" if words else ""
