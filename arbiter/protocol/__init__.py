"""The Atoll engine protocol (GTP v2 framing): codec, referee-side session, bot helper."""

from arbiter.protocol.codec import (
    Command,
    FramingError,
    Response,
    ResponseReader,
    format_command,
    format_response,
    parse_command,
    preprocess,
)
from arbiter.protocol.session import EngineSession, Transcript

__all__ = [
    "Command",
    "EngineSession",
    "FramingError",
    "Response",
    "ResponseReader",
    "Transcript",
    "format_command",
    "format_response",
    "parse_command",
    "preprocess",
]
