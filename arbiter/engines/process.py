"""Engine processes: start, handshake, capped stderr, and shutdown that leaves nothing behind.

Each engine runs in its own process group (a new session), so the whole group can be
signalled at once: an engine that forks helpers cannot leave them running. When the
group leader exits, the rest of its group is killed at once, which also closes any pipe
a stray child kept open, so a reader waiting on stdout sees EOF instead of hanging.
"""

from __future__ import annotations

import logging
import os
import resource
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

import trio

from arbiter import text
from arbiter.engines import cputime, reaper, sandbox
from arbiter.engines.dialect import Dialect
from arbiter.engines.sandbox import Limits
from arbiter.errors import (
    EngineError,
    EngineFailure,
    EngineStartError,
    EngineTerminatedError,
    ProtocolError,
)
from arbiter.protocol.session import EngineSession, PipeStream
from arbiter.rules.clock import ClockMode, TimeControl

log = logging.getLogger(__name__)

STDERR_CAP = 64 * 1024
INFO_CAP = 256  # characters kept of an engine's name and version answers (labels only)


@dataclass(frozen=True)
class Deadlines:
    """Seconds allowed for each kind of non-move exchange with an engine."""

    handshake: float = 30.0
    command: float = 10.0
    quit: float = 2.0
    term: float = 2.0


@dataclass(frozen=True)
class EngineSpec:
    """How to start one engine. `argv` is run without a shell."""

    argv: tuple[str, ...]
    name: str | None = None  # display name; defaults to the engine's `name` reply
    cwd: str | None = None
    env: Mapping[str, str] | None = None  # added to the harness's environment
    options: tuple[str, ...] = ()  # whole command lines sent after the handshake
    tc: TimeControl | None = None  # this engine's own time control, if it has one
    dialect: Dialect = field(default_factory=Dialect)
    sandbox: bool = False  # run under bubblewrap (see arbiter.engines.sandbox)
    limits: Limits = field(default_factory=Limits)
    hidden: tuple[str, ...] = ()  # host files a sandboxed engine must not read
    read: tuple[str, ...] = ()  # host paths a sandboxed engine may read besides its own
    cwd_given: bool = False  # cwd is the definition's choice (a sandboxed engine starts there)
    bundled: bool = False  # one of the bots installed with arbiter (see `localized`)
    # Its own deadlines, in seconds, when its definition sets them (engines that load
    # large weights): the start-up handshake, and every other non-move command.
    start_timeout: float | None = None
    command_timeout: float | None = None
    # What its clock charges: its definition's `clock`, else the competition's (None:
    # not said, wall time).
    clock: ClockMode | None = None
    threads: int = 1  # cores it may use: its share under affinity (definition's `threads`)
    cores: tuple[int, ...] = ()  # the cores it is pinned to (affinity); (): not pinned

    @classmethod
    def from_command(cls, command: str | Sequence[str], **kwargs: object) -> EngineSpec:
        argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
        if not argv:
            raise ValueError("empty engine command")
        return cls(argv=argv, **kwargs)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        """A name before the engine has said its own: the program, or the script an
        interpreter runs (`python3 my_bot.py` is `my_bot`)."""
        if self.name:
            return self.name
        program = os.path.basename(self.argv[0])
        if program.startswith(("python", "pypy", "node", "ruby", "perl")):
            args = self.argv[1:]
            for i, arg in enumerate(args):
                if arg == "-m" and i + 1 < len(args):
                    return args[i + 1]
                if arg.endswith((".py", ".js", ".rb", ".pl")):
                    return os.path.splitext(os.path.basename(arg))[0]
        return program


class StderrLog:
    """A capped tail of an engine's stderr: what is kept never exceeds `cap` bytes."""

    def __init__(self, cap: int = STDERR_CAP) -> None:
        self.cap = cap
        self._data = bytearray()
        self.total = 0

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._data += chunk
        if len(self._data) > self.cap:
            del self._data[: len(self._data) - self.cap]

    def tail(self, limit: int = 2000) -> str:
        text = bytes(self._data[-limit:]).decode("utf-8", errors="replace")
        return text if self.total <= limit else "..." + text


