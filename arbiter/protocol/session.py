"""Request/response with one engine over any pair of trio streams.

The session numbers commands, writes them (several back to back when asked), reads
responses in order and checks that each echoes its command's id. Deadlines are the
caller's: every public coroutine takes a `timeout` and raises EngineTimeout when it
passes, so no await on engine I/O can wait forever.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import trio

from arbiter.errors import EngineFailure, EngineTerminatedError, EngineTimeout, ProtocolError
from arbiter.protocol.codec import FramingError, Response, ResponseReader, format_command

TRANSCRIPT_LINES = 40


class Transcript:
    """The last few lines exchanged with an engine, kept as evidence for fault reports."""

    def __init__(self, maxlen: int = TRANSCRIPT_LINES) -> None:
        self.lines: deque[str] = deque(maxlen=maxlen)

    def sent(self, text: str) -> None:
        self.lines.append("> " + text)

    def received(self, text: str) -> None:
        for line in text.splitlines() or [""]:
            self.lines.append("< " + line)

    def tail(self) -> list[str]:
        return list(self.lines)


class EngineSession:
    """The referee's side of the protocol for one engine process."""

    def __init__(
        self,
        send: trio.abc.SendStream,
        receive: trio.abc.ReceiveStream,
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
        self._sent: deque[tuple[int, str]] = deque()
        self.transcript = Transcript()
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
        """Write several commands in one write, so the engine sees them back to back."""
        self._check_usable()
        ids = []
        data = bytearray()
        for name, *args in commands:
            cmd_id = self._next_id
            self._next_id += 1
            line = format_command(cmd_id, name, *args)
            data += line
            text = line.decode().rstrip("\n")
            self._sent.append((cmd_id, text))
            self.transcript.sent(text)
            ids.append(cmd_id)
        try:
            await self._send.send_all(bytes(data))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.broken = exc
            raise self._terminated("stopped reading its stdin (broken pipe)") from exc
        return ids

    async def receive(self) -> Response:
        """The next response, checked against the oldest unanswered command."""
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
                try:
                    for response in self._reader.feed(bytes(data)):
                        self.transcript.received(str(response))
                        self._ready.append(response)
                except FramingError as exc:
                    raise ProtocolError(self.name, str(exc)) from exc
        except BaseException as exc:
            # After a cancelled or failed read the stream position is unknown: the
            # session cannot be trusted for another command.
            self.broken = exc
            raise
        response = self._ready.popleft()
        cmd_id, text = self._sent.popleft()
        if response.id != cmd_id:
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
        raise EngineTimeout(self.name, f"no answer to {what!r} within {timeout:g} s")
