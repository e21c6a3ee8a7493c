"""The exception tree. Everything the harness raises on purpose derives from ArbiterError.

Engine errors carry the engine's display name and what evidence there is, because the
person reading the message is usually debugging that engine, not the harness.
"""

from __future__ import annotations


class ArbiterError(Exception):
    """Root of every error the harness raises deliberately."""


class ConfigError(ArbiterError, ValueError):
    """Bad user input: an option, a time control, an engine definition or a file.

    The message names what was wrong and where (file, key), and `hint` says how to fix
    it. The CLI prints it on one line and exits with status 2.
    """

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None) -> None:
        self.message = message
        self.where = where
        self.hint = hint
        text = f"{where}: {message}" if where else message
        if hint:
            text = f"{text} ({hint})"
        super().__init__(text)

    def located(self, where: str) -> ConfigError:
        """This error placed at `where`, unless it already names its place.

        Code that calls a parser knows where the value came from; the parser may already
        know better (a nested key). Re-raising `str(exc)` with a new `where` would name
        the place twice, so callers add a place through here instead.
        """
        return ConfigError(self.message, where=self.where or where, hint=self.hint)


class EngineError(ArbiterError):
    """Something went wrong with one engine process."""

    stderr_tail: str = ""  # the end of its stderr, when it was taken as evidence

    def __init__(self, engine: str, message: str) -> None:
        self.engine = engine
        self.detail = message
        super().__init__(f"engine {engine!r}: {message}")


class EngineStartError(EngineError):
    """The engine could not be started: usually a wrong path or a missing exec bit."""


class EngineTerminatedError(EngineError):
    """The engine exited, closed its stdout or stopped reading its stdin.

    `returncode` is the exit status (negative: killed by that signal) when known, and
    `stderr_tail` the last thing the engine wrote to stderr, usually its traceback.
    """

    def __init__(
        self,
        engine: str,
        message: str,
        *,
        returncode: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(engine, message)


class ProtocolError(EngineError):
    """The engine answered something that is not a well-formed response to the command.

    Usual causes: printing debug output to stdout instead of stderr, forgetting the empty
    line that ends a response, or not echoing the command id.
    """


class EngineFailure(EngineError):
    """The engine answered a command with a well-formed failure (`?`)."""

    def __init__(self, engine: str, command: str, message: str) -> None:
        self.command = command
        self.message = message
        super().__init__(engine, f"{command!r} failed: ? {message}")


class EngineTimeout(EngineError):
    """The engine did not answer a command before its deadline."""


class StoreError(ArbiterError):
    """The results store could not be read or written."""


class ArbiterInternalError(ArbiterError):
    """A bug in the harness itself. Games it touches are void, never scored."""