@dataclass
class EngineInfo:
    name: str = ""
    version: str = ""
    protocol_version: str = ""
    commands: frozenset[str] = field(default_factory=frozenset)


class Engine:
    """A running engine process and its protocol session."""

    def __init__(
        self,
        spec: EngineSpec,
        process: trio.Process,
        deadlines: Deadlines,
        confinement: sandbox.Confinement,
        meter: cputime.CpuMeter | None = None,
    ) -> None:
        self.spec = spec
        self.process = process
        self.confinement = confinement
        self.meter = meter
        self.deadlines = deadlines
        self.stderr = StderrLog()
        self.info = EngineInfo()
        self.dialect = spec.dialect
        self.name = spec.label
        self.stderr_closed = trio.Event()
        self._close_requested = trio.Event()
        self._closed = trio.Event()
        stdin, stdout = process.stdin, process.stdout
        assert isinstance(stdin, trio.lowlevel.FdStream)
        assert isinstance(stdout, trio.lowlevel.FdStream)
        pipes = PipeStream(stdin.fileno(), stdout.fileno())
        self.pipes = pipes
        self.session = EngineSession(pipes, pipes, self.name, on_terminated=self._terminated_error)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def _terminated_error(self, message: str) -> EngineTerminatedError:
        code = self.process.returncode
        if code is not None:
            message += f"; {self.exit_words(code)}"
        return EngineTerminatedError(
            self.name, message, returncode=code, stderr_tail=self.stderr.tail()
        )

    def supports(self, command: str) -> bool:
        return command in self.info.commands

    def cpu_seconds(self) -> float:
        """CPU seconds the engine's processes have used (0.0 where not measured: only an
        engine on a CPU clock has a meter)."""
        return 0.0 if self.meter is None else self.meter.seconds()

    def exit_words(self, code: int) -> str:
        """How the engine ended, in words, seen through the sandbox if there is one."""
        died = sandbox.sandbox_death(code) if self.confinement.sandboxed else None
        return died or exit_status(code)

    def refusal(self) -> str:
        """For a sandboxed engine that failed to start: the path its stderr says it could
        not open, and how to let it (the `read` key, or permissions), else ""."""
        view = self.confinement.view
        return sandbox.refusal(self.stderr.tail(), view.start) if view is not None else ""

    def breach(self) -> sandbox.Breach | None:
        """The resource limit this engine is known to have hit, if any."""
        return self.confinement.breach(self.process.returncode)

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit status once the process has exited, waiting at most `timeout`.

        EOF on stdout usually arrives a moment before the exit can be reaped; a crash
        report without the exit status would lose the most useful evidence.
        """
        with trio.move_on_after(timeout):
            await self.process.wait()
        return self.process.returncode

    async def handshake(self) -> EngineInfo:
        """Learn name, version and commands, all within the handshake deadline."""
        self.info = await handshake(
            self.session, self.deadlines, self.spec.options, named=self.spec.name is not None
        )
        self.name = self.session.name
        return self.info

    async def _own(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The one task that owns the process, from start to reaping.

        It drains stderr and watches for the exit while the engine lives; when the engine
        is closed, or the nursery it lives in is cancelled, it shuts the group down
        (quit, SIGTERM, SIGKILL, with stderr still drained), releases the pipes and kills
        what the engine left behind. Nothing else starts or ends its helpers.
        """
        try:
            async with trio.open_nursery() as helpers:
                helpers.start_soon(self._drain_stderr)
                helpers.start_soon(self._watch_exit)
                task_status.started()
                try:
                    await self._close_requested.wait()
                finally:
                    with trio.CancelScope(shield=True):
                        await self.shutdown()
                        # Its last words may still be in the pipe when its exit is seen
                        # (an engine that dies at once is reaped before shutdown starts):
                        # read them to the end, which the group's SIGKILL makes prompt
                        # unless an escaped process holds the pipe.
                        with trio.move_on_after(self.deadlines.term):
                            await self.stderr_closed.wait()
                    helpers.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                    if stream is not None:
                        await stream.aclose()  # release the pipes now, not at collection
                if self.process.returncode is not None:
                    reaper.reaped(self.process.pid)
                # Kill whatever is left in its cgroups; the folders can go only once the
                # kernel has finished those processes, which it does not announce on v1.
                for _ in range(int(self.deadlines.term * 100)):
                    if self.confinement.release() and (self.meter is None or self.meter.release()):
                        break
                    await trio.sleep(0.01)
                reaper.reap_orphans()  # whatever the engine started and left behind
                self._closed.set()

    async def aclose(self) -> None:
        """Close the engine and wait until its owner has shut it down, even inside a
        cancelled scope."""
        with trio.CancelScope(shield=True):
            self._close_requested.set()
            await self._closed.wait()

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        try:
            while chunk := await stream.receive_some(65536):
                self.stderr.append(bytes(chunk))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        self.stderr_closed.set()

    async def settle_stderr(self, timeout: float) -> None:
        """Let the stderr drain catch up before its tail is taken as evidence.

        After an exit, that means reading to EOF (bounded by `timeout`, since a child
        may hold the pipe open); otherwise, letting the drain task read what is ready.
        """
        if self.process.returncode is not None:
            with trio.move_on_after(timeout):
                await self.stderr_closed.wait()
        else:
            for _ in range(3):
                await trio.lowlevel.checkpoint()

    async def _watch_exit(self) -> None:
        await self.process.wait()
        # The leader is gone: take the rest of its group with it so that pipes a child
        # inherited close, and let readers see EOF at once even if a process that left
        # the group still holds stdout open (it is killed when the engine is closed).
        _kill_group(self.process.pid, signal.SIGKILL)
        self.pipes.writer_exited()

    async def shutdown(self) -> None:
        """`quit`, then SIGTERM to the group, then SIGKILL; returns once the leader is reaped.

        It waits on the process itself rather than on the watcher task, because shutdown
        also runs after the engine's own tasks were cancelled.
        """
        d = self.deadlines
        process = self.process
        if process.returncode is None and self.session.broken is None:
            with trio.move_on_after(d.quit):
                with suppress(EngineError):
                    await self.session.command("quit", timeout=d.quit)
        if process.returncode is None:
            with trio.move_on_after(d.quit):
                assert process.stdin is not None
                await process.stdin.aclose()
                await process.wait()
        if process.returncode is None:
            _kill_group(process.pid, signal.SIGTERM)
            with trio.move_on_after(d.term):
                await process.wait()
        if process.returncode is None:
            _kill_group(process.pid, signal.SIGKILL)
            # SIGKILL cannot be ignored, but a process stuck in the kernel can take a moment.
            with trio.move_on_after(d.term):
                await process.wait()
        _kill_group(process.pid, signal.SIGKILL)
        if log.isEnabledFor(logging.DEBUG):
            # For whoever debugs an engine: its last words, capped like the evidence.
            log.debug(
                "engine %s (pid %d) closed, %s; the end of its stderr:\n%s",
                self.name,
                process.pid,
                exit_status(process.returncode or 0),
                self.stderr.tail() or "(nothing)",
            )

    def kill(self) -> None:
        """Kill the whole group now; the context manager still reaps it."""
        _kill_group(self.process.pid, signal.SIGKILL)


