"""The Atoll engine protocol (GTP v2 framing): the codec here, the referee's side of a
session in `arbiter.protocol.session`.

The session (and trio with it) is not imported here: a bot that only needs the codec
starts without the cost of the harness's event loop library.
"""

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

__all__ = [
    "Command",
    "FramingError",
    "Response",
    "ResponseReader",
    "format_command",
    "format_response",
    "parse_command",
    "preprocess",
]
