"""What the command line writes, and how an error becomes one line and an exit status.

Exit status: 0 success, 1 a check or run that failed, 2 bad usage or configuration,
130 interrupted by Ctrl-C, 143 stopped by SIGTERM.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import click

from arbiter.errors import ArbiterError, ConfigError
from arbiter.running import Interrupted
from arbiter.text import one_line, terminal

F = TypeVar("F", bound=Callable[..., Any])


class ConfigExit(click.ClickException):
    exit_code = 2


def say(message: str = "", *, err: bool = False) -> None:
    """Print human-readable text: engine-originated parts can never reach the terminal raw.

    Output that cannot be written (a closed pipe, `| head`) is dropped: what it reports
    is already stored, and a reader going away must not stop a run or lose a result."""
    emit(terminal(message), err=err)


def emit(text: str, *, err: bool = False) -> None:
    """Write text that is safe as it is (JSON), dropping it if the output is gone."""
    try:
        click.echo(text, err=err)
    except OSError:
        from arbiter.views.report import discard

        discard(sys.stderr if err else sys.stdout)


def write_whole(path: str, pieces: Iterable[str], kinds: tuple[bytes, ...]) -> None:
    """Write a file whole or not at all; a file already there is replaced only if it
    starts like one of `kinds` (never a store, a records file or a tournament file given
    by mistake); a device, pipe or FIFO is streamed to."""
    from arbiter.cli.outfile import write_lines

    write_lines(path, pieces, kinds=kinds)


def warn(line: str) -> None:
    """A line on stderr, for the functions below the command line that report as they go."""
    say(line, err=True)


E = TypeVar("E", bound=BaseException)


def first_leaf(group: BaseExceptionGroup[E]) -> E:
    """The first exception of a (nested) group: the one to report."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc  # type: ignore[return-value]


def _interrupted(exc: KeyboardInterrupt) -> None:
    say("Interrupted; engines were stopped.", err=True)
    sys.exit(128 + (exc.signum if isinstance(exc, Interrupted) else 2))


def _out_of_memory(exc: BaseException) -> str:
    """The harness's own memory ran out: say so, and the limit, never blame an engine.

    Dask's client raises MemoryError for things that are not memory (numpy asked to
    size a buffer from a handshake that never came): one raised in `distributed` is
    named as the client's failure, not as the harness's memory.
    """
    import resource

    dask = _raised_in(exc, "distributed")
    if dask is not None:
        return (
            f"Dask's client failed with MemoryError ({exc or 'no message'}) at {dask};"
            " the harness did not run out of memory: check the scheduler address and"
            " that the driver and the workers run the same distributed version; what"
            " was stored is intact"
        )
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    limit = (
        "" if soft == resource.RLIM_INFINITY else f" (its limit, ulimit -v, is {soft // 1024} kB)"
    )
    return (
        f"the harness itself ran out of memory{limit}; raise the limit or lower"
        " --concurrency; what was stored is intact"
    )


def _raised_in(exc: BaseException, package: str) -> str | None:
    """Where in `package` the exception passed (its innermost frame there), if it did."""
    where = None
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module == package or module.startswith(package + "."):
            where = f"{module}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def handle_errors(func: F) -> F:
    """Turn the harness's errors into one clear line and the documented exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ConfigError as exc:
            raise ConfigExit(one_line(str(exc))) from exc
        except ArbiterError as exc:
            raise click.ClickException(one_line(str(exc))) from exc
        except KeyboardInterrupt as exc:
            _interrupted(exc)
        except MemoryError as exc:
            raise click.ClickException(_out_of_memory(exc)) from exc
        except BaseExceptionGroup as group:
            stop = group.subgroup(KeyboardInterrupt)
            if stop is not None:
                _interrupted(first_leaf(stop))
            memory = group.subgroup(MemoryError)
            if memory is not None:
                raise click.ClickException(_out_of_memory(first_leaf(memory))) from group
            ours = group.subgroup(ArbiterError)
            if ours is None:
                raise
            first = first_leaf(ours)
            if isinstance(first, ConfigError):
                raise ConfigExit(one_line(str(first))) from group
            raise click.ClickException(one_line(str(first))) from group

    return wrapper  # type: ignore[return-value]


# Click 8.2 shows a group's help, when it is called with nothing, by a UsageError.
_SHOWS_HELP: tuple[type[click.UsageError], ...] = tuple(
    getattr(click.exceptions, name)
    for name in ["NoArgsIsHelpError"]
    if hasattr(click.exceptions, name)
)


class OneLineUsage(click.Group):
    """The root command: a bad command-line value is one line on stderr (what was wrong,
    which option, where the help is) and exit status 2, as a configuration error is;
    Click's own report repeats the usage block above it. Every subcommand's parsing runs
    inside the root's `make_context` or `invoke`, so this one place covers them all."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with _usage_in_one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _usage_in_one_line():
            return super().invoke(ctx)


@contextlib.contextmanager
def _usage_in_one_line() -> Iterator[None]:
    try:
        yield
    except _SHOWS_HELP:
        raise  # a group called with nothing shows its help, as Click does
    except click.UsageError as exc:
        raise _one_line_usage(exc) from exc


def _one_line_usage(exc: click.UsageError) -> ConfigExit:
    """A usage error as one line: Click's message, and the help that says how to fix it."""
    message = exc.format_message().rstrip(".")
    if exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
    return ConfigExit(one_line(message))