async def handshake(
    session: EngineSession, deadlines: Deadlines, options: Sequence[str], *, named: bool
) -> EngineInfo:
    """The handshake over any session: name, version and commands within the handshake
    deadline, then the definition's option lines. Unless the definition `named` it, the
    session takes the name the engine gives."""
    replies = await session.pipeline(
        [("protocol_version",), ("name",), ("version",), ("list_commands",)],
        timeout=deadlines.handshake,
    )
    info = EngineInfo(
        protocol_version=replies[0].strip()[:INFO_CAP],
        name=replies[1].strip()[:INFO_CAP],
        version=replies[2].strip()[:INFO_CAP],
        commands=frozenset(line.strip() for line in replies[3].splitlines() if line.strip()),
    )
    if not named and info.name:
        session.name = text.name(info.name)
    if info.protocol_version != "2":
        raise ProtocolError(
            session.name,
            f"answered protocol_version with {info.protocol_version[:40]!r}; this"
            " referee speaks protocol version 2 (GTP v2): answer 2",
        )
    for line in options:
        words = line.split()
        try:
            await session.command(words[0], *words[1:], timeout=deadlines.command)
        except EngineFailure as exc:
            raise EngineFailure(session.name, f"option {line!r}", exc.message) from exc
    return info


def harness_limit(exc: OSError) -> str | None:
    """When starting a process failed on a limit of the harness's own (not anything the
    engine did), the limit in words and how to raise it; else None."""
    import errno

    if exc.errno == errno.EMFILE:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return (
            f"the harness itself has too many open files (its limit, ulimit -n, is"
            f" {soft}); raise it (e.g. ulimit -n 4096) or lower --concurrency"
        )
    if exc.errno == errno.ENFILE:
        return "the system's table of open files is full; close programs or raise fs.file-max"
    if exc.errno in (errno.EAGAIN, errno.ENOMEM):
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        limit = "" if soft == resource.RLIM_INFINITY else f" (ulimit -v is {soft // 1024} kB)"
        return (
            f"the harness itself could not start a process: {exc.strerror}{limit}; raise"
            " its memory or process limits, or lower --concurrency"
        )
    return None


