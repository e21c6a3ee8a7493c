"""The wire format, sans I/O: GTP v2 framing for commands and responses.

Both directions live here so that the referee and the bundled bots share one reading
of the framing rules. Nothing in this module blocks or touches trio.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

MAX_LINE = 64 * 1024
MAX_RESPONSE = 1024 * 1024

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CLEAN = re.compile(rb"[ -~\n]*")  # printable ASCII and LF only
_HEADER = re.compile(r"([=?])([0-9]{0,18})(.*)", re.DOTALL)


class FramingError(ValueError):
    """The byte stream is not GTP framing; the message says what was seen."""


def preprocess(line: str) -> str:
    """Clean one command line the GTP way: control characters out, tabs to spaces,
    `#` comments cut. Returns the stripped text, empty if nothing is left."""
    line = _CONTROL.sub("", line.replace("\t", " "))
    hash_at = line.find("#")
    if hash_at >= 0:
        line = line[:hash_at]
    return line.strip()


@dataclass(frozen=True)
class Command:
    id: int | None
    name: str
    args: tuple[str, ...] = ()

    def encode(self) -> bytes:
        return format_command(self.id, self.name, *self.args)

    def __str__(self) -> str:
        return " ".join(([str(self.id)] if self.id is not None else []) + [self.name, *self.args])


_TOKEN = re.compile(r"[!-\"$-~]+")  # printable ASCII except space and '#'


def is_token(word: str) -> bool:
    """Whether `word` can travel as one token of a command: printable ASCII, no space
    and no `#` (which starts a comment), so that a definition's words are checked when
    its file is read rather than when the command is sent."""
    return _TOKEN.fullmatch(word) is not None


def format_command(cmd_id: int | None, name: str, *args: str) -> bytes:
    """One command line, newline-terminated. Arguments never contain spaces or newlines."""
    parts = (name, *args) if cmd_id is None else (str(cmd_id), name, *args)
    for p in parts:
        if not is_token(p):
            raise ValueError(f"invalid command token {p!r}")
    return (" ".join(parts) + "\n").encode("ascii")


_BATCH = re.compile(r"(?:[0-9]+(?: [!-\"$-~]+)+\n)+")


def format_batch(first_id: int, commands: Sequence[Sequence[str]]) -> bytes:
    """Several numbered command lines at once, validated with one match (the hot path)."""
    text = "".join([f"{i} {' '.join(command)}\n" for i, command in enumerate(commands, first_id)])
    if _BATCH.fullmatch(text) is None:
        for i, command in enumerate(commands):
            format_command(first_id + i, *command)  # raises, naming the bad token
    return text.encode("ascii")


def parse_command(line: str) -> Command | None:
    """Parse a received command line (engine side); None for lines that carry nothing."""
    text = preprocess(line)
    if not text:
        return None
    words = text.split()
    cmd_id: int | None = None
    if words[0].isascii() and words[0].isdigit():
        cmd_id = int(words[0])
        words = words[1:]
        if not words:
            return Command(cmd_id, "", ())
    return Command(cmd_id, words[0], tuple(words[1:]))


def format_response(cmd_id: int | None, ok: bool, text: str = "") -> str:
    """A full response, including the empty line that ends it (engine side)."""
    head = ("=" if ok else "?") + ("" if cmd_id is None else str(cmd_id))
    body = text.rstrip("\n")
    if body.startswith("\n"):  # a multi-line answer such as showboard starts below the sign
        return head + body + "\n\n"
    return (f"{head} {body}" if body else head) + "\n\n"


class Response(NamedTuple):
    """One engine response. A named tuple: it is made four times per ply."""

    id: int | None
    ok: bool
    text: str

    def __str__(self) -> str:
        return format_response(self.id, self.ok, self.text).rstrip("\n")


@dataclass
class ResponseReader:
    """Incremental parser for an engine's stdout.

    Feed it bytes as they arrive; it returns every response completed so far. It
    tolerates what real engines send (CR before LF, a trailing space after `=`, blank
    lines between responses) and rejects the rest with FramingError, including lines
    and responses over the size limits, so a runaway engine cannot exhaust memory.
    """

    max_line: int = MAX_LINE
    max_response: int = MAX_RESPONSE
    _buffer: bytearray = field(default_factory=bytearray)
    _lines: list[str] | None = None
    _size: int = 0
    _idle: int = 0

    def feed(self, data: bytes) -> list[Response]:
        if self._lines is None and not self._buffer and len(data) <= self.max_line:
            fast = self._feed_clean(data)
            if fast is not None:
                return fast
        self._buffer += data
        out: list[Response] = []
        while True:
            nl = self._buffer.find(b"\n")
            if nl < 0:
                if len(self._buffer) > self.max_line:
                    raise FramingError(f"a line of over {self.max_line} bytes without a newline")
                return out
            raw = bytes(self._buffer[:nl])
            del self._buffer[: nl + 1]
            if len(raw) > self.max_line:
                raise FramingError(f"a line of {len(raw)} bytes (the limit is {self.max_line})")
            response = self._line(raw.decode("utf-8", errors="replace"))
            if response is not None:
                out.append(response)

    def feed_answers(self, data: bytes, first_id: int, count: int) -> list[Response]:
        """`feed`, knowing that commands `first_id` .. `first_id + count - 1` await answers.

        The usual answer to a batch, plain `=ID` successes for all but the last command
        and a one-line success for the last, all in one read, is recognised by comparing
        bytes (this is the referee's hot path); anything else goes through `feed`.
        """
        if count > 1 and self._lines is None and not self._buffer and len(data) <= self.max_line:
            last = first_id + count - 1
            head = _acks_template(count) % tuple(range(first_id, last + 1))
            if data.startswith(head) and data.endswith(b"\n\n"):
                body = data[len(head) : -2]
                if not body or (
                    body[0] == 32 and b"\n" not in body and _CLEAN.fullmatch(body) is not None
                ):
                    self._idle = 2  # as `feed` counts the blank line that ends the data
                    answers = [Response(i, True, "") for i in range(first_id, last)]
                    answers.append(Response(last, True, body.decode("ascii").strip()))
                    return answers
        return self.feed(data)

    def _feed_clean(self, data: bytes) -> list[Response] | None:
        """Fast path for the usual case: whole responses of plain text in one chunk."""
        if not data.endswith(b"\n\n") or _CLEAN.fullmatch(data) is None:
            return None
        out = []
        idle = self._idle
        for raw_block in data.decode("ascii").split("\n\n"):
            block = raw_block.lstrip("\n")
            if not block:
                idle += len(raw_block) + 2
                if idle > self.max_line:
                    raise FramingError(f"over {self.max_line} bytes of blank lines")
                continue
            idle = 0
            if block[0] not in "=?":
                return None  # let the line-by-line path report it precisely
            if "\n" not in block:
                out.append(_parse_line(block.rstrip()))
                continue
            lines = [line.rstrip() for line in block.split("\n")]
            if not all(lines):
                return None  # a whitespace-only line ends a response: the slow path knows
            out.append(_parse_response(lines))
        self._idle = idle
        return out

    def unfinished(self) -> str | None:
        """What the engine has written of an answer it has not finished, in words, for
        the message of a deadline: an answer ended by one newline instead of an empty
        line (the classic GTP mistake) would otherwise read as no answer at all."""
        if self._lines is not None:
            shown = "\n".join(self._lines)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return f"answered {shown!r} but never ended the answer with an empty line"
        if self._buffer:
            head = bytes(self._buffer[:60]).decode("utf-8", errors="replace")
            return f"wrote {head!r} but never ended the line"
        return None

    @property
    def pending(self) -> bool:
        """True while a response has started but not ended, or a line is incomplete."""
        return self._lines is not None or bool(self._buffer)

    def _line(self, raw: str) -> Response | None:
        empty = not raw.rstrip("\r")  # judged before control characters are dropped
        if not raw.isprintable():
            raw = _CONTROL.sub("", raw.replace("\t", " "))
        line = raw.rstrip()
        if self._lines is None:
            if not line:
                # Stray blank lines between responses are tolerated, but not without end.
                self._idle += len(raw) + 1
                if self._idle > self.max_line:
                    raise FramingError(f"over {self.max_line} bytes of blank lines")
                return None
            self._idle = 0
            if line[0] not in "=?":
                shown = line if len(line) <= 60 else line[:57] + "..."
                raise FramingError(
                    f"expected a response starting with '=' or '?', got {shown!r}"
                    " (debug output belongs on stderr)"
                )
            self._lines = [line]
            self._size = len(line)
            return None
        if not empty:  # only an empty line ends a response; spaces are content
            self._size += len(line) + 1
            if self._size > self.max_response:
                raise FramingError(f"a response of over {self.max_response} bytes")
            self._lines.append(line)
            return None
        lines, self._lines = self._lines, None
        return _parse_response(lines)


@functools.cache
def _acks_template(count: int) -> bytes:
    """`=ID` successes for `count - 1` commands and the header of the last one's answer."""
    return b"=%d\n\n" * (count - 1) + b"=%d"


def _parse_line(line: str) -> Response:
    """A one-line response (nearly all of them), without the regex."""
    space = line.find(" ")
    head = line[1:] if space < 0 else line[1:space]
    if head and not (head.isascii() and head.isdigit() and len(head) <= 18):
        return _parse_response([line])  # reports the malformed header
    text = "" if space < 0 else line[space + 1 :].strip()
    return Response(int(head) if head else None, line[0] == "=", text)


def _parse_response(lines: list[str]) -> Response:
    match = _HEADER.fullmatch(lines[0])
    assert match is not None  # the first character was checked by the caller
    sign, digits, rest = match.groups()
    if rest and not rest.startswith(" "):
        raise FramingError(f"malformed response header {lines[0]!r}: expected a space after the id")
    text = "\n".join([rest[1:].strip(), *lines[1:]]).strip("\n")
    if not lines[1:]:
        text = text.strip()
    return Response(int(digits) if digits else None, sign == "=", text)