def exit_status(code: int) -> str:
    """How a process ended, in words: `exit status 1` or `killed by signal 9`."""
    return f"exit status {code}" if code >= 0 else f"killed by signal {-code}"


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _spawn(
    spec: EngineSpec,
    confinement: sandbox.Confinement,
    env: dict[str, str] | None,
    meter: cputime.CgroupMeter | None = None,
) -> trio.Process:
    """Start the process in its own session; start failures become EngineStartError."""
    preexec = confinement.preexec()
    cores = spec.cores
    if meter is not None or cores:
        confined = preexec

        def preexec() -> None:
            if meter is not None:
                meter.enter()  # first: whatever the set-up costs is the engine's
            if cores:
                os.sched_setaffinity(0, cores)  # its children and threads inherit it
            if confined is not None:
                confined()

    try:
        with reaper.spawning():
            process = await trio.lowlevel.open_process(
                confinement.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=spec.cwd,
                env=env,
                preexec_fn=preexec,
                pass_fds=confinement.pass_fds,
            )
            reaper.started(process.pid)
        confinement.started()
    except FileNotFoundError as exc:
        raise EngineStartError(
            spec.label,
            f"cannot start {spec.argv[0]!r}: no such file or directory"
            + (f" (relative to {spec.cwd})" if spec.cwd else "")
            + "; check the path, or give the interpreter first, e.g. 'python3 bot.py'",
        ) from exc
    except PermissionError as exc:
        target = os.path.join(spec.cwd or ".", spec.argv[0])
        if os.path.isdir(target):  # noqa: ASYNC240 - one stat, on an error path only
            raise EngineStartError(
                spec.label, f"cannot start {spec.argv[0]!r}: it is a folder, not a program"
            ) from exc
        raise EngineStartError(
            spec.label,
            f"cannot start {spec.argv[0]!r}: permission denied; make it executable"
            " (chmod +x) or give the interpreter first",
        ) from exc
    except OSError as exc:
        own = harness_limit(exc)
        if own is not None:
            raise EngineStartError(spec.label, f"cannot start {spec.argv[0]!r}: {own}") from exc
        raise EngineStartError(spec.label, f"cannot start {spec.argv[0]!r}: {exc}") from exc
    except subprocess.SubprocessError as exc:  # the set-up between fork and exec failed
        raise EngineStartError(
            spec.label,
            f"cannot apply its resource limits, enter its cgroup or set up its sandbox: {exc}",
        ) from exc
    return process


BOTS_FOLDER = Path(__file__).resolve().parent.parent / "bots"


def localized(spec: EngineSpec) -> EngineSpec:
    """A bundled bot as this machine has it: its interpreter and the installed bots'
    folder. A Dask worker's may differ from the paths the client resolved the bot to."""
    if not spec.bundled:
        return spec
    return replace(spec, argv=(sys.executable, *spec.argv[1:]), cwd=str(BOTS_FOLDER))


def with_clock(spec: EngineSpec, clock: ClockMode) -> EngineSpec:
    """The engine with its clock decided: its definition's own, else the competition's
    `clock` (the one place that fallback is made)."""
    return spec if spec.clock is not None else replace(spec, clock=clock)


def spec_deadlines(spec: EngineSpec, deadlines: Deadlines) -> Deadlines:
    """The run's deadlines, with the ones the engine's definition sets instead."""
    if spec.start_timeout is not None:
        deadlines = replace(deadlines, handshake=spec.start_timeout)
    if spec.command_timeout is not None:
        deadlines = replace(deadlines, command=spec.command_timeout)
    return deadlines


async def start_engine(
    spec: EngineSpec,
    nursery: trio.Nursery,
    deadlines: Deadlines | None = None,
    *,
    handshake: bool = True,
) -> Engine:
    """Start an engine owned by a task in `nursery` (see `Engine._own`); close it with
    `aclose()`, or cancel the nursery.

    Raises EngineStartError when the program cannot be started, and the session's
    errors when the handshake fails (the process is gone by then).
    """
    deadlines = spec_deadlines(spec, deadlines or Deadlines())
    spec = localized(spec)
    try:
        confinement = sandbox.confine(
            spec.argv,
            sandbox=spec.sandbox,
            limits=spec.limits,
            hidden=spec.hidden,
            cwd=spec.cwd,
            cwd_given=spec.cwd_given,
            read=spec.read,
        )
    except OSError as exc:
        raise EngineStartError(spec.label, f"cannot be confined here: {exc}") from exc
    env = None
    if spec.sandbox or spec.env or reaper.engine_env():
        # A sandboxed engine gets no secrets through its environment either.
        env = sandbox.environment(os.environ) if spec.sandbox else dict(os.environ)
        env.update(spec.env or {})
        env.update(reaper.engine_env())
    group = cputime.make_cgroup_meter() if spec.clock is ClockMode.CPU else None
    try:
        process = await _spawn(spec, confinement, env, group)
    except BaseException:
        confinement.release()
        if group is not None:
            group.release()
        raise
    meter: cputime.CpuMeter | None = group
    if group is not None and not group.holds(process.pid):
        group.release()  # the host would not let it in: its CPU is read from /proc
        meter = None
    if spec.clock is ClockMode.CPU and meter is None:
        meter = cputime.TreeMeter(process.pid)
    engine = Engine(spec, process, deadlines, confinement, meter)
    await nursery.start(engine._own)
    if handshake:
        try:
            await engine.handshake()
        except EngineTerminatedError as exc:
            await engine.aclose()
            # The exit status and the last of stderr are known only now: a new error
            # carries them (the caught one stays as it was, as the cause).
            code = process.returncode if exc.returncode is None else exc.returncode
            detail = exc.detail
            if exc.returncode is None and code is not None:
                detail = f"{detail}; {engine.exit_words(code)}"
            detail += engine.refusal()
            raise EngineTerminatedError(
                exc.engine, detail, returncode=code, stderr_tail=engine.stderr.tail()
            ) from exc
        except EngineError as exc:
            await engine.aclose()
            # Whatever went wrong, what it said on stderr is the best clue: a new error of
            # the same kind carries it.
            evidence = (
                EngineFailure(exc.engine, exc.command, exc.message)
                if isinstance(exc, EngineFailure)
                else type(exc)(exc.engine, exc.detail + engine.refusal())
            )
            evidence.stderr_tail = engine.stderr.tail()
            raise evidence from exc
        except BaseException:
            await engine.aclose()
            raise
    return engine


@asynccontextmanager
async def open_engine(
    spec: EngineSpec, deadlines: Deadlines | None = None, *, handshake: bool = True
) -> AsyncIterator[Engine]:
    """An engine for the duration of a block; its process group is gone afterwards.

    Errors from start-up or from the block are re-raised as they are, not wrapped in an
    exception group by the helper nursery, so callers can catch EngineError directly.
    """
    failure: BaseException | None = None
    async with trio.open_nursery() as nursery:
        try:
            engine = await start_engine(spec, nursery, deadlines, handshake=handshake)
        except BaseException as exc:
            failure = exc
        else:
            try:
                yield engine
            except BaseException as exc:
                failure = exc
            finally:
                await engine.aclose()
    if failure is not None:
        raise failure
